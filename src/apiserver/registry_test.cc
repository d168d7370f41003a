// Registry semantics on a real SQLite store: what Kubernetes' API server does on create, update,
// patch, delete, list and watch, checked through the typed and JSON entry points.
#include "apiserver/registry.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <regex>
#include <set>
#include <thread>

#include "apiserver/api.h"
#include "os/testing/fake_clock.h"
#include "store/sqlite_store.h"
#include "store/testing/backends.h"

namespace kvol::apiserver {
namespace {

using api::Json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

// A store in which another writer updates `race_key` (rewriting its value) just before a
// WriteMany is made: a write prepared against the version read before fails at the store.
class RacingStore final : public store::testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  std::vector<StatusOr<store::Revision>> WriteMany(std::vector<store::Write> w) override {
    if (!race_key.empty()) {
      auto kv = inner_->Get(race_key);
      raced = kv.ok() && inner_->Update(race_key, kv->value, kv->mod_revision).ok();
      race_key.clear();
    }
    return inner_->WriteMany(std::move(w));
  }
  // With `lag_quotas` set, the watch of ResourceQuotas hands over its events late: the quota
  // cache stays behind the store for a while after each quota write.
  StatusOr<store::WatchPtr> Watch(std::string_view prefix, store::Revision after) override {
    auto w = inner_->Watch(prefix, after);
    if (!w.ok() || prefix.find("/resourcequotas/") == std::string_view::npos) return w;
    return store::WatchPtr(std::make_unique<LaggingWatch>(std::move(*w), lag_quotas));
  }
  std::string race_key;
  bool raced = false;
  std::atomic<bool> lag_quotas{false};

 private:
  class LaggingWatch final : public store::Watch {
   public:
    LaggingWatch(store::WatchPtr inner, const std::atomic<bool>& lag)
        : inner_(std::move(inner)), lag_(lag) {}
    StatusOr<std::vector<store::Event>> Next(std::chrono::milliseconds timeout) override {
      auto evs = inner_->Next(timeout);
      if (evs.ok() && !evs->empty() && lag_) std::this_thread::sleep_for(300ms);
      return evs;
    }
    void Close() override { inner_->Close(); }
    store::Revision Progress() override { return inner_->Progress(); }
    void RequestProgress() override { inner_->RequestProgress(); }

   private:
    store::WatchPtr inner_;
    const std::atomic<bool>& lag_;
  };
};

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kvol-registry-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    store::SqliteOptions so;
    so.path = dir_ + "/kvol.db";
    auto s = store::OpenSqliteStore(so);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto racing = std::make_unique<RacingStore>(std::move(*s));
    racing_ = racing.get();
    store_ = std::move(racing);
    api_ = std::make_unique<Api>(*store_, clock_);
    ASSERT_TRUE(api_->Start().ok());
  }
  void TearDown() override {
    api_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }

  Registry<api::PersistentVolume>& pvs() { return api_->registry<api::PersistentVolume>(); }
  Registry<api::PersistentVolumeClaim>& pvcs() {
    return api_->registry<api::PersistentVolumeClaim>();
  }

  static api::PersistentVolume PV(std::string name, std::string size = "5Gi") {
    api::PersistentVolume pv;
    pv.metadata.name = std::move(name);
    pv.spec.capacity["storage"] = api::Quantity::MustParse(size);
    pv.spec.access_modes = {"ReadWriteOnce"};
    pv.spec.host_path.emplace().path = "/data";
    return pv;
  }
  static api::PersistentVolumeClaim PVC(std::string name) {
    api::PersistentVolumeClaim c;
    c.metadata.name = std::move(name);
    c.spec.access_modes = {"ReadWriteOnce"};
    c.spec.resources.requests["storage"] = api::Quantity::MustParse("1Gi");
    return c;
  }
  static Json J(const char* s) { return Json::parse(s); }

  std::string dir_;
  os::testing::FakeClock clock_;
  std::unique_ptr<store::Store> store_;
  RacingStore* racing_ = nullptr;
  std::unique_ptr<Api> api_;
};

TEST_F(RegistryTest, DecodedObjectsAreSharedAndNeverStale) {
  ASSERT_TRUE(pvs().Create(PV("pv1", "1Gi"), "").ok());
  auto first = pvs().GetStored("", "pv1");
  ASSERT_TRUE(first.ok());
  auto a = pvs().DecodeTyped(*first);
  auto b = pvs().DecodeTyped(*first);  // the memo's copy
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(api::EncodeJsonText(*a), api::EncodeJsonText(*b));
  EXPECT_EQ(b->metadata.resource_version, std::to_string(first->rev));
  // Changing the copy handed out leaves the memo alone.
  b->spec.capacity["storage"] = api::Quantity::MustParse("9Gi");
  auto c = pvs().DecodeTyped(*first);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->spec.capacity.at("storage").ToString(), "1Gi");
  // A new version decodes as itself, in every way it is read.
  auto updated = pvs().Mutate("", "pv1", false, [](api::PersistentVolume& pv) {
    pv.spec.capacity["storage"] = api::Quantity::MustParse("2Gi");
    return true;
  });
  ASSERT_TRUE(updated.ok()) << updated.error().message;
  auto second = pvs().GetStored("", "pv1");
  ASSERT_TRUE(second.ok());
  EXPECT_GT(second->rev, first->rev);
  for (int i = 0; i < 2; ++i) {
    auto d = pvs().DecodeTyped(*second);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->spec.capacity.at("storage").ToString(), "2Gi");
    EXPECT_EQ(d->metadata.resource_version, std::to_string(second->rev));
  }
  auto got = pvs().Get("", "pv1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->spec.capacity.at("storage").ToString(), "2Gi");

  // Readers of one stored version share one object, with that version's resourceVersion.
  auto s1 = pvs().DecodeShared(*second);
  auto s2 = pvs().DecodeShared(*second);
  ASSERT_TRUE(s1.ok() && s2.ok());
  EXPECT_EQ(s1->get(), s2->get());
  EXPECT_EQ((*s1)->metadata.resource_version, std::to_string(second->rev));
  // A deletion's event carries the last state at the deleting revision: its own object, and
  // the shared one keeps its version.
  StoredObject gone{second->json, second->rev + 5, true};
  auto g = pvs().DecodeShared(gone);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)->metadata.resource_version, std::to_string(second->rev + 5));
  EXPECT_EQ((*pvs().DecodeShared(*second))->metadata.resource_version,
            std::to_string(second->rev));
}

