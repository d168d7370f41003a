// Informers over a real API server: sync, handlers, indexes, re-watch and relist.
#include "client/informer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client/testing/eventually.h"
#include "client/testing/test_server.h"

namespace kvol::client {
namespace {

using namespace std::chrono_literals;

using testing::Eventually;

api::PersistentVolumeClaim Claim(std::string ns, std::string name, std::string sc) {
  api::PersistentVolumeClaim c;
  c.metadata.namespace_ = std::move(ns);
  c.metadata.name = std::move(name);
  c.spec.access_modes = {"ReadWriteOnce"};
  c.spec.resources.requests["storage"] = api::Quantity::MustParse("1Gi");
  c.spec.storage_class_name = std::move(sc);
  return c;
}

// Records what the handlers saw.
struct Log {
  std::mutex mu;
  std::vector<std::string> lines;
  void Add(std::string s) {
    std::lock_guard lock(mu);
    lines.push_back(std::move(s));
  }
  std::vector<std::string> Get() {
    std::lock_guard lock(mu);
    return lines;
  }
  size_t Size() {
    std::lock_guard lock(mu);
    return lines.size();
  }
};

template <class T>
typename Informer<T>::Handlers Recorder(Log& log) {
  typename Informer<T>::Handlers h;
  h.on_add = [&log](const auto& o) { log.Add("add " + KeyOf(*o)); };
  h.on_update = [&log](const auto& old, const auto& now) {
    log.Add("update " + KeyOf(*now) + " " + old->metadata.resource_version + "->" +
            now->metadata.resource_version);
  };
  h.on_delete = [&log](const auto& o) { log.Add("delete " + KeyOf(*o)); };
  return h;
}

template <class T>
void Record(Informer<T>& inf, Log& log) {
  inf.AddHandlers(Recorder<T>(log));
}

class InformerTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto s = testing::TestServer::Start({.http = GetParam() == "http"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    ASSERT_TRUE(server_->local().resource<api::Namespace>().Create([] {
      api::Namespace ns;
      ns.metadata.name = "team";
      return ns;
    }()).ok());
  }
  Client& client() { return GetParam() == "http" ? server_->http() : server_->local(); }
  Resource<api::PersistentVolumeClaim>& claims() {
    return client().resource<api::PersistentVolumeClaim>();
  }

  std::unique_ptr<testing::TestServer> server_;
};

TEST_P(InformerTest, SyncsThenFollowsChanges) {
  ASSERT_TRUE(claims().Create(Claim("default", "a", "fast")).ok());
  ASSERT_TRUE(claims().Create(Claim("team", "b", "slow")).ok());

  Informer<api::PersistentVolumeClaim> inf(claims());
  Log log;
  Record(inf, log);
  inf.AddIndex("class", [](const api::PersistentVolumeClaim& c) {
    return std::vector<std::string>{c.spec.storage_class_name.value_or("")};
  });
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(10s));
  EXPECT_EQ(inf.List().size(), 2u);
  ASSERT_NE(inf.Get("team", "b"), nullptr);
  EXPECT_EQ(inf.Get("team", "b")->spec.storage_class_name, "slow");
  EXPECT_EQ(inf.Get("team", "zzz"), nullptr);
  EXPECT_EQ(inf.ByIndex("class", "fast").size(), 1u);

  auto c = claims().Create(Claim("default", "c", "fast"));
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(Eventually([&] { return inf.ByIndex("class", "fast").size() == 2; }));
  auto moved = Mutate<api::PersistentVolumeClaim>(claims(), "default", "a",
                                                  [](api::PersistentVolumeClaim& pvc) {
                                                    pvc.metadata.labels["x"] = "1";
                                                    return true;
                                                  });
  ASSERT_TRUE(moved.ok());
  ASSERT_TRUE(Eventually([&] {
    auto a = inf.Get("default", "a");
    return a && a->metadata.resource_version == moved->metadata.resource_version;
  }));
  // Delete: the protection finalizer first marks it, then removing the finalizer removes it.
  ASSERT_TRUE(claims().Delete("team", "b").ok());
  ASSERT_TRUE(Mutate<api::PersistentVolumeClaim>(claims(), "team", "b",
                                                 [](api::PersistentVolumeClaim& pvc) {
                                                   pvc.metadata.finalizers.clear();
                                                   return true;
                                                 }).ok());
  ASSERT_TRUE(Eventually([&] { return inf.Get("team", "b") == nullptr; }));
  EXPECT_TRUE(inf.ByIndex("class", "slow").empty());
  inf.Stop();

