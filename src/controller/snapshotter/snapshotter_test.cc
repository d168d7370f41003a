// The built-in CSI snapshotter against a FakeClient and driver calls that record what they were
// asked: which contents it serves, creating until ready, checking pre-provisioned snapshots,
// deleting under each policy, and its errors.
#include "controller/snapshotter/snapshotter.h"

#include <gtest/gtest.h>

#include "client/testing/fake_client.h"
#include "controller/snapshot/snapshot_controller.h"
#include "os/testing/fake_clock.h"

namespace kvol::controller::snapshotter {
namespace {

using client::testing::FakeClient;
namespace pb = ::csi::v1;

constexpr char kDriver[] = "loop.csi.kvol.io";

bool HasFinalizer(const api::VolumeSnapshotContent& c) {
  const auto& f = c.metadata.finalizers;
  return std::find(f.begin(), f.end(), api::kContentBoundFinalizer) != f.end();
}

class FakeCalls final : public SnapshotCalls {
 public:
  StatusOr<bool> Supported(const volume::plugins::CsiDriver&) override { return supported; }
  StatusOr<pb::Snapshot> Create(const volume::plugins::CsiDriver&,
                                const pb::CreateSnapshotRequest& req) override {
    calls.push_back("create " + req.name() + " of " + req.source_volume_id());
    if (!create_error.ok()) return create_error;
    pb::Snapshot s;
    s.set_snapshot_id("snap-" + req.source_volume_id());
    s.set_source_volume_id(req.source_volume_id());
    s.set_size_bytes(16 << 20);
    s.set_ready_to_use(ready);
    return s;
  }
  StatusOr<std::optional<pb::Snapshot>> Get(const volume::plugins::CsiDriver&,
                                            const std::string& id,
                                            const std::map<std::string, std::string>&) override {
    calls.push_back("list " + id);
    if (!exists) return std::optional<pb::Snapshot>();
    pb::Snapshot s;
    s.set_snapshot_id(id);
    s.set_size_bytes(1 << 20);
    s.set_ready_to_use(true);
    return std::optional<pb::Snapshot>(s);
  }
  Status Delete(const volume::plugins::CsiDriver&, const std::string& id,
                const std::map<std::string, std::string>&) override {
    calls.push_back("delete " + id);
    return delete_error;
  }
  std::vector<std::string> calls;
  bool supported = true;
  bool ready = true;
  bool exists = true;
  Status create_error;
  Status delete_error;
};

class SnapshotterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    drivers_.Add(std::make_shared<volume::plugins::CsiDriver>(
        volume::plugins::CsiDriver{.name = kDriver, .endpoint = "unix:///none"}));
    api::VolumeSnapshotClass cls;
    cls.metadata.name = "loop";
    cls.driver = kDriver;
    cls.deletion_policy = "Delete";
    api_.fake<api::VolumeSnapshotClass>().Seed(cls);
  }
  void Start(bool central = true, std::string node = "node-1") {
    Options o;
    o.node_name = std::move(node);
    o.drivers = &drivers_;
    o.central = central;
    o.calls = &calls_;
    o.clock = &clock_;
    o.events = [this](const api::ObjectReference&, std::string_view type, std::string_view reason,
                      std::string msg) {
      events_.push_back(std::string(type) + " " + std::string(reason) + " " + msg);
    };
    ctrl_ = std::make_unique<Controller>(api_, o);
  }
  api::VolumeSnapshotContent Seed(api::VolumeSnapshotContent c) {
    return api_.fake<api::VolumeSnapshotContent>().Seed(std::move(c));
  }
  api::VolumeSnapshotContent Stored() {
    return api_.fake<api::VolumeSnapshotContent>().Objects().begin()->second;
  }
  static api::VolumeSnapshotContent Dynamic() {
    api::VolumeSnapshotContent c;
    c.metadata.name = "snapcontent-uid-1";
    c.metadata.finalizers = {std::string(api::kContentBoundFinalizer)};
    c.spec.volume_snapshot_ref = {.namespace_ = "default", .name = "s1", .uid = "uid-1"};
    c.spec.source.volume_handle = "vol-1";
    c.spec.driver = kDriver;
    c.spec.deletion_policy = "Delete";
    c.spec.volume_snapshot_class_name = "loop";
    return c;
  }
  static api::VolumeSnapshotContent Deleting(api::VolumeSnapshotContent c) {
    c.metadata.deletion_timestamp = api::Time::FromUnixSeconds(1);
    c.metadata.annotations[std::string(api::kAnnSnapshotBeingDeleted)] = "yes";
    c.status.emplace().snapshot_handle = "snap-vol-1";
    c.status->ready_to_use = true;
    return c;
  }

