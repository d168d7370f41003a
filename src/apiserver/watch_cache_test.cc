// The watch cache over a real SQLite store: what a writer primes is what the cache keeps, taken
// once, and an unprimed value is parsed.
#include "apiserver/watch_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "store/testing/backends.h"

namespace kvol::apiserver {
namespace {

using namespace std::chrono_literals;

class WatchCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::testing::OpenBackend("sqlite");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    // The indexer labels each object with how it was made, and counts its calls.
    cache_ = std::make_unique<WatchCache>(*store_, "/t/", [this](const store::KeyValue& kv) {
      ++parsed_;
      CachedObject c;
      c.name = kv.key.substr(3);
      c.json = kv.value;
      c.rev = kv.mod_revision;
      c.labels["made"] = "parsed";
      return StatusOr<CachedObject>(std::move(c));
    });
    ASSERT_TRUE(cache_->Start().ok());
    ASSERT_TRUE(cache_->primable());
  }
  void TearDown() override {
    cache_.reset();
    store_.reset();
  }

  // The cached object named `name` once the cache has caught up with revision `rev`.
  CachedPtr Cached(const std::string& name, store::Revision rev) {
    auto list = cache_->List(Filter{}, rev, 5s);
    EXPECT_TRUE(list.ok()) << list.status().ToString();
    if (!list.ok()) return nullptr;
    for (const auto& o : *list) {
      if (o->name == name) return o;
    }
    return nullptr;
  }

  static CachedObject Primed(const std::string& name) {
    CachedObject c;
    c.name = name;
    c.labels["made"] = "primed";
    return c;
  }

  std::unique_ptr<store::Store> store_;
  std::unique_ptr<WatchCache> cache_;
  std::atomic<int> parsed_{0};
};

TEST_F(WatchCacheTest, APrimedValueIsTakenOnceInsteadOfParsed) {
  store::Value v = store::MakeValue("{}");
  cache_->Prime(v, Primed("a"));
  ASSERT_NE(v->primed, nullptr);
  auto rev = store_->Create("/t/a", v);
  ASSERT_TRUE(rev.ok());
  CachedPtr a = Cached("a", *rev);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->labels.at("made"), "primed");
  // What the store knows the cache fills in; the hand-off is gone from the value.
  EXPECT_EQ(a->rev, *rev);
  EXPECT_EQ(a->json, v);
  EXPECT_EQ(v->primed, nullptr);
  EXPECT_EQ(parsed_.load(), 0);
}

// A watch served without a thread learns of news from its notify function: at once for what
// is pending when it is set, then for each matching event, and at Close; never for events its
// filter does not match.
TEST_F(WatchCacheTest, NotifySaysWhenNextHasSomething) {
  auto rev0 = store_->Create("/t/n0", store::MakeValue("{}"));
  ASSERT_TRUE(rev0.ok());
  ASSERT_NE(Cached("n0", *rev0), nullptr);
  Filter f;
  f.labels = api::labels::Selector::Everything();
  auto w = cache_->Watch(f, 0);  // begins with ADDED for n0
  ASSERT_TRUE(w.ok());
  std::atomic<int> wakes{0};
  (*w)->SetNotify([&] { ++wakes; });
  EXPECT_EQ(wakes.load(), 1);  // n0 is pending
  auto first = (*w)->Next(0ms);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->size(), 1u);

  auto rev = store_->Create("/t/n1", store::MakeValue("{}"));
  ASSERT_TRUE(rev.ok());
  for (int i = 0; i < 500 && wakes.load() < 2; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(wakes.load(), 2);
  auto second = (*w)->Next(0ms);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ((*second)[0].object->name, "n1");
  auto none = (*w)->Next(0ms);  // nothing more, and no waiting for it
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  // A watcher on another namespace is not woken by n2.
  Filter other;
  other.ns = "elsewhere";
  auto quiet = cache_->Watch(other, *rev);
  ASSERT_TRUE(quiet.ok());
  std::atomic<int> quiet_wakes{0};
  (*quiet)->SetNotify([&] { ++quiet_wakes; });
  auto rev2 = store_->Create("/t/n2", store::MakeValue("{}"));
  ASSERT_TRUE(rev2.ok());
  ASSERT_NE(Cached("n2", *rev2), nullptr);
  for (int i = 0; i < 500 && wakes.load() < 3; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(wakes.load(), 3);
  EXPECT_EQ(quiet_wakes.load(), 0);

  (*w)->Close();
  EXPECT_EQ(wakes.load(), 4);
  EXPECT_FALSE((*w)->Next(0ms).ok());
}

TEST_F(WatchCacheTest, AnUnprimedValueIsParsed) {
  auto rev = store_->Create("/t/b", store::MakeValue("{}"));
  ASSERT_TRUE(rev.ok());
  CachedPtr b = Cached("b", *rev);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->labels.at("made"), "parsed");
  EXPECT_EQ(parsed_.load(), 1);
}