  auto lines = log.Get();
  ASSERT_GE(lines.size(), 6u);
  EXPECT_EQ(lines[0], "add default/a");
  EXPECT_EQ(lines[1], "add team/b");
  EXPECT_EQ(lines[2], "add default/c");
  EXPECT_EQ(lines[3].rfind("update default/a ", 0), 0u) << lines[3];
  EXPECT_EQ(lines[4].rfind("update team/b ", 0), 0u) << lines[4];  // deletionTimestamp set
  EXPECT_EQ(lines.back(), "delete team/b");
  EXPECT_EQ(inf.lists(), 1);
}

// WaitForSync returns only once the handlers have been given the whole first list: a
// controller's own caches, filled by its handlers, are whole when its workers start.
TEST_P(InformerTest, SyncedMeansTheHandlersHaveSeenTheList) {
  constexpr size_t kClaims = 30;
  for (size_t i = 0; i < kClaims; ++i) {
    auto made = claims().Create(Claim("default", "c" + std::to_string(i), "fast"));
    ASSERT_TRUE(made.ok()) << made.error().message;
  }
  Informer<api::PersistentVolumeClaim> inf(claims());
  std::atomic<size_t> seen{0};
  inf.AddHandlers({.on_add = [&](const auto&) {
    std::this_thread::sleep_for(2ms);  // a slow handler
    seen.fetch_add(1);
  }});
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(10s));
  EXPECT_EQ(seen.load(), kClaims);
  inf.Stop();
}

TEST_P(InformerTest, ListIsInKeyOrder) {
  for (auto [ns, name] : {std::pair{"team", "b"}, {"default", "b"}, {"team", "a-x"},
                          {"default", "a.1"}, {"team", "a"}, {"default", "a"}}) {
    ASSERT_TRUE(claims().Create(Claim(ns, name, "fast")).ok());
  }
  Informer<api::PersistentVolumeClaim> inf(claims());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(10s));
  std::vector<std::string> keys;
  for (const auto& c : inf.List()) keys.push_back(KeyOf(*c));
  EXPECT_EQ(keys, (std::vector<std::string>{"default/a", "default/a.1", "default/b", "team/a",
                                            "team/a-x", "team/b"}));
  inf.Stop();
}

TEST(KeyLessTest, OrdersAsTheKeysDo) {
  auto obj = [](std::string ns, std::string name) {
    api::PersistentVolumeClaim c;
    c.metadata.namespace_ = std::move(ns);
    c.metadata.name = std::move(name);
    return c;
  };
  // '-' and '.' sort before '/': "a-b/x" comes before "a/x", though namespace "a" is shorter.
  const std::vector<api::PersistentVolumeClaim> objs = {
      obj("a", "x"),  obj("a-b", "x"), obj("a.b", "x"), obj("a", "x-1"), obj("a", "x/"),
      obj("ab", ""),  obj("", "a"),    obj("", "a-b"),  obj("", "b"),    obj("a", "")};
  for (const auto& a : objs) {
    for (const auto& b : objs) {
      EXPECT_EQ(KeyLess(a, b), KeyOf(a) < KeyOf(b)) << KeyOf(a) << " vs " << KeyOf(b);
    }
  }
}

TEST_P(InformerTest, NamespaceAndSelectorsNarrowTheCache) {
  auto labelled = Claim("team", "l", "fast");
  labelled.metadata.labels["app"] = "db";
  ASSERT_TRUE(claims().Create(labelled).ok());
  ASSERT_TRUE(claims().Create(Claim("team", "u", "fast")).ok());
  ASSERT_TRUE(claims().Create(Claim("default", "d", "fast")).ok());
  InformerOptions o;
  o.ns = "team";
  o.label_selector = "app=db";
  Informer<api::PersistentVolumeClaim> inf(claims(), o);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(10s));
  auto all = inf.List();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0]->metadata.name, "l");
}