  FakeClient api_;
  FakeCalls calls_;
  volume::plugins::CsiDrivers drivers_;
  os::testing::FakeClock clock_;
  std::vector<std::string> events_;
  std::unique_ptr<Controller> ctrl_;
};

TEST_F(SnapshotterTest, TakesTheSnapshotAndFillsTheStatus) {
  Start();
  ASSERT_TRUE(ctrl_->SyncContent(Seed(Dynamic())).ok());
  EXPECT_EQ(calls_.calls, std::vector<std::string>{"create snapshot-uid-1 of vol-1"});
  const auto c = Stored();
  ASSERT_TRUE(c.status.has_value());
  EXPECT_EQ(c.status->snapshot_handle, "snap-vol-1");
  EXPECT_EQ(c.status->ready_to_use, true);
  EXPECT_EQ(c.status->restore_size, 16 << 20);
  EXPECT_TRUE(c.status->creation_time.has_value());
  EXPECT_FALSE(c.metadata.annotations.count(std::string(api::kAnnSnapshotBeingCreated)));
  // Ready: nothing more to ask.
  ASSERT_TRUE(ctrl_->SyncContent(c).ok());
  EXPECT_EQ(calls_.calls.size(), 1u);
}

TEST_F(SnapshotterTest, AsksAgainUntilTheDriverSaysReady) {
  calls_.ready = false;
  Start();
  EXPECT_EQ(ctrl_->SyncContent(Seed(Dynamic())).code(), StatusCode::kUnavailable);
  EXPECT_EQ(Stored().status->ready_to_use, false);
  calls_.ready = true;
  ASSERT_TRUE(ctrl_->SyncContent(Stored()).ok());
  EXPECT_EQ(calls_.calls.size(), 2u);  // the same name both times: the same snapshot
  EXPECT_EQ(calls_.calls[1], calls_.calls[0]);
  EXPECT_EQ(Stored().status->ready_to_use, true);
}

TEST_F(SnapshotterTest, ADriverErrorGoesToTheContent) {
  calls_.create_error = InvalidArgumentError("volume vol-1 not found");
  Start();
  EXPECT_FALSE(ctrl_->SyncContent(Seed(Dynamic())).ok());
  const auto c = Stored();
  ASSERT_TRUE(c.status && c.status->error);
  const std::string want =
      "Failed to create snapshot: failed to take snapshot of the volume vol-1: \"volume vol-1 not "
      "found\"";
  EXPECT_EQ(c.status->error->message, want);
  EXPECT_EQ(events_, std::vector<std::string>{"Warning SnapshotCreationFailed " + want});
  // A final error: the driver is not making it, so the content may be deleted.
  EXPECT_FALSE(c.metadata.annotations.count(std::string(api::kAnnSnapshotBeingCreated)));
  // The same error again is not written or told again.
  EXPECT_FALSE(ctrl_->SyncContent(c).ok());
  EXPECT_EQ(events_.size(), 1u);
}

TEST_F(SnapshotterTest, ATimeoutKeepsTheBeingCreatedMark) {
  calls_.create_error = DeadlineExceededError("deadline exceeded");
  Start();
  EXPECT_FALSE(ctrl_->SyncContent(Seed(Dynamic())).ok());
  EXPECT_TRUE(Stored().metadata.annotations.count(std::string(api::kAnnSnapshotBeingCreated)));
  // Deleted meanwhile: the driver is asked again until it answers, and only then does the
  // content go, with its storage snapshot: nothing is leaked.
  auto c = Deleting(Stored());
  c.status.reset();
  EXPECT_FALSE(ctrl_->SyncContent(Seed(c)).ok());
  EXPECT_TRUE(HasFinalizer(Stored()));
  EXPECT_EQ(calls_.calls.size(), 2u);
  calls_.create_error = OkStatus();
  EXPECT_FALSE(ctrl_->SyncContent(Stored()).ok());  // made and known: deleted next time
  EXPECT_FALSE(Stored().metadata.annotations.count(std::string(api::kAnnSnapshotBeingCreated)));
  ASSERT_TRUE(ctrl_->SyncContent(Stored()).ok());
  EXPECT_EQ(calls_.calls.back(), "delete snap-vol-1");
  EXPECT_TRUE(api_.fake<api::VolumeSnapshotContent>().Objects().empty());
}

