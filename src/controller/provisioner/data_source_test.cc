// A claim's data source, resolved as external-provisioner resolves it: one row per state of the
// source snapshot or claim, with the content source or the error the claim's event shows.
#include "controller/provisioner/data_source.h"

#include <gtest/gtest.h>

#include <functional>

#include "api/snapshot.h"
#include "client/testing/fake_client.h"

namespace kvol::controller::provisioner {
namespace {

using client::testing::FakeClient;

constexpr char kDriver[] = "loop.csi.kvol.io";

api::StorageClass Class() {
  api::StorageClass c;
  c.metadata.name = "loop";
  c.provisioner = kDriver;
  return c;
}

api::PersistentVolumeClaim NewClaim(std::string kind, std::string size = "16Mi") {
  api::PersistentVolumeClaim c;
  c.metadata.namespace_ = "default";
  c.metadata.name = "restored";
  c.spec.resources.requests["storage"] = api::Quantity::MustParse(size);
  c.spec.storage_class_name = "loop";
  if (kind == "VolumeSnapshot") {
    c.spec.data_source = api::TypedLocalObjectReference{
        .api_group = "snapshot.storage.k8s.io", .kind = kind, .name = "s1"};
  } else {
    c.spec.data_source = api::TypedLocalObjectReference{.kind = kind, .name = "data"};
  }
  return c;
}

void SeedSnapshot(FakeClient& api, bool ready, std::string restore_size = "16Mi") {
  api::VolumeSnapshot vs;
  vs.metadata.namespace_ = "default";
  vs.metadata.name = "s1";
  vs.metadata.uid = "uid-1";
  auto& st = vs.status.emplace();
  st.bound_volume_snapshot_content_name = "snapcontent-uid-1";
  st.ready_to_use = ready;
  st.restore_size = api::Quantity::MustParse(restore_size);
  api.fake<api::VolumeSnapshot>().Seed(vs);
  api::VolumeSnapshotContent c;
  c.metadata.name = "snapcontent-uid-1";
  c.spec.volume_snapshot_ref = {.namespace_ = "default", .name = "s1", .uid = "uid-1"};
  c.spec.driver = kDriver;
  c.spec.source.volume_handle = "vol-1";
  c.status.emplace().snapshot_handle = "snap-1";
  api.fake<api::VolumeSnapshotContent>().Seed(c);
}

void SeedSourceClaim(FakeClient& api, std::string phase, std::string mode = "Filesystem") {
  api::PersistentVolumeClaim src;
  src.metadata.namespace_ = "default";
  src.metadata.name = "data";
  src.metadata.uid = "claim-uid";
  src.spec.storage_class_name = "loop";
  src.spec.volume_name = "pv-1";
  src.spec.volume_mode = std::move(mode);
  src.spec.resources.requests["storage"] = api::Quantity::MustParse("16Mi");
  src.status.phase = std::move(phase);
  api.fake<api::PersistentVolumeClaim>().Seed(src);
  api::PersistentVolume pv;
  pv.metadata.name = "pv-1";
  auto& csi = pv.spec.csi.emplace();
  csi.driver = kDriver;
  csi.volume_handle = "vol-1";
  pv.spec.claim_ref = api::ObjectReference{.namespace_ = "default", .name = "data", .uid = "claim-uid"};
  pv.status.phase = "Bound";
  api.fake<api::PersistentVolume>().Seed(pv);
}

struct Row {
  const char* name;
  std::function<void(FakeClient&)> given;
  api::PersistentVolumeClaim claim;
  std::string want;  // "snapshot:ID", "volume:ID", or the error message
};

TEST(DataSourceTest, Table) {
  const std::string snap_err = "error getting handle for DataSource Type VolumeSnapshot by Name s1: ";
  const std::string clone_err =
      "error getting handle for DataSource Type PersistentVolumeClaim by Name data: ";
  const std::vector<Row> rows = {
      {.name = "a ready snapshot",
       .given = [](FakeClient& a) { SeedSnapshot(a, true); },
       .claim = NewClaim("VolumeSnapshot"),
       .want = "snapshot:snap-1"},
      {.name = "a snapshot not ready yet",
       .given = [](FakeClient& a) { SeedSnapshot(a, false); },
       .claim = NewClaim("VolumeSnapshot"),
       .want = snap_err + "snapshot s1 is not Ready"},
      {.name = "a snapshot that does not exist",
       .given = [](FakeClient&) {},
       .claim = NewClaim("VolumeSnapshot"),
       .want = snap_err + "error getting snapshot s1 from api server: volumesnapshots \"s1\" not found"},
      {.name = "a claim smaller than the snapshot",
       .given = [](FakeClient& a) { SeedSnapshot(a, true, "1Gi"); },
       .claim = NewClaim("VolumeSnapshot"),
       .want = snap_err + "requested volume size 16777216 is less than the size 1073741824 for the "
                          "source snapshot s1"},
      {.name = "a clone",
       .given = [](FakeClient& a) { SeedSourceClaim(a, "Bound"); },
       .claim = NewClaim("PersistentVolumeClaim"),
       .want = "volume:vol-1"},
      {.name = "a clone of a claim not bound",
       .given = [](FakeClient& a) { SeedSourceClaim(a, "Pending"); },
       .claim = NewClaim("PersistentVolumeClaim"),
       .want = clone_err + "the PVC DataSource data must have a status of Bound.  Got Pending"},
      {.name = "a clone smaller than its source",
       .given = [](FakeClient& a) { SeedSourceClaim(a, "Bound"); },
       .claim = NewClaim("PersistentVolumeClaim", "8Mi"),
       .want = clone_err + "error, new PVC request must be greater than or equal in size to the "
                           "specified PVC data source, requested 8Mi but source is 16Mi"},
      {.name = "a clone in another class",
       .given = [](FakeClient& a) { SeedSourceClaim(a, "Bound"); },
       .claim = [] {
         auto c = NewClaim("PersistentVolumeClaim");
         c.spec.storage_class_name = "gold";
         return c;
       }(),
       .want = clone_err + "the source PVC and destination PVCs must be in the same storage class "
                           "for cloning.  Source is in loop, but new PVC is in gold"},
      {.name = "a clone in another volume mode",
       .given = [](FakeClient& a) { SeedSourceClaim(a, "Bound", "Block"); },
       .claim = NewClaim("PersistentVolumeClaim"),
       .want = clone_err + "the source PVC and destination PVCs must have the same volume mode for "
                           "cloning.  Source is Block, but new PVC requested Filesystem"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    FakeClient api;
    row.given(api);
    const DataSource source = DataSourceOf(row.claim);
    auto got = ContentSourceFor(api, row.claim, Class(), source);
    std::string text;
    if (!got.ok()) {
      text = got.status().message();
      EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
    } else if (got->has_snapshot()) {
      text = "snapshot:" + got->snapshot().snapshot_id();
    } else {
      text = "volume:" + got->volume().volume_id();
    }
    EXPECT_EQ(text, row.want);
  }
}

TEST(DataSourceTest, WhichSourceAClaimNames) {
  api::PersistentVolumeClaim c = NewClaim("VolumeSnapshot");
  EXPECT_EQ(DataSourceOf(c).kind, SourceKind::kSnapshot);
  c.spec.data_source = api::TypedLocalObjectReference{.api_group = "example.com", .kind = "Backup", .name = "b"};
  EXPECT_EQ(DataSourceOf(c).kind, SourceKind::kOther);
  c.spec.data_source = std::nullopt;
  EXPECT_EQ(DataSourceOf(c).kind, SourceKind::kNone);
  c.spec.data_source_ref = api::TypedObjectReference{.kind = "PersistentVolumeClaim", .name = "data"};
  EXPECT_EQ(DataSourceOf(c).kind, SourceKind::kClaim);
}

}  // namespace
}  // namespace kvol::controller::provisioner