TEST_F(WatchCacheTest, UnprimeDropsTheHandOff) {
  // A write that fails leaves nothing behind on its value.
  ASSERT_TRUE(store_->Create("/t/c", store::MakeValue("{}")).ok());
  store::Value v = store::MakeValue("{}");
  cache_->Prime(v, Primed("c"));
  auto again = store_->Create("/t/c", v);
  ASSERT_FALSE(again.ok());
  cache_->Unprime(v);
  EXPECT_EQ(v->primed, nullptr);
}

TEST_F(WatchCacheTest, ARelistTakesWhatWasPrimed) {
  // Values written while no cache follows the store are picked up by the next cache's list.
  cache_.reset();
  store::Value v = store::MakeValue("{}");
  WatchCache other(*store_, "/t/", [](const store::KeyValue&) {
    return StatusOr<CachedObject>(Status(StatusCode::kUnknown, "not parsed"));
  });
  other.Prime(v, Primed("d"));
  auto rev = store_->Create("/t/d", v);
  ASSERT_TRUE(rev.ok());
  ASSERT_TRUE(other.Start().ok());
  auto list = other.List(Filter{}, *rev, 5s);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0]->labels.at("made"), "primed");
  EXPECT_EQ(v->primed, nullptr);
}

TEST_F(WatchCacheTest, FollowsCreatesUpdatesAndDeletesInKeyOrder) {
  // Random writes over a few keys (deleted and made again), half of them before a cache starts
  // (its list) and half after (its events): the cache lists what the store holds, in key order.
  cache_.reset();
  std::mt19937 rng(11);
  std::map<std::string, store::Revision> model;  // name -> revision of its latest write
  store::Revision rev = 0;
  auto write = [&] {
    const std::string name = "k" + std::to_string(rng() % 40);
    const std::string key = "/t/" + name;
    auto it = model.find(name);
    if (it == model.end()) {
      auto r = store_->Create(key, store::MakeValue("{}"));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      model[name] = rev = *r;
    } else if (rng() % 3 == 0) {
      auto r = store_->Delete(key, it->second);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      rev = *r;
      model.erase(it);
    } else {
      auto r = store_->Update(key, store::MakeValue("{}"), it->second);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      it->second = rev = *r;
    }
  };
  for (int i = 0; i < 500; ++i) write();
  WatchCache other(*store_, "/t/", [](const store::KeyValue& kv) {
    CachedObject c;
    c.name = kv.key.substr(3);
    c.json = kv.value;
    c.rev = kv.mod_revision;
    return StatusOr<CachedObject>(std::move(c));
  });
  ASSERT_TRUE(other.Start().ok());
  for (int i = 0; i < 2000; ++i) write();
  auto list = other.List(Filter{}, rev, 5s);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  std::vector<std::pair<std::string, store::Revision>> got, want(model.begin(), model.end());
  for (const auto& o : *list) got.emplace_back(o->name, o->rev);
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace kvol::apiserver