// What an update answers is the very object the registry keeps for the stored value: the
// write's watchers and later readers share it, each with the write's resourceVersion.
TEST_F(RegistryTest, UpdateSharedAnswersWithTheObjectReadersShare) {
  ASSERT_TRUE(pvs().Create(PV("pv1"), "").ok());
  auto watch = pvs().WatchStored("", ListOptions{.resource_version = "0"});
  ASSERT_TRUE(watch.ok());
  auto next = pvs().Get("", "pv1");
  ASSERT_TRUE(next.ok());
  next->status.phase = "Available";
  next->spec.claim_ref.emplace().name = "c";
  auto written = pvs().UpdateShared(*next, true, true);
  ASSERT_TRUE(written.ok()) << written.error().message;
  const auto& pv = **written;
  EXPECT_EQ(pv.status.phase, "Available");
  ASSERT_TRUE(pv.spec.claim_ref);
  auto stored = pvs().GetStored("", "pv1");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(pv.metadata.resource_version, std::to_string(stored->rev));
  auto read = pvs().DecodeShared(*stored);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->get(), written->get());
  // The watch's event for the write decodes to it too (after the create's ADDED).
  std::vector<WatchEvent> events;
  for (int i = 0; i < 50 && events.size() < 2; ++i) {
    auto got = (*watch)->Next(100ms);
    ASSERT_TRUE(got.ok());
    for (auto& e : *got) events.push_back(std::move(e));
  }
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].type, WatchEvent::Type::kModified);
  auto from_event = pvs().DecodeShared(events[1].object);
  ASSERT_TRUE(from_event.ok());
  EXPECT_EQ(from_event->get(), written->get());
  // Only the status part leaves the object's spec as stored.
  auto status_only = pv;
  status_only.status.phase = "Bound";
  status_only.spec.claim_ref.reset();
  auto w2 = pvs().UpdateShared(status_only, false, true);
  ASSERT_TRUE(w2.ok()) << w2.error().message;
  EXPECT_EQ((*w2)->status.phase, "Bound");
  EXPECT_TRUE((*w2)->spec.claim_ref);
  // Nothing changed: no write, and the answer is the object as stored.
  auto same = pvs().UpdateShared(**w2, true, true);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ((*same)->metadata.resource_version, (*w2)->metadata.resource_version);
  // A conflict leaves nothing behind: the stored object is still the last one written.
  auto stale = pv;
  auto conflict = pvs().UpdateShared(stale, true, false);
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.error().code, 409);
  auto now = pvs().Get("", "pv1");
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->status.phase, "Bound");
}

// Several updates written together: each answered as alone, in order, the good ones committed
// and shared with readers, the bad ones refused with their own errors and leaving nothing.
TEST_F(RegistryTest, UpdateSharedManyAnswersEachUpdateAsAlone) {
  for (auto name : {"a", "b", "c", "d"}) ASSERT_TRUE(pvs().Create(PV(name), "").ok());
  std::vector<api::PersistentVolume> objs;
  for (auto name : {"a", "b", "c", "d"}) objs.push_back(*pvs().Get("", name));
  objs[0].spec.claim_ref.emplace().name = "claim-a";
  objs[0].status.phase = "Bound";
  const std::string b_phase = objs[1].status.phase;
  objs[1].status.phase = "Bound";
  objs[1].metadata.resource_version = "1";  // stale
  objs[2].spec.capacity.clear();            // invalid
  objs[3].status.phase = "Released";
  const std::string a_before = objs[0].metadata.resource_version;
  const api::PersistentVolume a_second = objs[0];  // the same object again, later in the batch
  objs.push_back(a_second);
  auto got = pvs().UpdateSharedMany(std::move(objs), true, true);
  ASSERT_EQ(got.size(), 5u);
  ASSERT_TRUE(got[0].ok()) << got[0].error().message;
  EXPECT_EQ((*got[0])->spec.claim_ref->name, "claim-a");
  EXPECT_EQ((*got[0])->status.phase, "Bound");
  EXPECT_NE((*got[0])->metadata.resource_version, a_before);
  ASSERT_FALSE(got[1].ok());
  EXPECT_EQ(got[1].error().code, 409);
  ASSERT_FALSE(got[2].ok());
  EXPECT_EQ(got[2].error().code, 422);
  EXPECT_NE(got[2].error().message.find("spec.capacity"), std::string::npos)
      << got[2].error().message;
  ASSERT_TRUE(got[3].ok()) << got[3].error().message;
  EXPECT_EQ((*got[3])->status.phase, "Released");
  // The second write of "a" was made against the version the first one replaced.
  ASSERT_FALSE(got[4].ok());
  EXPECT_EQ(got[4].error().code, 409);

  // What was answered is what is stored, shared with its readers; the refused left nothing.
  for (auto [i, name] : {std::pair{0, "a"}, std::pair{3, "d"}}) {
    auto stored = pvs().GetStored("", name);
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ((*got[i])->metadata.resource_version, std::to_string(stored->rev));
    auto read = pvs().DecodeShared(*stored);
    ASSERT_TRUE(read.ok());
    EXPECT_EQ(read->get(), got[i]->get());
  }
  EXPECT_EQ(pvs().Get("", "b")->status.phase, b_phase);
  EXPECT_FALSE(pvs().Get("", "c")->spec.capacity.empty());

  // Without a resourceVersion an update applies to whatever is stored; the status part alone
  // keeps the stored spec.
  auto d = *pvs().Get("", "d");
  d.metadata.resource_version.clear();
  d.status.phase = "Failed";
  d.spec.persistent_volume_reclaim_policy = "Recycle";
  auto status_only = pvs().UpdateSharedMany({d}, false, true);
  ASSERT_EQ(status_only.size(), 1u);
  ASSERT_TRUE(status_only[0].ok()) << status_only[0].error().message;
  EXPECT_EQ((*status_only[0])->status.phase, "Failed");
  EXPECT_EQ((*status_only[0])->spec.persistent_volume_reclaim_policy, "Retain");
  EXPECT_TRUE(pvs().UpdateSharedMany({}, true, false).empty());
}