TEST_P(InformerTest, SharedInformersGiveEveryUserTheSameInformerEarlyOrLate) {
  using Claim_ = api::PersistentVolumeClaim;
  ASSERT_TRUE(claims().Create(Claim("default", "a", "fast")).ok());
  ASSERT_TRUE(claims().Create(Claim("team", "b", "slow")).ok());
  SharedInformers shared(client());
  Informer<Claim_>& inf = shared.Get<Claim_>();
  EXPECT_EQ(&inf, &shared.Get<Claim_>());

  Log early, late;
  InformerScope first(client(), &shared);
  EXPECT_EQ(&first.Handle<Claim_>(Recorder<Claim_>(early)), &inf);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(10s));
  {
    // Added to the running informer: the cache first, as adds, then what changes after.
    InformerScope second(client(), &shared);
    second.Handle<Claim_>(Recorder<Claim_>(late));
    EXPECT_EQ(late.Get(), (std::vector<std::string>{"add default/a", "add team/b"}));
    // An index added late covers what is cached already.
    inf.AddIndex("class", [](const Claim_& c) {
      return std::vector<std::string>{c.spec.storage_class_name.value_or("")};
    });
    EXPECT_EQ(inf.ByIndex("class", "fast").size(), 1u);
    inf.Start();  // started already: nothing happens

    ASSERT_TRUE(claims().Create(Claim("default", "c", "fast")).ok());
    ASSERT_TRUE(Eventually([&] { return late.Size() == 3 && early.Size() == 3; }));
    EXPECT_EQ(inf.ByIndex("class", "fast").size(), 2u);

    // Removed handlers hear nothing more; the others go on.
    first.Stop();
    ASSERT_TRUE(Mutate<Claim_>(claims(), "default", "a", [](Claim_& pvc) {
                  pvc.metadata.labels["x"] = "1";
                  return true;
                }).ok());
    ASSERT_TRUE(Eventually([&] { return late.Size() == 4; }));
    EXPECT_EQ(late.Get()[3].rfind("update default/a ", 0), 0u) << late.Get()[3];
  }
  EXPECT_EQ(early.Get(),
            (std::vector<std::string>{"add default/a", "add team/b", "add default/c"}));
  EXPECT_EQ(inf.lists(), 1);

  // Without shared informers a scope has its own, stopped with it.
  InformerScope alone(client(), nullptr);
  Informer<Claim_>& own = alone.Get<Claim_>();
  EXPECT_NE(&own, &inf);
  own.Start();
  ASSERT_TRUE(own.WaitForSync(10s));
  EXPECT_EQ(own.List().size(), 3u);
  alone.Stop();
  ASSERT_TRUE(claims().Create(Claim("default", "d", "fast")).ok());
  ASSERT_TRUE(Eventually([&] { return inf.Get("default", "d") != nullptr; }));
  EXPECT_EQ(own.Get("default", "d"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Transports, InformerTest, ::testing::Values("local", "http"),
                         [](const auto& info) { return info.param; });

// A resource whose watches can be made to miss events and then expire, as happens when a
// client falls behind a compaction.
template <class T>
class LossyResource final : public Resource<T> {
 public:
  explicit LossyResource(Resource<T>& real) : real_(real) {}

  // While paused, watches swallow every event; expired makes them fail with 410 Gone; close
  // ends the current watch once, as a server's watch timeout does.
  std::atomic<bool> paused{false};
  std::atomic<bool> expired{false};
  std::atomic<bool> close{false};
  std::atomic<int> watches{0};

  ApiOr<T> Create(const T& o, const WriteOptions& w) override { return real_.Create(o, w); }
  ApiOr<T> Get(std::string_view ns, std::string_view n) override { return real_.Get(ns, n); }
  ApiOr<ObjectList<T>> List(std::string_view ns, const ListOptions& o) override {
    expired = false;
    paused = false;
    return real_.List(ns, o);
  }
  ApiOr<T> Update(const T& o, const WriteOptions& w) override { return real_.Update(o, w); }
  ApiOr<T> UpdateStatus(const T& o, const WriteOptions& w) override {
    return real_.UpdateStatus(o, w);
  }
  ApiOr<T> Patch(std::string_view ns, std::string_view n, PatchType t, std::string_view p,
                 bool s) override {
    return real_.Patch(ns, n, t, p, s);
  }
  ApiOr<T> Delete(std::string_view ns, std::string_view n, const DeleteOptions& o) override {
    return real_.Delete(ns, n, o);
  }
  ApiOr<std::unique_ptr<Watcher<T>>> Watch(std::string_view ns, const ListOptions& o) override {
    ++watches;
    auto w = real_.Watch(ns, o);
    if (!w.ok()) return w;
    return std::unique_ptr<Watcher<T>>(std::make_unique<LossyWatcher>(*this, std::move(*w)));
  }

 private:
  class LossyWatcher final : public Watcher<T> {
   public:
    LossyWatcher(LossyResource& r, std::unique_ptr<Watcher<T>> w) : r_(r), w_(std::move(w)) {}
    ApiOr<std::vector<WatchEvent<T>>> Next(std::chrono::milliseconds timeout) override {
      if (r_.expired) return ApiError{410, "Expired", "too old resource version", {}, {}, {}, {}};
      if (r_.close.exchange(false)) return WatchClosed("watch timeout");
      auto evs = w_->Next(std::min(timeout, std::chrono::milliseconds(20)));
      if (evs.ok() && r_.paused) return std::vector<WatchEvent<T>>{};
      return evs;
    }
    void Close() override { w_->Close(); }

   private:
    LossyResource& r_;
    std::unique_ptr<Watcher<T>> w_;
  };

  Resource<T>& real_;
};

TEST(InformerRelistTest, RelistAfterGoneTurnsMissedChangesIntoNotifications) {
  auto s = testing::TestServer::Start({.http = false});
  ASSERT_TRUE(s.ok());
  auto& real = (*s)->local().resource<api::ConfigMap>();
  auto cm = [](std::string name) {
    api::ConfigMap c;
    c.metadata.namespace_ = "default";
    c.metadata.name = std::move(name);
    return c;
  };
  ASSERT_TRUE(real.Create(cm("keep")).ok());
  ASSERT_TRUE(real.Create(cm("drop")).ok());
  ASSERT_TRUE(real.Create(cm("change")).ok());

  LossyResource<api::ConfigMap> lossy(real);
  Informer<api::ConfigMap> inf(lossy);
  Log log;
  Record(inf, log);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(10s));
  ASSERT_TRUE(Eventually([&] { return lossy.watches.load() >= 1; }));
  ASSERT_EQ(log.Size(), 3u);

  lossy.paused = true;
  ASSERT_TRUE(real.Delete("default", "drop").ok());
  ASSERT_TRUE(real.Create(cm("new")).ok());
  ASSERT_TRUE(Mutate<api::ConfigMap>(real, "default", "change", [](api::ConfigMap& c) {
                c.data["k"] = "v";
                return true;
              }).ok());
  std::this_thread::sleep_for(50ms);  // the paused watch swallows these
  EXPECT_NE(inf.Get("default", "drop"), nullptr);
  lossy.expired = true;

  ASSERT_TRUE(Eventually([&] { return inf.lists() == 2 && log.Size() >= 6; }));
  auto lines = log.Get();
  std::vector<std::string> after(lines.begin() + 3, lines.end());
  std::sort(after.begin(), after.end());
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0], "add default/new");
  EXPECT_EQ(after[1], "delete default/drop");
  EXPECT_EQ(after[2].rfind("update default/change ", 0), 0u) << after[2];
  EXPECT_EQ(inf.Get("default", "drop"), nullptr);
  EXPECT_EQ(inf.Get("default", "change")->data.at("k"), "v");
  inf.Stop();
}

TEST(InformerRelistTest, AnEndedWatchResumesWithoutRelisting) {
  auto s = testing::TestServer::Start({.http = false});
  ASSERT_TRUE(s.ok());
  auto& real = (*s)->local().resource<api::ConfigMap>();
  LossyResource<api::ConfigMap> lossy(real);
  Informer<api::ConfigMap> inf(lossy);
  Log log;
  Record(inf, log);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(10s));
  ASSERT_TRUE(Eventually([&] { return lossy.watches.load() == 1; }));
  lossy.close = true;
  ASSERT_TRUE(Eventually([&] { return lossy.watches.load() == 2; }));
  api::ConfigMap c;
  c.metadata.namespace_ = "default";
  c.metadata.name = "later";
  ASSERT_TRUE(real.Create(c).ok());
  ASSERT_TRUE(Eventually([&] { return inf.Get("default", "later") != nullptr; }));
  EXPECT_EQ(inf.lists(), 1);
  EXPECT_EQ(log.Get(), std::vector<std::string>{"add default/later"});
  inf.Stop();
}

}  // namespace
}  // namespace kvol::client