TEST_F(SnapshotterTest, ChecksAPreProvisionedSnapshot) {
  Start();
  auto c = Dynamic();
  c.spec.source.volume_handle.reset();
  c.spec.source.snapshot_handle = "snap-0001";
  ASSERT_TRUE(ctrl_->SyncContent(Seed(c)).ok());
  EXPECT_EQ(calls_.calls, std::vector<std::string>{"list snap-0001"});
  EXPECT_EQ(Stored().status->ready_to_use, true);
  EXPECT_EQ(Stored().status->restore_size, 1 << 20);

  calls_.exists = false;
  auto missing = c;
  missing.metadata.name = "gone";
  EXPECT_FALSE(ctrl_->SyncContent(Seed(missing)).ok());
  EXPECT_EQ(events_.back(),
            "Warning SnapshotContentCheckandUpdateFailed Failed to check and update snapshot "
            "content: failed to list snapshot for content gone: \"can not find snapshot for "
            "snapshotID snap-0001\"");
}

TEST_F(SnapshotterTest, DeletesUnderDeleteAndLetsGo) {
  Start();
  ASSERT_TRUE(ctrl_->SyncContent(Seed(Deleting(Dynamic()))).ok());
  EXPECT_EQ(calls_.calls, std::vector<std::string>{"delete snap-vol-1"});
  // The fake store drops an object being deleted once its last finalizer goes.
  EXPECT_TRUE(api_.fake<api::VolumeSnapshotContent>().Objects().empty());
}

TEST_F(SnapshotterTest, RetainKeepsTheStorageSnapshot) {
  Start();
  auto c = Deleting(Dynamic());
  c.spec.deletion_policy = "Retain";
  ASSERT_TRUE(ctrl_->SyncContent(Seed(c)).ok());
  EXPECT_TRUE(calls_.calls.empty());
  EXPECT_TRUE(api_.fake<api::VolumeSnapshotContent>().Objects().empty());
}

TEST_F(SnapshotterTest, AFailedDeleteKeepsTheFinalizer) {
  calls_.delete_error = UnavailableError("busy");
  Start();
  EXPECT_FALSE(ctrl_->SyncContent(Seed(Deleting(Dynamic()))).ok());
  EXPECT_TRUE(HasFinalizer(Stored()));
  EXPECT_EQ(events_, std::vector<std::string>{"Warning SnapshotDeleteError Failed to delete snapshot"});
}

TEST_F(SnapshotterTest, ABoundContentDeletedByHandIsKept) {
  Start();
  auto c = Deleting(Dynamic());
  c.metadata.annotations.clear();  // its snapshot is not being deleted
  ASSERT_TRUE(ctrl_->SyncContent(Seed(c)).ok());
  EXPECT_TRUE(calls_.calls.empty());
  EXPECT_TRUE(HasFinalizer(Stored()));
}

TEST_F(SnapshotterTest, ServesOnlyWhatThisNodeReaches) {
  struct Row {
    const char* name;
    bool central;
    std::string label;  // managed-by
    bool supported;
    bool served;
  };
  const std::vector<Row> rows = {
      {.name = "unlabelled, central", .central = true, .label = "", .supported = true, .served = true},
      {.name = "unlabelled, not central", .central = false, .label = "", .supported = true, .served = false},
      {.name = "this node's", .central = false, .label = "node-1", .supported = true, .served = true},
      {.name = "another node's", .central = true, .label = "node-2", .supported = true, .served = false},
      {.name = "no snapshots in the driver", .central = true, .label = "", .supported = false, .served = false},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    calls_.calls.clear();
    calls_.supported = row.supported;
    Start(row.central);
    auto c = Dynamic();
    if (!row.label.empty()) c.metadata.labels[std::string(snapshot::kManagedByLabel)] = row.label;
    ASSERT_TRUE(ctrl_->SyncContent(Seed(c)).ok());
    EXPECT_EQ(!calls_.calls.empty(), row.served);
    api_.fake<api::VolumeSnapshotContent>().Seed(Dynamic());  // back as it was
  }
}

}  // namespace
}  // namespace kvol::controller::snapshotter