// Api::UpdateTogether: updates of any kinds in one store write, each answered as if alone, one
// that follows another made only with it.
TEST_F(RegistryTest, UpdateTogetherWritesAClaimOnlyWithItsVolume) {
  auto together = [&](std::vector<api::PersistentVolume> volumes,
                      std::vector<api::PersistentVolumeClaim> claims, std::vector<int> after) {
    std::vector<api::ObjectUpdate> updates;
    for (auto& v : volumes) updates.push_back(api::UpdateOf(std::move(v), true, true));
    for (size_t j = 0; j < claims.size(); ++j) {
      updates.push_back(api::UpdateOf(std::move(claims[j]), true, true, after[j]));
    }
    const size_t nv = volumes.size();
    auto written = api_->UpdateTogether(std::move(updates));
    std::pair<std::vector<api::ApiOr<std::shared_ptr<const api::PersistentVolume>>>,
              std::vector<api::ApiOr<std::shared_ptr<const api::PersistentVolumeClaim>>>>
        out;
    for (size_t i = 0; i < written.size(); ++i) {
      if (i < nv) {
        out.first.push_back(written[i].ok() ? api::ApiOr<std::shared_ptr<const api::PersistentVolume>>(
                                                  api::SharedAs<api::PersistentVolume>(*written[i]))
                                            : written[i].error());
      } else {
        out.second.push_back(
            written[i].ok() ? api::ApiOr<std::shared_ptr<const api::PersistentVolumeClaim>>(
                                  api::SharedAs<api::PersistentVolumeClaim>(*written[i]))
                            : written[i].error());
      }
    }
    return out;
  };
  for (auto name : {"v1", "v2", "v3"}) ASSERT_TRUE(pvs().Create(PV(name), "").ok());
  for (auto name : {"c1", "c2", "c3", "c4"}) ASSERT_TRUE(pvcs().Create(PVC(name), "default").ok());
  auto volume = [&](const char* name, const char* claim) {
    auto v = *pvs().Get("", name);
    v.spec.claim_ref.emplace().name = claim;
    v.spec.claim_ref->namespace_ = "default";
    v.status.phase = "Bound";
    return v;
  };
  auto claim = [&](const char* name, const char* volume) {
    auto c = *pvcs().Get("default", name);
    c.spec.volume_name = volume;
    c.status.phase = "Bound";
    return c;
  };
  std::vector<api::PersistentVolume> volumes = {volume("v1", "c1"), volume("v2", "c2"),
                                                *pvs().Get("", "v3")};
  volumes[1].metadata.resource_version = "1";  // stale: its update fails
  std::vector<api::PersistentVolumeClaim> claims = {claim("c1", "v1"), claim("c2", "v2"),
                                                    claim("c3", "v3"), claim("c4", "")};
  claims[3].spec.volume_name.clear();
  claims[3].metadata.resource_version.clear();  // follows v1: needs its version
  const store::Revision before = *store_->CurrentRevision();
  auto [v, c] = together(std::move(volumes), std::move(claims), {0, 1, 2, 0});
  ASSERT_EQ(v.size(), 3u);
  ASSERT_EQ(c.size(), 4u);
  // v1 and c1 both, one right after the other.
  ASSERT_TRUE(v[0].ok()) << v[0].error().message;
  ASSERT_TRUE(c[0].ok()) << c[0].error().message;
  EXPECT_EQ((*v[0])->metadata.resource_version, std::to_string(before + 1));
  EXPECT_EQ((*c[0])->metadata.resource_version, std::to_string(before + 2));
  EXPECT_EQ(pvcs().Get("default", "c1")->spec.volume_name, "v1");
  // v2 was not written, so neither was c2.
  ASSERT_FALSE(v[1].ok());
  EXPECT_EQ(v[1].error().code, 409);
  ASSERT_FALSE(c[1].ok());
  EXPECT_EQ(c[1].error().code, 409);
  EXPECT_NE(c[1].error().message.find("persistentvolumes \"v2\" it follows failed"),
            std::string::npos)
      << c[1].error().message;
  EXPECT_EQ(pvcs().Get("default", "c2")->spec.volume_name, "");
  // v3 needed no write: c3 is made on its own.
  ASSERT_TRUE(v[2].ok());
  ASSERT_TRUE(c[2].ok()) << c[2].error().message;
  EXPECT_EQ(pvcs().Get("default", "c3")->spec.volume_name, "v3");
  // A claim that follows a volume is written only against the version it read.
  ASSERT_FALSE(c[3].ok());
  EXPECT_EQ(c[3].error().code, 400);
  EXPECT_EQ(pvcs().Get("default", "c4")->status.phase, "Pending");
  EXPECT_EQ(*store_->CurrentRevision(), before + 3);

  // The answers are the objects readers share.
  auto stored = pvcs().GetStored("default", "c1");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(pvcs().DecodeShared(*stored)->get(), c[0]->get());

  // A volume written by someone else after it was read: its update fails at the store, and
  // the claim's, in the same store write, is not made.
  std::vector<api::PersistentVolume> again = {volume("v2", "c2")};
  std::vector<api::PersistentVolumeClaim> again_claims = {claim("c2", "v2")};
  racing_->race_key = "/registry/persistentvolumes/v2";
  auto [v2, c2] = together(std::move(again), std::move(again_claims), {0});
  EXPECT_TRUE(racing_->raced) << "the other write was not made: is the key right?";
  ASSERT_FALSE(v2[0].ok());
  EXPECT_EQ(v2[0].error().code, 409);
  ASSERT_FALSE(c2[0].ok());
  EXPECT_EQ(c2[0].error().code, 409);
  EXPECT_EQ(pvcs().Get("default", "c2")->spec.volume_name, "");
  EXPECT_FALSE(pvs().Get("", "v2")->spec.claim_ref);
}

TEST_F(RegistryTest, UpdateTogetherTakesAnyKinds) {
  ASSERT_TRUE(pvs().Create(PV("v1"), "").ok());
  api::ConfigMap cm;
  cm.metadata.name = "settings";
  ASSERT_TRUE(api_->registry<api::ConfigMap>().Create(cm, "default").ok());
  auto v = *pvs().Get("", "v1");
  v.metadata.labels["tier"] = "gold";
  auto c = *api_->registry<api::ConfigMap>().Get("default", "settings");
  c.data["tier"] = "gold";
  const store::Revision before = *store_->CurrentRevision();
  std::vector<api::ObjectUpdate> updates;
  updates.push_back(api::UpdateOf(v, true, false));
  updates.push_back(api::UpdateOf(c, true, false, 0));
  auto written = api_->UpdateTogether(std::move(updates));
  ASSERT_EQ(written.size(), 2u);
  ASSERT_TRUE(written[0].ok()) << written[0].error().message;
  ASSERT_TRUE(written[1].ok()) << written[1].error().message;
  EXPECT_EQ(api::SharedAs<api::PersistentVolume>(*written[0])->metadata.labels.at("tier"), "gold");
  EXPECT_EQ(api::SharedAs<api::ConfigMap>(*written[1])->data.at("tier"), "gold");
  EXPECT_EQ(api::SharedAs<api::ConfigMap>(*written[0]), nullptr) << "answered as its own kind";
  EXPECT_EQ(*store_->CurrentRevision(), before + 2);

  // An update can follow only an earlier one.
  std::vector<api::ObjectUpdate> bad;
  bad.push_back(api::UpdateOf(*pvs().Get("", "v1"), true, false, 0));
  auto refused = api_->UpdateTogether(std::move(bad));
  ASSERT_FALSE(refused[0].ok());
  EXPECT_EQ(refused[0].error().code, 400);
  EXPECT_TRUE(api_->UpdateTogether({}).empty());
}

