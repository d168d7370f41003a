// The snapshot controller's decisions, one row per situation: what is in the API before one
// sync (of a snapshot or a content), and what the snapshot, its content and the source claim
// look like after it, with the events it gave. Crash rows start from what a pass that stopped
// half-way leaves.
#include "controller/snapshot/snapshot_controller.h"

#include <gtest/gtest.h>

#include <functional>

#include "client/testing/fake_client.h"
#include "os/testing/fake_clock.h"

namespace kvol::controller::snapshot {
namespace {

using client::testing::FakeClient;

constexpr const char* kDriver = "loop.csi.kvol.io";
constexpr const char* kAsSource = "snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection";
constexpr const char* kBound = "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection";
constexpr const char* kClaimSource = "snapshot.storage.kubernetes.io/pvc-as-source-protection";

api::VolumeSnapshotClass Class(std::string name, bool is_default = false,
                               std::string policy = "Delete") {
  api::VolumeSnapshotClass c;
  c.metadata.name = std::move(name);
  c.driver = kDriver;
  c.deletion_policy = std::move(policy);
  if (is_default) c.metadata.annotations["snapshot.storage.kubernetes.io/is-default-class"] = "true";
  return c;
}

api::PersistentVolumeClaim Claim(bool bound = true) {
  api::PersistentVolumeClaim c;
  c.metadata.namespace_ = "default";
  c.metadata.name = "data";
  c.metadata.uid = "claim-uid";
  if (bound) {
    c.spec.volume_name = "pv-1";
    c.status.phase = "Bound";
  }
  return c;
}

api::PersistentVolume Volume() {
  api::PersistentVolume v;
  v.metadata.name = "pv-1";
  auto& csi = v.spec.csi.emplace();
  csi.driver = kDriver;
  csi.volume_handle = "vol-1";
  auto& ref = v.spec.claim_ref.emplace();
  ref.namespace_ = "default";
  ref.name = "data";
  ref.uid = "claim-uid";
  return v;
}

api::VolumeSnapshot Snapshot(std::optional<std::string> cls = "loop") {
  api::VolumeSnapshot s;
  s.metadata.namespace_ = "default";
  s.metadata.name = "s1";
  s.metadata.uid = "uid-1";
  s.spec.source.persistent_volume_claim_name = "data";
  s.spec.volume_snapshot_class_name = std::move(cls);
  return s;
}

api::VolumeSnapshot PreProvisioned() {
  api::VolumeSnapshot s = Snapshot(std::nullopt);
  s.spec.source.persistent_volume_claim_name.reset();
  s.spec.source.volume_snapshot_content_name = "imported";
  return s;
}

api::VolumeSnapshotContent Content(std::string policy = "Delete") {
  api::VolumeSnapshotContent c;
  c.metadata.name = "snapcontent-uid-1";
  c.spec.volume_snapshot_ref.namespace_ = "default";
  c.spec.volume_snapshot_ref.name = "s1";
  c.spec.volume_snapshot_ref.uid = "uid-1";
  c.spec.source.volume_handle = "vol-1";
  c.spec.driver = kDriver;
  c.spec.deletion_policy = std::move(policy);
  c.spec.volume_snapshot_class_name = "loop";
  return c;
}

api::VolumeSnapshotContent Imported() {
  api::VolumeSnapshotContent c = Content("Retain");
  c.metadata.name = "imported";
  c.spec.volume_snapshot_ref.uid.clear();
  c.spec.volume_snapshot_class_name.reset();
  c.spec.source.volume_handle.reset();
  c.spec.source.snapshot_handle = "snap-0001";
  return c;
}

api::VolumeSnapshotContentStatus ReadyStatus() {
  return {.snapshot_handle = "snap-1",
          .creation_time = int64_t{1'700'000'000} * 1'000'000'000,
          .restore_size = 16 << 20,
          .ready_to_use = true};
}

api::VolumeSnapshot Bound(api::VolumeSnapshot s, std::vector<std::string> finalizers) {
  s.metadata.finalizers = std::move(finalizers);
  s.status.emplace().bound_volume_snapshot_content_name = "snapcontent-uid-1";
  s.status->ready_to_use = false;
  return s;
}

api::VolumeSnapshot Deleting(api::VolumeSnapshot s) {
  s.metadata.deletion_timestamp = api::Time::FromUnixSeconds(1);
  return s;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// "gone", or what the row compares of the snapshot.
std::string SnapshotState(FakeClient& api) {
  auto got = api.fake<api::VolumeSnapshot>().Objects();
  if (got.empty()) return "gone";
  const auto& s = got.begin()->second;
  std::string out = "class=" + s.spec.volume_snapshot_class_name.value_or("") + " finalizers=";
  for (const auto& f : s.metadata.finalizers) {
    out += f == kAsSource ? "S" : f == kBound ? "B" : "?";
  }
  if (s.status) {
    out += " bound=" + s.status->bound_volume_snapshot_content_name.value_or("") +
           " ready=" + (s.status->ready_to_use.value_or(false) ? "true" : "false");
    if (s.status->restore_size) out += " size=" + s.status->restore_size->ToString();
    if (s.status->creation_time) out += " created";
    if (s.status->error) out += " error=" + s.status->error->message.value_or("");
  }
  return out;
}

std::string ContentState(FakeClient& api) {
  auto got = api.fake<api::VolumeSnapshotContent>().Objects();
  if (got.empty()) return "none";
  std::string out;
  for (const auto& [name, c] : got) {
    if (!out.empty()) out += "; ";
    out += name + " handle=" + c.spec.source.volume_handle.value_or("") +
           c.spec.source.snapshot_handle.value_or("") + " uid=" + c.spec.volume_snapshot_ref.uid +
           " policy=" + c.spec.deletion_policy;
    if (c.metadata.deletion_timestamp) out += " deleting";
    if (c.metadata.annotations.count("snapshot.storage.kubernetes.io/volumesnapshot-being-deleted")) {
      out += " being-deleted";
    }
    if (!c.metadata.finalizers.empty()) out += " finalizer";
  }
  return out;
}

std::string ClaimFinalizers(FakeClient& api) {
  auto got = api.fake<api::PersistentVolumeClaim>().Objects();
  if (got.empty()) return "gone";
  std::string out;
  for (const auto& f : got.begin()->second.metadata.finalizers) out += f == kClaimSource ? "S" : "?";
  return out;
}

struct World {
  FakeClient api;
  std::vector<api::VolumeSnapshotClass> classes;
  std::vector<api::PersistentVolumeClaim> claims;
  std::vector<api::PersistentVolume> volumes;
  std::vector<api::VolumeSnapshot> snapshots;
  std::vector<api::VolumeSnapshotContent> contents;
};

struct Row {
  const char* name;
  std::function<void(World&)> given;
  bool sync_content = false;  // else the snapshot
  std::string snapshot;       // SnapshotState after the sync
  std::string content;        // ContentState after
  std::string claim = "";     // ClaimFinalizers after
  std::vector<std::string> events;
  std::string enqueued = "";  // snapshots a content sync asked to sync again
  bool ok = true;
};

std::vector<Row> Rows() {
  const std::string error = " error=";
  return {
      {.name = "1-1 a snapshot of a claim gets its content",
       .given = [](World& w) {
         w.classes = {Class("loop")};
         w.claims = {Claim()};
         w.volumes = {Volume()};
         w.snapshots = {Snapshot()};
       },
       .snapshot = "class=loop finalizers=S bound=snapcontent-uid-1 ready=false",
       .content = "snapcontent-uid-1 handle=vol-1 uid=uid-1 policy=Delete finalizer",
       .claim = "S",
       .events = {"Normal CreatingSnapshot Waiting for a snapshot default/s1 to be created by the "
                  "CSI driver."}},
      {.name = "1-2 crash after the content was made: bound, not made twice",
       .given = [](World& w) {
         w.classes = {Class("loop")};
         w.claims = {Claim()};
         w.claims[0].metadata.finalizers = {kClaimSource};
         w.volumes = {Volume()};
         w.snapshots = {Snapshot()};
         w.snapshots[0].metadata.finalizers = {kAsSource};
         w.contents = {Content()};
       },
       .snapshot = "class=loop finalizers=S bound=snapcontent-uid-1 ready=false",
       .content = "snapcontent-uid-1 handle=vol-1 uid=uid-1 policy=Delete",
       .claim = "S"},
      {.name = "1-3 the default class of the claim's driver",
       .given = [](World& w) {
         w.classes = {Class("other"), Class("loop", true)};
         w.claims = {Claim()};
         w.volumes = {Volume()};
         w.snapshots = {Snapshot(std::nullopt)};
       },
       .snapshot = "class=loop finalizers=S bound=snapcontent-uid-1 ready=false",
       .content = "snapcontent-uid-1 handle=vol-1 uid=uid-1 policy=Delete finalizer",
       .claim = "S",
       .events = {"Normal CreatingSnapshot Waiting for a snapshot default/s1 to be created by the "
                  "CSI driver."}},
      {.name = "1-4 two default classes",
       .given = [](World& w) {
         w.classes = {Class("a", true), Class("b", true)};
         w.claims = {Claim()};
         w.volumes = {Volume()};
         w.snapshots = {Snapshot(std::nullopt)};
       },
       .snapshot = "class= finalizers= bound= ready=false error=Failed to set default snapshot class "
                   "with error 2 default snapshot classes were found",
       .content = "none",
       .events = {"Warning SetDefaultSnapshotClassFailed Failed to set default snapshot class with "
                  "error 2 default snapshot classes were found"},
       .ok = false},
      {.name = "1-5 a class that does not exist",
       .given = [](World& w) {
         w.claims = {Claim()};
         w.volumes = {Volume()};
         w.snapshots = {Snapshot("gold")};
       },
       .snapshot = "class=gold finalizers= bound= ready=false error=Failed to get snapshot class with "
                   "error volumesnapshotclass.snapshot.storage.k8s.io \"gold\" not found",
       .content = "none",
       .events = {"Warning GetSnapshotClassFailed Failed to get snapshot class with error "
                  "volumesnapshotclass.snapshot.storage.k8s.io \"gold\" not found"},
       .ok = false},
      {.name = "1-6 the same error is not written again",
       .given = [](World& w) {
         w.snapshots = {Snapshot("gold")};
         w.snapshots[0].status.emplace().error = api::VolumeSnapshotError{
             .message = "Failed to get snapshot class with error "
                        "volumesnapshotclass.snapshot.storage.k8s.io \"gold\" not found"};
       },
       .snapshot = "class=gold finalizers= bound= ready=false error=Failed to get snapshot class with "
                   "error volumesnapshotclass.snapshot.storage.k8s.io \"gold\" not found",
       .content = "none",
       .claim = "gone",
       .ok = false},
      {.name = "1-7 a claim not bound yet",
       .given = [](World& w) {
         w.classes = {Class("loop")};
         w.claims = {Claim(false)};
         w.snapshots = {Snapshot()};
       },
       .snapshot = "class=loop finalizers=S bound= ready=false error=Failed to create snapshot content "
                   "with error failed to get input parameters to create snapshot s1: \"the PVC data "
                   "is not yet bound to a PV, will not attempt to take a snapshot\"",
       .content = "none",
       .claim = "S",
       .events = {"Warning SnapshotContentCreationFailed Failed to create snapshot content with error "
                  "failed to get input parameters to create snapshot s1: \"the PVC data is not yet "
                  "bound to a PV, will not attempt to take a snapshot\""},
       .ok = false},
      {.name = "1-8 a source claim that is being deleted",
       .given = [](World& w) {
         w.classes = {Class("loop")};
         w.claims = {Claim()};
         w.claims[0].metadata.deletion_timestamp = api::Time::FromUnixSeconds(1);
         w.claims[0].metadata.finalizers = {"kubernetes.io/pvc-protection"};
         w.volumes = {Volume()};
         w.snapshots = {Snapshot()};
       },
       .snapshot = "class=loop finalizers=S bound= ready=false error=Failed to create snapshot content "
                   "with error snapshot controller failed to update data on API server: cannot add "
                   "finalizer on claim because it is being deleted",
       .content = "none",
       .claim = "?",
       .events = {"Warning SnapshotContentCreationFailed Failed to create snapshot content with error "
                  "snapshot controller failed to update data on API server: cannot add finalizer on "
                  "claim because it is being deleted"},
       .ok = false},
      {.name = "2-1 the snapshot follows its content to ready, and lets its claim go",
       .given = [](World& w) {
         w.classes = {Class("loop")};
         w.claims = {Claim()};
         w.claims[0].metadata.finalizers = {kClaimSource};
         w.volumes = {Volume()};
         w.snapshots = {Bound(Snapshot(), {kAsSource})};
         w.contents = {Content()};
         w.contents[0].metadata.finalizers = {"snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"};
         w.contents[0].status = ReadyStatus();
       },
       .snapshot = "class=loop finalizers=SB bound=snapcontent-uid-1 ready=true size=16Mi created",
       .content = "snapcontent-uid-1 handle=vol-1 uid=uid-1 policy=Delete finalizer",
       .claim = "S",
       .events = {"Normal SnapshotCreated Snapshot default/s1 was successfully created by the CSI "
                  "driver.",
                  "Normal SnapshotReady Snapshot default/s1 is ready to use."}},
      {.name = "2-2 a ready snapshot's claim is let go",
       .given = [](World& w) {
         w.classes = {Class("loop")};
         w.claims = {Claim()};
         w.claims[0].metadata.finalizers = {kClaimSource};
         w.volumes = {Volume()};
         w.snapshots = {Bound(Snapshot(), {kAsSource, kBound})};
         w.snapshots[0].status->ready_to_use = true;
         w.contents = {Content()};
         w.contents[0].status = ReadyStatus();
       },
       .snapshot = "class=loop finalizers=SB bound=snapcontent-uid-1 ready=true",
       .content = "snapcontent-uid-1 handle=vol-1 uid=uid-1 policy=Delete",
       .claim = ""},
      {.name = "2-3 a content's error shows on its snapshot",
       .given = [](World& w) {
         w.classes = {Class("loop")};
         w.claims = {Claim()};
         w.volumes = {Volume()};
         w.snapshots = {Bound(Snapshot(), {kAsSource})};
         w.contents = {Content()};
         w.contents[0].status.emplace().error = api::VolumeSnapshotError{.message = "disk full"};
       },
       .snapshot = "class=loop finalizers=SB bound=snapcontent-uid-1 ready=false error=disk full",
       .content = "snapcontent-uid-1 handle=vol-1 uid=uid-1 policy=Delete"},
      {.name = "3-1 a pre-provisioned content is bound",
       .given = [](World& w) {
         w.snapshots = {PreProvisioned()};
         w.contents = {Imported()};
       },
       .snapshot = "class= finalizers=S bound=imported ready=false",
       .content = "imported handle=snap-0001 uid=uid-1 policy=Retain",
       .claim = "gone"},
      {.name = "3-2 the pre-provisioned content is missing",
       .given = [](World& w) { w.snapshots = {PreProvisioned()}; },
       .snapshot = "class= finalizers=S bound= ready=false error=VolumeSnapshotContent is missing",
       .content = "none",
       .claim = "gone",
       .events = {"Warning SnapshotContentMissing VolumeSnapshotContent is missing"},
       .ok = false},
      {.name = "3-3 a content bound to another snapshot",
       .given = [](World& w) {
         w.snapshots = {PreProvisioned()};
         w.contents = {Imported()};
         w.contents[0].spec.volume_snapshot_ref.name = "other";
       },
       .snapshot = "class= finalizers=S bound= ready=false error=VolumeSnapshotContent [imported] is "
                   "bound to a different snapshot",
       .content = "imported handle=snap-0001 uid= policy=Retain",
       .claim = "gone",
       .events = {"Warning SnapshotContentMisbound VolumeSnapshotContent [imported] is bound to a "
                  "different snapshot"},
       .ok = false},
      {.name = "2-4 a bound snapshot whose content went is not taken again",
       .given = [](World& w) {
         w.classes = {Class("loop")};
         w.claims = {Claim()};
         w.volumes = {Volume()};
         w.snapshots = {Bound(Snapshot(), {kAsSource})};
       },
       .snapshot = "class=loop finalizers=S bound=snapcontent-uid-1 ready=false error=VolumeSnapshotContent is missing",
       .content = "none",
       .events = {"Warning SnapshotContentMissing VolumeSnapshotContent is missing"},
       .ok = false},
      {.name = "4-1 delete under Delete: the content goes first",
       .given = [](World& w) {
         w.classes = {Class("loop")};
         w.snapshots = {Deleting(Bound(Snapshot(), {kAsSource, kBound}))};
         w.contents = {Content()};
         w.contents[0].metadata.finalizers = {"snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"};
       },
       .snapshot = "class=loop finalizers=B bound=snapcontent-uid-1 ready=false",
       .content = "snapcontent-uid-1 handle=vol-1 uid=uid-1 policy=Delete deleting being-deleted finalizer",
       .claim = "gone"},
      {.name = "4-2 delete under Delete once the content is gone",
       .given = [](World& w) {
         w.classes = {Class("loop")};
         w.snapshots = {Deleting(Bound(Snapshot(), {kBound}))};
       },
       .snapshot = "gone",
       .content = "none",
       .claim = "gone"},
      {.name = "4-3 delete under Retain: the content stays",
       .given = [](World& w) {
         w.classes = {Class("loop", false, "Retain")};
         w.snapshots = {Deleting(Bound(Snapshot(), {kAsSource}))};
         w.contents = {Content("Retain")};
       },
       .snapshot = "gone",
       .content = "snapcontent-uid-1 handle=vol-1 uid=uid-1 policy=Retain being-deleted",
       .claim = "gone"},
      {.name = "4-4 delete waits for a claim being restored from it",
       .given = [](World& w) {
         w.classes = {Class("loop")};
         w.snapshots = {Deleting(Bound(Snapshot(), {kAsSource, kBound}))};
         w.contents = {Content()};
         api::PersistentVolumeClaim restore = Claim(false);
         restore.metadata.name = "restored";
         restore.status.phase = "Pending";
         restore.spec.data_source = api::TypedLocalObjectReference{
             .api_group = "snapshot.storage.k8s.io", .kind = "VolumeSnapshot", .name = "s1"};
         w.claims = {restore};
       },
       .snapshot = "class=loop finalizers=SB bound=snapcontent-uid-1 ready=false",
       .content = "snapcontent-uid-1 handle=vol-1 uid=uid-1 policy=Delete",
       .claim = "",
       .events = {"Warning SnapshotDeletePending Snapshot is being used to restore a PVC"}},
      {.name = "4-5 the source claim is let go when its only snapshot goes",
       .given = [](World& w) {
         w.classes = {Class("loop")};
         w.claims = {Claim()};
         w.claims[0].metadata.finalizers = {kClaimSource};
         w.snapshots = {Deleting(Bound(Snapshot(), {kAsSource, kBound}))};
         w.contents = {Content()};
       },
       .snapshot = "class=loop finalizers=B bound=snapcontent-uid-1 ready=false",
       .content = "none",
       .claim = ""},
      {.name = "5-1 a bound content gets its finalizer",
       .given = [](World& w) {
         w.snapshots = {Bound(Snapshot(), {kAsSource})};
         w.contents = {Content()};
       },
       .sync_content = true,
       .snapshot = "class=loop finalizers=S bound=snapcontent-uid-1 ready=false",
       .content = "snapcontent-uid-1 handle=vol-1 uid=uid-1 policy=Delete finalizer",
       .claim = "gone"},
      {.name = "5-2 a content is marked when its snapshot is being deleted",
       .given = [](World& w) {
         w.snapshots = {Deleting(Bound(Snapshot(), {kAsSource, kBound}))};
         w.contents = {Content()};
         w.contents[0].metadata.finalizers = {"snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"};
       },
       .sync_content = true,
       .snapshot = "class=loop finalizers=SB bound=snapcontent-uid-1 ready=false",
       .content = "snapcontent-uid-1 handle=vol-1 uid=uid-1 policy=Delete being-deleted finalizer",
       .claim = "gone",
       .enqueued = "default/s1"},
      {.name = "5-3 a pre-provisioned content wakes the snapshot that names it",
       .given = [](World& w) {
         w.snapshots = {PreProvisioned()};
         w.contents = {Imported()};
       },
       .sync_content = true,
       .snapshot = "class= finalizers=",
       .content = "imported handle=snap-0001 uid= policy=Retain",
       .claim = "gone",
       .enqueued = "default/s1"},
      {.name = "5-4 a content whose snapshot is gone is kept",
       .given = [](World& w) {
         w.contents = {Content()};
         w.contents[0].metadata.finalizers = {"snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"};
       },
       .sync_content = true,
       .snapshot = "gone",
       .content = "snapcontent-uid-1 handle=vol-1 uid=uid-1 policy=Delete finalizer",
       .claim = "gone"},
  };
}

TEST(SnapshotControllerTest, Table) {
  for (const Row& row : Rows()) {
    SCOPED_TRACE(row.name);
    World w;
    row.given(w);
    for (const auto& c : w.classes) w.api.fake<api::VolumeSnapshotClass>().Seed(c);
    for (const auto& c : w.claims) w.api.fake<api::PersistentVolumeClaim>().Seed(c);
    for (const auto& v : w.volumes) w.api.fake<api::PersistentVolume>().Seed(v);
    for (const auto& c : w.contents) w.api.fake<api::VolumeSnapshotContent>().Seed(c);
    std::vector<api::VolumeSnapshot> seeded;
    for (const auto& s : w.snapshots) seeded.push_back(w.api.fake<api::VolumeSnapshot>().Seed(s));
    std::vector<std::string> events;
    std::vector<std::string> enqueued;
    os::testing::FakeClock clock;
    SnapshotController ctrl(
        w.api,
        [&](const api::ObjectReference&, std::string_view type, std::string_view reason,
            std::string message) {
          events.push_back(std::string(type) + " " + std::string(reason) + " " + message);
        },
        clock, [&](const std::string& key) { enqueued.push_back(key); });
    Status s = row.sync_content
                   ? ctrl.SyncContent(w.api.fake<api::VolumeSnapshotContent>().Objects().begin()->second)
                   : ctrl.SyncSnapshot(seeded.at(0));
    EXPECT_EQ(s.ok(), row.ok) << s.ToString();
    EXPECT_EQ(SnapshotState(w.api), row.snapshot);
    EXPECT_EQ(ContentState(w.api), row.content);
    if (row.claim != "gone" || !w.claims.empty()) EXPECT_EQ(ClaimFinalizers(w.api), row.claim);
    EXPECT_EQ(Join(events), Join(row.events));
    EXPECT_EQ(Join(enqueued), row.enqueued);
  }
}

}  // namespace
}  // namespace kvol::controller::snapshot
