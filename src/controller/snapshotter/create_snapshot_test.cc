// What the built-in CSI snapshotter asks a driver for, and the content status it makes of the
// answer.
#include "controller/snapshotter/create_snapshot.h"

#include <gtest/gtest.h>

namespace kvol::controller::snapshotter {
namespace {

api::VolumeSnapshotContent Content() {
  api::VolumeSnapshotContent c;
  c.metadata.name = "snapcontent-uid-1";
  c.spec.volume_snapshot_ref = {.namespace_ = "default", .name = "s1", .uid = "uid-1"};
  c.spec.source.volume_handle = "vol-1";
  c.spec.driver = "loop.csi.kvol.io";
  c.spec.deletion_policy = "Delete";
  return c;
}

struct ParamRow {
  const char* name;
  std::map<std::string, std::string> given;
  std::map<std::string, std::string> sent;
  std::string error;
};

TEST(CreateSnapshotTest, ParametersWithoutTheSnapshottersOwn) {
  const std::vector<ParamRow> rows = {
      {.name = "plain parameters pass", .given = {{"speed", "fast"}}, .sent = {{"speed", "fast"}}},
      {.name = "secrets stay here",
       .given = {{"csi.storage.k8s.io/snapshotter-secret-name", "s"},
                 {"csi.storage.k8s.io/snapshotter-secret-namespace", "n"},
                 {"csi.storage.k8s.io/snapshotter-list-secret-name", "l"},
                 {"csi.storage.k8s.io/snapshotter-list-secret-namespace", "n"},
                 {"zone", "a"}},
       .sent = {{"zone", "a"}}},
      {.name = "an unknown reserved key",
       .given = {{"csi.storage.k8s.io/fstype", "xfs"}},
       .error = "failed to remove CSI Parameters of prefixed keys: found unknown parameter key "
                "\"csi.storage.k8s.io/fstype\" with reserved namespace csi.storage.k8s.io/"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    auto got = DriverParameters(row.given);
    if (!row.error.empty()) {
      EXPECT_EQ(got.status().message(), row.error);
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, row.sent);
  }
}

TEST(CreateSnapshotTest, RequestNamesTheSnapshotAfterItsVolumeSnapshot) {
  api::VolumeSnapshotClass cls;
  cls.parameters = {{"speed", "fast"}, {"csi.storage.k8s.io/snapshotter-secret-name", "s"}};
  auto req = MakeCreateSnapshotRequest(Content(), cls, {{"token", "t"}});
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  EXPECT_EQ(req->name(), "snapshot-uid-1");
  EXPECT_EQ(req->source_volume_id(), "vol-1");
  EXPECT_EQ(req->parameters().size(), 1u);
  EXPECT_EQ(req->parameters().at("speed"), "fast");
  EXPECT_EQ(req->secrets().at("token"), "t");

  api::VolumeSnapshotContent unbound = Content();
  unbound.spec.volume_snapshot_ref.uid.clear();
  EXPECT_EQ(MakeCreateSnapshotRequest(unbound, cls, {}).status().message(),
            "Corrupted snapshot object, it is missing UID");
}

TEST(CreateSnapshotTest, StatusFromTheDriversAnswer) {
  ::csi::v1::Snapshot s;
  s.set_snapshot_id("snap-1");
  s.set_size_bytes(16 << 20);
  s.mutable_creation_time()->set_seconds(1'700'000'000);
  s.mutable_creation_time()->set_nanos(5);
  s.set_ready_to_use(false);
  api::VolumeSnapshotContent c = Content();
  auto st = ContentStatus(c, s, 42);
  EXPECT_EQ(st.snapshot_handle, "snap-1");
  EXPECT_EQ(st.restore_size, 16 << 20);
  EXPECT_EQ(st.creation_time, int64_t{1'700'000'000} * 1'000'000'000 + 5);
  EXPECT_EQ(st.ready_to_use, false);

  // Later answers make it ready and clear an error; what was set stays.
  c.status = st;
  c.status->error = api::VolumeSnapshotError{.message = "slow"};
  s.set_ready_to_use(true);
  s.set_size_bytes(0);
  s.clear_creation_time();
  st = ContentStatus(c, s, 42);
  EXPECT_EQ(st.ready_to_use, true);
  EXPECT_FALSE(st.error.has_value());
  EXPECT_EQ(st.restore_size, 16 << 20);
  EXPECT_EQ(st.creation_time, int64_t{1'700'000'000} * 1'000'000'000 + 5);

  // No creation time from the driver: now.
  EXPECT_EQ(ContentStatus(Content(), s, 42).creation_time, 42);
}

}  // namespace
}  // namespace kvol::controller::snapshotter