// Objects decoded long ago are still found by their stored value while anything holds them
// (in process, informers hold every object of their kind), so updating them parses nothing.
TEST_F(RegistryTest, HeldObjectsStayFoundPastTheRecentMemo) {
  ASSERT_TRUE(pvs().Create(PV("held"), "").ok());
  ASSERT_TRUE(pvs().Create(PV("dropped"), "").ok());
  auto held_stored = pvs().GetStored("", "held");
  auto dropped_stored = pvs().GetStored("", "dropped");
  ASSERT_TRUE(held_stored.ok() && dropped_stored.ok());
  auto held = pvs().DecodeShared(*held_stored);
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(pvs().DecodeShared(*dropped_stored).ok());
  // More objects than the memo keeps are written after them (by 8 writers, which share
  // commits).
  std::atomic<int> failed{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 8; ++w) {
    writers.emplace_back([&, w] {
      for (int i = w; i < 9000; i += 8) {
        if (!pvs().Create(PV("p" + std::to_string(i)), "").ok()) ++failed;
      }
    });
  }
  for (auto& t : writers) t.join();
  ASSERT_EQ(failed, 0);
  auto again = pvs().DecodeShared(*held_stored);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), held->get());
  EXPECT_EQ((*again)->metadata.resource_version, std::to_string(held_stored->rev));
  // One nobody held is decoded again: a new object, equal to the old.
  auto redecoded = pvs().DecodeShared(*dropped_stored);
  ASSERT_TRUE(redecoded.ok());
  EXPECT_EQ((*redecoded)->metadata.name, "dropped");
  EXPECT_EQ((*redecoded)->metadata.resource_version, std::to_string(dropped_stored->rev));
  // The update of the held object starts from it and answers with a new one.
  auto next = **held;
  next.metadata.labels["x"] = "y";
  auto written = pvs().UpdateShared(next, true, false);
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_NE(written->get(), held->get());
  EXPECT_EQ((*written)->metadata.labels.at("x"), "y");
}

// A written object is remembered as written, so readers skip parsing it: what they get must be
// exactly what parsing the stored JSON gives.
TEST_F(RegistryTest, WrittenObjectsReadBackAsTheirJsonDecodes) {
  auto fresh = [&](const StoredObject& s) {
    auto j = api::ParseJson(*s.json);
    EXPECT_TRUE(j.ok());
    api::FieldErrors errs;
    auto pv = api::DecodeStruct<api::PersistentVolume>(*j, &errs);
    EXPECT_TRUE(errs.empty());
    pv.metadata.resource_version = std::to_string(s.rev);
    return pv;
  };
  auto check = [&](std::string_view what) {
    SCOPED_TRACE(what);
    auto stored = pvs().GetStored("", "odd");
    ASSERT_TRUE(stored.ok());
    auto memo = pvs().DecodeTyped(*stored);
    ASSERT_TRUE(memo.ok());
    auto parsed = fresh(*stored);
    EXPECT_EQ(api::EncodeJsonText(*memo), api::EncodeJsonText(parsed));
    EXPECT_TRUE(*memo == parsed);
  };
  // Values whose text the encoder rewrites, and empty collections it leaves out.
  api::PersistentVolume pv = PV("odd", "1.5Gi");
  pv.metadata.labels = {};
  pv.metadata.annotations["a"] = "";
  pv.spec.capacity["storage"] = api::Quantity::MustParse("1536Mi");
  auto& term = pv.spec.node_affinity.emplace().required.emplace().node_selector_terms.emplace_back();
  term.match_expressions.push_back({"kubernetes.io/hostname", "In", {"n1"}});
  pv.spec.storage_class_name = "";
  auto created = pvs().Create(pv, "");
  ASSERT_TRUE(created.ok()) << created.error().message;
  check("create");
  auto u = pvs().Mutate("", "odd", false, [](api::PersistentVolume& v) {
    v.spec.capacity["storage"] = api::Quantity::MustParse("0.5Gi");
    v.spec.claim_ref.emplace().name = "c";
    v.metadata.finalizers.push_back("example.com/hold");
    return true;
  });
  ASSERT_TRUE(u.ok()) << u.error().message;
  check("update");
  u = pvs().Mutate("", "odd", true, [](api::PersistentVolume& v) {
    v.status.phase = "Bound";
    v.status.message = "";
    return true;
  });
  ASSERT_TRUE(u.ok()) << u.error().message;
  check("status");
  ASSERT_TRUE(pvs().Delete("", "odd").ok());
  check("marked for deletion");
}

TEST_F(RegistryTest, CreateFillsSystemFieldsDefaultsAndFinalizers) {
  auto pv = pvs().Create(PV("pv1"), "");
  ASSERT_TRUE(pv.ok()) << pv.error().message;
  EXPECT_EQ(pv->api_version, "v1");
  EXPECT_EQ(pv->kind, "PersistentVolume");
  // A version 4 UUID: 8-4-4-4-12 lowercase hex digits, "4" and one of "89ab" where they go.
  EXPECT_TRUE(std::regex_match(
      pv->metadata.uid,
      std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")))
      << pv->metadata.uid;
  EXPECT_NE(pvs().Create(PV("pv2"), "")->metadata.uid, pv->metadata.uid);
  EXPECT_TRUE(pv->metadata.creation_timestamp.has_value());
  EXPECT_EQ(pv->metadata.creation_timestamp->unix_seconds(), 1645192285);
  EXPECT_FALSE(pv->metadata.resource_version.empty());
  EXPECT_EQ(pv->metadata.generation, 1);
  EXPECT_EQ(pv->spec.persistent_volume_reclaim_policy, "Retain");
  EXPECT_EQ(pv->status.phase, "Pending");
  EXPECT_EQ(pv->metadata.finalizers, std::vector<std::string>{"kubernetes.io/pv-protection"});
  auto got = pvs().Get("", "pv1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->metadata.resource_version, pv->metadata.resource_version);
  EXPECT_EQ(got->metadata.uid, pv->metadata.uid);
}

TEST_F(RegistryTest, ClaimsGetTheDefaultClassAndProtection) {
  api::StorageClass sc;
  sc.metadata.name = "fast";
  sc.provisioner = "kvol.io/local-path";
  sc.metadata.annotations["storageclass.kubernetes.io/is-default-class"] = "true";
  ASSERT_TRUE(api_->registry<api::StorageClass>().Create(sc, "").ok());
  auto c = pvcs().Create(PVC("c1"), "default");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->spec.storage_class_name, "fast");
  EXPECT_EQ(c->metadata.finalizers, std::vector<std::string>{"kubernetes.io/pvc-protection"});
  EXPECT_EQ(c->spec.volume_mode, "Filesystem");
  // An explicit "" means no class and stays.
  auto none = PVC("c2");
  none.spec.storage_class_name = "";
  EXPECT_EQ(pvcs().Create(none, "default")->spec.storage_class_name, "");
}

// Quota admission sees a quota the moment its create has returned, not once the quota cache has
// caught up (here it is held back): a claim right after it is refused.
TEST_F(RegistryTest, AQuotaCreatedJustBeforeIsEnforced) {
  racing_->lag_quotas = true;
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    const std::string ns = "quota-" + std::to_string(i);
    api::Namespace n;
    n.metadata.name = ns;
    ASSERT_TRUE(api_->registry<api::Namespace>().Create(n, "").ok());
    api::ResourceQuota q;
    q.metadata.name = "none";
    q.spec.hard["persistentvolumeclaims"] = api::Quantity::MustParse("0");
    ASSERT_TRUE(api_->registry<api::ResourceQuota>().Create(q, ns).ok());
    auto c = pvcs().Create(PVC("c"), ns);
    ASSERT_FALSE(c.ok()) << "admitted past a quota of none";
    EXPECT_EQ(c.error().code, 403);
    // No quota controller here has written its status yet: refused as Kubernetes does then.
    EXPECT_NE(c.error().message.find("status unknown for quota: none"), std::string::npos)
        << c.error().message;
  }
}

TEST_F(RegistryTest, AClaimGrowsOnlyWhenItsClassAllowsExpansion) {
  for (auto [name, allow] : {std::pair{"fixed", false}, std::pair{"growing", true}}) {
    api::StorageClass sc;
    sc.metadata.name = name;
    sc.provisioner = "kvol.io/local-path";
    sc.allow_volume_expansion = allow;
    ASSERT_TRUE(api_->registry<api::StorageClass>().Create(sc, "").ok());
  }
  auto bound = [&](const std::string& name, const std::string& cls) {
    auto c = PVC(name);
    c.spec.storage_class_name = cls;
    auto created = pvcs().Create(c, "default");
    created->status.phase = "Bound";
    created->status.capacity["storage"] = api::Quantity::MustParse("1Gi");
    return *pvcs().Update(*created, /*status=*/true);
  };
  auto fixed = bound("a", "fixed");
  fixed.spec.resources.requests["storage"] = api::Quantity::MustParse("2Gi");
  auto refused = pvcs().Update(fixed);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, 403);
  EXPECT_EQ(refused.error().message,
            "persistentvolumeclaims \"a\" is forbidden: only dynamically provisioned pvc can be "
            "resized and the storageclass that provisions the pvc must support resize");
  auto growing = bound("b", "growing");
  growing.spec.resources.requests["storage"] = api::Quantity::MustParse("2Gi");
  auto grown = pvcs().Update(growing);
  ASSERT_TRUE(grown.ok()) << grown.error().message;
  EXPECT_EQ(grown->spec.resources.requests.at("storage"), api::Quantity::MustParse("2Gi"));
  // Other changes to a claim of a fixed class pass.
  fixed = *pvcs().Get("default", "a");
  fixed.metadata.labels["app"] = "web";
  EXPECT_TRUE(pvcs().Update(fixed).ok());
}

TEST_F(RegistryTest, CreateErrors) {
  auto missing = pvcs().Create(PVC("c1"), "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, 404);
  EXPECT_EQ(missing.error().message, "namespaces \"nope\" not found");
  // A namespace being deleted takes nothing new.
  api::Namespace ns;
  ns.metadata.name = "going";
  ASSERT_TRUE(api_->registry<api::Namespace>().Create(ns, "").ok());
  auto marked = api_->registry<api::Namespace>().Mutate("", "going", true, [](api::Namespace& n) {
    n.status.phase = "Terminating";
    return true;
  });
  ASSERT_TRUE(marked.ok()) << marked.error().message;
  auto refused = pvcs().Create(PVC("c1"), "going");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, 403);
  EXPECT_EQ(refused.error().message,
            "unable to create new content in namespace going because it is being terminated");
  ASSERT_TRUE(pvs().Create(PV("pv1"), "").ok());
  auto dup = pvs().Create(PV("pv1"), "");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code, 409);
  EXPECT_EQ(dup.error().reason, "AlreadyExists");
  EXPECT_EQ(dup.error().message, "persistentvolumes \"pv1\" already exists");
  auto bad = PV("bad");
  bad.spec.capacity["storage"] = api::Quantity::MustParse("-1Gi");
  auto invalid = pvs().Create(bad, "");
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.error().code, 422);
  EXPECT_EQ(invalid.error().kind, "PersistentVolume");
  ASSERT_EQ(invalid.error().causes.size(), 2u);
  EXPECT_EQ(invalid.error().causes[1].field, "spec.capacity[storage]");
  EXPECT_EQ(invalid.error().message.rfind("PersistentVolume \"bad\" is invalid: [", 0), 0u);
  auto sc = api::StorageClass();
  sc.metadata.name = "x";
  auto e = api_->registry<api::StorageClass>().Create(sc, "");
  EXPECT_EQ(e.error().message, "StorageClass.storage.k8s.io \"x\" is invalid: provisioner: Required value");
}

TEST_F(RegistryTest, GenerateName) {
  auto pv = PV("");
  pv.metadata.generate_name = "data-";
  auto a = pvs().Create(pv, "");
  auto b = pvs().Create(pv, "");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->metadata.name.size(), 10u);
  EXPECT_EQ(a->metadata.name.rfind("data-", 0), 0u);
  EXPECT_NE(a->metadata.name, b->metadata.name);
}

TEST_F(RegistryTest, UpdateConcurrencyGenerationAndStatus) {
  auto pv = *pvs().Create(PV("pv1"), "");
  // A labels-only change keeps the generation; a spec change bumps it.
  auto labeled = pv;
  labeled.metadata.labels["a"] = "b";
  auto u1 = pvs().Update(labeled);
  ASSERT_TRUE(u1.ok()) << u1.error().message;
  EXPECT_EQ(u1->metadata.generation, 1);
  EXPECT_NE(u1->metadata.resource_version, pv.metadata.resource_version);
  // The old resourceVersion now conflicts.
  auto stale = pv;
  stale.spec.capacity["storage"] = api::Quantity::MustParse("6Gi");
  auto conflict = pvs().Update(stale);
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.error().code, 409);
  EXPECT_EQ(conflict.error().message,
            "Operation cannot be fulfilled on persistentvolumes \"pv1\": the object has been "
            "modified; please apply your changes to the latest version and try again");
  auto grown = *u1;
  grown.spec.capacity["storage"] = api::Quantity::MustParse("6Gi");
  grown.status.phase = "Bound";  // ignored: status belongs to the status subresource
  auto u2 = pvs().Update(grown);
  ASSERT_TRUE(u2.ok());
  EXPECT_EQ(u2->metadata.generation, 2);
  EXPECT_EQ(u2->status.phase, "Pending");
  // The status subresource changes status only.
  auto st = *u2;
  st.status.phase = "Available";
  st.spec.capacity["storage"] = api::Quantity::MustParse("9Gi");
  st.metadata.labels["ignored"] = "yes";
  auto u3 = pvs().Update(st, /*status=*/true);
  ASSERT_TRUE(u3.ok());
  EXPECT_EQ(u3->status.phase, "Available");
  EXPECT_EQ(u3->spec.capacity["storage"].ToString(), "6Gi");
  EXPECT_FALSE(u3->metadata.labels.count("ignored"));
  EXPECT_EQ(u3->metadata.generation, 2);
  // No change, no write: the version stays.
  auto same = pvs().Update(*u3);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->metadata.resource_version, u3->metadata.resource_version);
  // The source is immutable.
  auto moved = *u3;
  moved.spec.host_path->path = "/elsewhere";
  auto immut = pvs().Update(moved);
  ASSERT_FALSE(immut.ok());
  EXPECT_EQ(immut.error().code, 422);
}

// What the in-process controllers use to bind: the object and its status in one revision,
// validated as an update.
TEST_F(RegistryTest, UpdateWithStatusWritesBothInOneVersion) {
  auto pv = *pvs().Create(PV("pv1"), "");
  auto next = pv;
  next.spec.claim_ref.emplace().name = "c1";
  next.spec.claim_ref->namespace_ = "default";
  next.status.phase = "Bound";
  auto u = pvs().UpdateWithStatus(next);
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_EQ(u->status.phase, "Bound");
  ASSERT_TRUE(u->spec.claim_ref.has_value());
  EXPECT_EQ(u->spec.claim_ref->name, "c1");
  EXPECT_EQ(std::stoll(u->metadata.resource_version), std::stoll(pv.metadata.resource_version) + 1);
  EXPECT_EQ(u->metadata.generation, 2);
  // Stale versions conflict, and immutable fields stay immutable.
  auto stale = pvs().UpdateWithStatus(next);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().code, 409);
  auto moved = *u;
  moved.spec.host_path->path = "/elsewhere";
  moved.status.phase = "Released";
  auto immut = pvs().UpdateWithStatus(moved);
  ASSERT_FALSE(immut.ok());
  EXPECT_EQ(immut.error().code, 422);
  EXPECT_EQ(pvs().Get("", "pv1")->status.phase, "Bound");
}

// As Kubernetes: the server stamps a phase change unless the client gives its own time, and
// keeps the time while the phase stays.
TEST_F(RegistryTest, PhaseTransitionTimes) {
  auto pv = *pvs().Create(PV("pv1"), "");
  ASSERT_TRUE(pv.status.last_phase_transition_time);
  const api::Time created = *pv.status.last_phase_transition_time;
  // A phase change with the time as it was: stamped now.
  clock_.Advance(10s);
  auto next = pv;
  next.status.phase = "Available";
  auto available = pvs().Update(next, /*status=*/true);
  ASSERT_TRUE(available.ok()) << available.error().message;
  ASSERT_TRUE(available->status.last_phase_transition_time);
  EXPECT_EQ(available->status.last_phase_transition_time->unix_seconds(), created.unix_seconds() + 10);
  // The same phase with the time left out: the old time stays.
  clock_.Advance(10s);
  next = *available;
  next.status.last_phase_transition_time.reset();
  next.status.message = "kept";
  auto same = pvs().Update(next, /*status=*/true);
  ASSERT_TRUE(same.ok()) << same.error().message;
  EXPECT_EQ(same->status.last_phase_transition_time, available->status.last_phase_transition_time);
  // A phase change with a time of the client's own: that time.
  next = *same;
  next.status.phase = "Released";
  next.status.last_phase_transition_time = api::Time::FromUnixSeconds(created.unix_seconds() + 5);
  auto released = pvs().Update(next, /*status=*/true);
  ASSERT_TRUE(released.ok()) << released.error().message;
  ASSERT_TRUE(released->status.last_phase_transition_time);
  EXPECT_EQ(released->status.last_phase_transition_time->unix_seconds(), created.unix_seconds() + 5);
}

TEST_F(RegistryTest, FinalizersHoldDeletion) {
  auto c = *pvcs().Create(PVC("c1"), "default");
  auto d = pvcs().Delete("default", "c1");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->metadata.deletion_timestamp.has_value());
  auto still = pvcs().Get("default", "c1");
  ASSERT_TRUE(still.ok());
  EXPECT_TRUE(still->metadata.deletion_timestamp.has_value());
  // Deleting again changes nothing; adding a finalizer now is refused.
  EXPECT_TRUE(pvcs().Delete("default", "c1").ok());
  auto more = *still;
  more.metadata.finalizers.push_back("example.com/x");
  EXPECT_EQ(pvcs().Update(more).error().code, 422);
  // Removing the last finalizer removes the object.
  auto done = pvcs().Mutate("default", "c1", false, [](api::PersistentVolumeClaim& x) {
    x.metadata.finalizers.clear();
    return true;
  });
  ASSERT_TRUE(done.ok()) << done.error().message;
  EXPECT_EQ(pvcs().Get("default", "c1").error().code, 404);
  EXPECT_EQ(pvcs().Delete("default", "c1").error().code, 404);
}

TEST_F(RegistryTest, DeletePreconditions) {
  auto pv = PV("pv1");
  auto created = *pvs().Create(pv, "");
  created.metadata.finalizers.clear();
  ASSERT_TRUE(pvs().Update(created).ok());
  DeleteOptions wrong;
  wrong.precondition_uid = "nope";
  auto e = pvs().Delete("", "pv1", wrong);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code, 409);
  EXPECT_TRUE(pvs().Delete("", "pv1").ok());
  EXPECT_EQ(pvs().Get("", "pv1").error().code, 404);
}

TEST_F(RegistryTest, ListSelectorsNamespacesAndPages) {
  for (int i = 0; i < 7; ++i) {
    auto pv = PV("pv" + std::to_string(i));
    pv.metadata.labels["tier"] = i % 2 ? "gold" : "bronze";
    ASSERT_TRUE(pvs().Create(pv, "").ok());
  }
  ListOptions gold;
  gold.label_selector = "tier=gold";
  auto l = pvs().ListStored("", gold);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->items.size(), 3u);
  ListOptions by_name;
  by_name.field_selector = "metadata.name=pv4";
  EXPECT_EQ(pvs().ListStored("", by_name)->items.size(), 1u);
  ListOptions bad;
  bad.field_selector = "spec.nodeName=x";
  auto err = pvs().ListStored("", bad);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.error().code, 400);
  bad.field_selector = "";
  bad.label_selector = "a in (";
  EXPECT_EQ(pvs().ListStored("", bad).error().code, 400);

  // Pages of three at one revision, even while objects change.
  ListOptions page;
  page.limit = 3;
  auto p1 = pvs().ListStored("", page);
  ASSERT_TRUE(p1.ok());
  ASSERT_EQ(p1->items.size(), 3u);
  ASSERT_FALSE(p1->continue_token.empty());
  ASSERT_TRUE(pvs().Create(PV("pv99"), "").ok());
  page.continue_token = p1->continue_token;
  auto p2 = pvs().ListStored("", page);
  ASSERT_TRUE(p2.ok());
  page.continue_token = p2->continue_token;
  auto p3 = pvs().ListStored("", page);
  ASSERT_TRUE(p3.ok());
  EXPECT_EQ(p1->items.size() + p2->items.size() + p3->items.size(), 7u);
  EXPECT_TRUE(p3->continue_token.empty());
  EXPECT_EQ(p2->rev, p1->rev);

  // Namespaces scope namespaced kinds.
  api::Namespace ns;
  ns.metadata.name = "other";
  ASSERT_TRUE(api_->registry<api::Namespace>().Create(ns, "").ok());
  ASSERT_TRUE(pvcs().Create(PVC("a"), "default").ok());
  ASSERT_TRUE(pvcs().Create(PVC("b"), "other").ok());
  EXPECT_EQ(pvcs().ListStored("default", {})->items.size(), 1u);
  EXPECT_EQ(pvcs().ListStored("", {})->items.size(), 2u);

  // Every kind selects by metadata.name and metadata.namespace; some by fields of their own.
  ListOptions in_other;
  in_other.field_selector = "metadata.namespace=other";
  auto claims = pvcs().ListStored("", in_other);
  ASSERT_TRUE(claims.ok());
  ASSERT_EQ(claims->items.size(), 1u);
  EXPECT_NE(claims->items[0].Json().find(R"("name":"b")"), std::string::npos);
  in_other.field_selector = "metadata.namespace!=other,metadata.name=a";
  EXPECT_EQ(pvcs().ListStored("", in_other)->items.size(), 1u);
  in_other.field_selector = "metadata.namespace!=other,metadata.name=b";
  EXPECT_EQ(pvcs().ListStored("", in_other)->items.size(), 0u);
  ListOptions active;
  active.field_selector = "status.phase=Active,metadata.name=other";
  EXPECT_EQ(api_->registry<api::Namespace>().ListStored("", active)->items.size(), 1u);
  active.field_selector = "status.phase!=Active";
  EXPECT_EQ(api_->registry<api::Namespace>().ListStored("", active)->items.size(), 0u);
}

TEST_F(RegistryTest, ListIsFreshAfterWrites) {
  // Read-your-writes: a list right after a write sees it, even for another kind's cache.
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(pvs().Create(PV("pv" + std::to_string(i)), "").ok());
    EXPECT_EQ(pvs().ListStored("", {})->items.size(), static_cast<size_t>(i + 1));
    EXPECT_EQ(pvcs().ListStored("default", {})->items.size(), 0u);
  }
}

std::vector<std::pair<WatchEvent::Type, std::string>> Drain(EventStream& s, size_t n) {
  std::vector<std::pair<WatchEvent::Type, std::string>> out;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
    auto evs = s.Next(100ms);
    if (!evs.ok()) break;
    for (auto& e : *evs) {
      auto j = Json::parse(e.object.Json());
      out.emplace_back(e.type, j["metadata"]["name"].get<std::string>());
    }
  }
  return out;
}

TEST_F(RegistryTest, WatchInitialEventsResumeAndSelectorTransitions) {
  auto pv = *pvs().Create(PV("a"), "");
  ListOptions from_zero;
  from_zero.resource_version = "0";
  auto w0 = pvs().WatchStored("", from_zero);
  ASSERT_TRUE(w0.ok());
  auto initial = Drain(**w0, 1);
  ASSERT_EQ(initial.size(), 1u);
  EXPECT_EQ(initial[0].first, WatchEvent::Type::kAdded);

  ListOptions gold;
  gold.label_selector = "tier=gold";
  gold.resource_version = pv.metadata.resource_version;
  auto w = pvs().WatchStored("", gold);
  ASSERT_TRUE(w.ok());
  auto with_label = [&](const std::string& v) {
    return pvs().Mutate("", "a", false, [&](api::PersistentVolume& x) {
      x.metadata.labels["tier"] = v;
      return true;
    });
  };
  ASSERT_TRUE(with_label("gold").ok());    // starts matching: ADDED
  ASSERT_TRUE(with_label("gold").ok());    // no change, no event
  ASSERT_TRUE(pvs().Mutate("", "a", false, [](api::PersistentVolume& x) {
    x.metadata.annotations["n"] = "1";
    return true;
  }).ok());                                // still matching: MODIFIED
  ASSERT_TRUE(with_label("bronze").ok());  // stops matching: DELETED
  auto evs = Drain(**w, 3);
  ASSERT_EQ(evs.size(), 3u);
  EXPECT_EQ(evs[0].first, WatchEvent::Type::kAdded);
  EXPECT_EQ(evs[1].first, WatchEvent::Type::kModified);
  EXPECT_EQ(evs[2].first, WatchEvent::Type::kDeleted);
}

TEST_F(RegistryTest, WatchFromCompactedHistoryIsGone) {
  auto pv = *pvs().Create(PV("a"), "");
  const std::string old = pv.metadata.resource_version;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(pvs().Mutate("", "a", false, [&](api::PersistentVolume& x) {
      x.metadata.labels["i"] = std::to_string(i);
      return true;
    }).ok());
  }
  ASSERT_TRUE(store_->Compact(*store_->CurrentRevision()).ok());
  ListOptions o;
  o.resource_version = "1";
  auto w = pvs().WatchStored("", o);
  // The cache started at revision 1 (empty store), so revision 1 is still in its history.
  ASSERT_TRUE(w.ok());
  // A cache restarted after compaction has no history before it: too old.
  api_.reset();
  api_ = std::make_unique<Api>(*store_, clock_);
  ASSERT_TRUE(api_->Start().ok());
  o.resource_version = old;
  auto gone = pvs().WatchStored("", o);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, 410);
  EXPECT_EQ(gone.error().reason, "Expired");
  EXPECT_EQ(gone.error().message.rfind("too old resource version: " + old, 0), 0u);
}

TEST_F(RegistryTest, WatchAfterRestartResumesFromTheStore) {
  auto pv = *pvs().Create(PV("a"), "");
  const std::string seen = pv.metadata.resource_version;
  ASSERT_TRUE(pvs().Create(PV("b"), "").ok());
  // A new server (new caches) still serves a watch from before it started.
  api_.reset();
  api_ = std::make_unique<Api>(*store_, clock_);
  ASSERT_TRUE(api_->Start().ok());
  ListOptions o;
  o.resource_version = seen;
  auto w = pvs().WatchStored("", o);
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_TRUE(pvs().Create(PV("c"), "").ok());
  auto evs = Drain(**w, 2);
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_EQ(evs[0].second, "b");
  EXPECT_EQ(evs[1].second, "c");
}

TEST_F(RegistryTest, PatchTypes) {
  ASSERT_TRUE(pvs().Create(PV("pv1"), "").ok());
  auto merge = pvs().PatchJson("", "pv1", "application/merge-patch+json",
                               R"({"spec":{"storageClassName":"fast"}})", false, {});
  ASSERT_TRUE(merge.ok()) << merge.error().message;
  auto json = pvs().PatchJson("", "pv1", "application/json-patch+json",
                              R"([{"op":"replace","path":"/spec/capacity/storage","value":"6Gi"}])",
                              false, {});
  ASSERT_TRUE(json.ok()) << json.error().message;
  auto smp = pvs().PatchJson("", "pv1", "application/strategic-merge-patch+json",
                             R"({"metadata":{"finalizers":["example.com/x"]}})", false, {});
  ASSERT_TRUE(smp.ok()) << smp.error().message;
  auto got = *pvs().Get("", "pv1");
  EXPECT_EQ(got.spec.storage_class_name, "fast");
  EXPECT_EQ(got.spec.capacity["storage"].ToString(), "6Gi");
  EXPECT_EQ(got.metadata.finalizers,
            (std::vector<std::string>{"kubernetes.io/pv-protection", "example.com/x"}));
  auto bad = pvs().PatchJson("", "pv1", "application/json-patch+json",
                             R"([{"op":"test","path":"/spec/storageClassName","value":"slow"}])",
                             false, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, 422);
  auto unknown = pvs().PatchJson("", "pv1", "text/plain", "x", false, {});
  EXPECT_EQ(unknown.error().code, 415);
  auto pinned = pvs().PatchJson("", "pv1", "application/merge-patch+json",
                                R"({"metadata":{"resourceVersion":"1"}})", false, {});
  EXPECT_EQ(pinned.error().code, 409);
}

TEST_F(RegistryTest, StrictFieldValidationOfMetadata) {
  Json body = J(R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"x","label":{"a":"b"}},
                   "spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/d"}}})");
  WriteOptions strict;
  strict.field_validation = "Strict";
  auto e = pvs().CreateJson("", body, strict);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code, 400);
  EXPECT_EQ(e.error().message, "strict decoding error: unknown field \"metadata.label\"");
  auto w = pvs().CreateJson("", body, {});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->warnings, std::vector<std::string>{"unknown field \"metadata.label\""});
  Json wrong = body;
  wrong["kind"] = "Pod";
  EXPECT_EQ(pvs().CreateJson("", wrong, {}).error().code, 400);
  Json typed = body;
  typed["metadata"] = J(R"({"name": 5})");
  auto te = pvs().CreateJson("", typed, {});
  EXPECT_EQ(te.error().message,
            "PersistentVolume in version \"v1\" cannot be handled as a PersistentVolume: "
            "metadata.name: Invalid value: 5: must be a string, not a number");
}

TEST(ObjectsTest, ResourceVersionSplice) {
  EXPECT_EQ(WithResourceVersion(R"({"apiVersion":"v1","kind":"X","metadata":{"name":"a"}})", 7),
            R"({"apiVersion":"v1","kind":"X","metadata":{"resourceVersion":"7","name":"a"}})");
  EXPECT_EQ(WithResourceVersion(R"({"metadata":{}})", 3), R"({"metadata":{"resourceVersion":"3"}})");
  EXPECT_EQ(WithResourceVersion(R"({"a":{"metadata":{"x":1}},"b":"}{\"metadata\":{","metadata":{"n":1}})", 2),
            R"({"a":{"metadata":{"x":1}},"b":"}{\"metadata\":{","metadata":{"resourceVersion":"2","n":1}})");
  EXPECT_EQ(WithResourceVersion(R"({"kind":"X"})", 4), R"({"kind":"X","metadata":{"resourceVersion":"4"}})");
  EXPECT_EQ(WithResourceVersion(R"({})", 4), R"({"metadata":{"resourceVersion":"4"}})");
}

TEST(ObjectsTest, UidsAreDistinctVersion4UuidsAcrossThreadsAndForks) {
  const std::regex v4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  // Several threads, each past many refills of its pool of random bytes.
  std::vector<std::vector<std::string>> per_thread(4);
  std::vector<std::thread> threads;
  for (auto& uids : per_thread) {
    threads.emplace_back([&uids] {
      for (int i = 0; i < 2000; ++i) uids.push_back(NewUid());
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> seen;
  for (const auto& uids : per_thread) {
    for (const auto& uid : uids) {
      EXPECT_TRUE(std::regex_match(uid, v4)) << uid;
      seen.insert(uid);
    }
  }
  EXPECT_EQ(seen.size(), 4u * 2000);
  EXPECT_EQ(RandomSuffix().size(), 5u);

  // A forked child does not hand out the uid its parent hands out next.
  NewUid();  // this thread's pool is partly used
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::string uid = NewUid();
    _exit(write(pipe_fds[1], uid.data(), uid.size()) == static_cast<ssize_t>(uid.size()) ? 0 : 1);
  }
  const std::string mine = NewUid();
  char buf[36];
  ASSERT_EQ(read(pipe_fds[0], buf, sizeof buf), 36);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(status, 0);
  EXPECT_NE(std::string(buf, sizeof buf), mine);
}

}  // namespace
}  // namespace kvol::apiserver
