// The bundled driver over real gRPC, with real loop devices and mounts (run as root): each RPC's
// errors as the CSI spec words them, each RPC's idempotency, and the data a volume holds through
// publication, snapshots, clones and growth. Everything it makes is undone, even on failure.
#include "csi/driver/driver.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "csi/proto/csi.grpc.pb.h"

namespace kvol::csi::driver {
namespace {

namespace fs = std::filesystem;
namespace pb = ::csi::v1;
using grpc::StatusCode;

constexpr int64_t kMiB = int64_t{1} << 20;

pb::VolumeCapability MountCapability(const std::string& fs_type = "") {
  pb::VolumeCapability c;
  c.mutable_mount()->set_fs_type(fs_type);
  c.mutable_access_mode()->set_mode(pb::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
  return c;
}

pb::VolumeCapability BlockCapability() {
  pb::VolumeCapability c;
  c.mutable_block();
  c.mutable_access_mode()->set_mode(pb::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
  return c;
}

class DriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/var/tmp/kvol-csi-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto d = Driver::Start({.endpoint = "unix://" + dir_ + "/csi.sock",
                            .node_id = "node-1",
                            .data_dir = dir_ + "/data",
                            .max_volumes_per_node = 4});
    ASSERT_TRUE(d.ok()) << d.status().message();
    driver_ = *std::move(d);
    auto channel =
        grpc::CreateChannel("unix://" + dir_ + "/csi.sock", grpc::InsecureChannelCredentials());
    identity_ = pb::Identity::NewStub(channel);
    controller_ = pb::Controller::NewStub(channel);
    node_ = pb::Node::NewStub(channel);
  }

  // Undoes what a test left: mounts below the directory, loop devices of its files.
  void TearDown() override {
    driver_.reset();
    std::system(("awk -v d='" + dir_ +
                 "/' 'index($5, d) == 1 {print $5}' /proc/self/mountinfo"
                 " | sort -r | xargs -r -n1 umount -l 2>/dev/null; losetup -l -n -O NAME,BACK-FILE"
                 " | awk -v d='" +
                 dir_ +
                 "/' 'index($2, d) == 1 {print $1}'"
                 " | xargs -r -n1 losetup -d 2>/dev/null")
                    .c_str());
    fs::remove_all(dir_);
  }

  // Calls with a deadline; the status, and the response in `out` when given.
  template <class Stub, class Req, class Resp>
  grpc::Status Call(Stub& stub,
                    grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                    const Req& req, Resp* out = nullptr) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    Resp resp;
    grpc::Status s = (stub.*method)(&ctx, req, &resp);
    if (out) *out = resp;
    return s;
  }

  std::string CreateVolume(const std::string& name, int64_t bytes, const std::string& snapshot = "",
                           const std::string& source_volume = "") {
    pb::CreateVolumeRequest req;
    req.set_name(name);
    req.mutable_capacity_range()->set_required_bytes(bytes);
    *req.add_volume_capabilities() = MountCapability();
    if (!snapshot.empty()) {
      req.mutable_volume_content_source()->mutable_snapshot()->set_snapshot_id(snapshot);
    }
    if (!source_volume.empty()) {
      req.mutable_volume_content_source()->mutable_volume()->set_volume_id(source_volume);
    }
    pb::CreateVolumeResponse resp;
    grpc::Status s = Call(*controller_, &pb::Controller::Stub::CreateVolume, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.volume().volume_id();
  }

  // Publishes, stages and publishes for a pod; the pod's path.
  std::string Mount(const std::string& id, const pb::VolumeCapability& cap,
                    const std::string& pod = "pod") {
    pb::ControllerPublishVolumeRequest cp;
    cp.set_volume_id(id);
    cp.set_node_id("node-1");
    *cp.mutable_volume_capability() = cap;
    pb::ControllerPublishVolumeResponse cpr;
    grpc::Status s = Call(*controller_, &pb::Controller::Stub::ControllerPublishVolume, cp, &cpr);
    EXPECT_TRUE(s.ok()) << s.error_message();
    pb::NodeStageVolumeRequest st;
    st.set_volume_id(id);
    st.set_staging_target_path(dir_ + "/staging-" + id);
    *st.mutable_publish_context() = cpr.publish_context();
    *st.mutable_volume_capability() = cap;
    s = Call(*node_, &pb::Node::Stub::NodeStageVolume, st);
    EXPECT_TRUE(s.ok()) << s.error_message();
    pb::NodePublishVolumeRequest np;
    np.set_volume_id(id);
    np.set_staging_target_path(st.staging_target_path());
    np.set_target_path(dir_ + "/" + pod + "/" + id);
    *np.mutable_volume_capability() = cap;
    s = Call(*node_, &pb::Node::Stub::NodePublishVolume, np);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return np.target_path();
  }

  void Unmount(const std::string& id, const std::string& pod = "pod") {
    pb::NodeUnpublishVolumeRequest nu;
    nu.set_volume_id(id);
    nu.set_target_path(dir_ + "/" + pod + "/" + id);
    EXPECT_TRUE(Call(*node_, &pb::Node::Stub::NodeUnpublishVolume, nu).ok());
    pb::NodeUnstageVolumeRequest us;
    us.set_volume_id(id);
    us.set_staging_target_path(dir_ + "/staging-" + id);
    EXPECT_TRUE(Call(*node_, &pb::Node::Stub::NodeUnstageVolume, us).ok());
    pb::ControllerUnpublishVolumeRequest cu;
    cu.set_volume_id(id);
    cu.set_node_id("node-1");
    grpc::Status s = Call(*controller_, &pb::Controller::Stub::ControllerUnpublishVolume, cu);
    EXPECT_TRUE(s.ok()) << s.error_message();
  }

  std::string dir_;
  std::unique_ptr<Driver> driver_;
  std::unique_ptr<pb::Identity::Stub> identity_;
  std::unique_ptr<pb::Controller::Stub> controller_;
  std::unique_ptr<pb::Node::Stub> node_;
};

int MountsUnder(const std::string& dir) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.find(" " + dir + "/") != std::string::npos) ++n;
  }
  return n;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Each RPC refused as the spec says, the field named.
TEST_F(DriverTest, ErrorsAsTheSpecSays) {
  const std::string id = CreateVolume("held", 64 * kMiB);
  struct Case {
    std::string name;
    std::function<grpc::Status()> call;
    StatusCode code;
    std::string message;  // a part of the message
  };
  auto create = [&](std::function<void(pb::CreateVolumeRequest&)> edit) {
    return [=, this] {
      pb::CreateVolumeRequest req;
      req.set_name("v");
      req.mutable_capacity_range()->set_required_bytes(64 * kMiB);
      *req.add_volume_capabilities() = MountCapability();
      edit(req);
      return Call(*controller_, &pb::Controller::Stub::CreateVolume, req);
    };
  };
  auto publish = [&](std::string volume, std::string node, bool with_cap) {
    return [=, this] {
      pb::ControllerPublishVolumeRequest req;
      req.set_volume_id(volume);
      req.set_node_id(node);
      if (with_cap) *req.mutable_volume_capability() = MountCapability();
      return Call(*controller_, &pb::Controller::Stub::ControllerPublishVolume, req);
    };
  };
  const std::vector<Case> cases = {
      {"create without a name", create([](auto& r) { r.clear_name(); }),
       StatusCode::INVALID_ARGUMENT, "name is required"},
      {"create without capabilities", create([](auto& r) { r.clear_volume_capabilities(); }),
       StatusCode::INVALID_ARGUMENT, "volume_capabilities is required"},
      {"create with a multi-node writer", create([](auto& r) {
         r.mutable_volume_capabilities(0)->mutable_access_mode()->set_mode(
             pb::VolumeCapability::AccessMode::MULTI_NODE_MULTI_WRITER);
       }),
       StatusCode::INVALID_ARGUMENT, "volume_capabilities[0].access_mode"},
      {"create with an unknown filesystem", create([](auto& r) {
         r.mutable_volume_capabilities(0)->mutable_mount()->set_fs_type("zfs");
       }),
       StatusCode::INVALID_ARGUMENT, "volume_capabilities[0].mount.fs_type"},
      {"create with a limit below the request",
       create([](auto& r) { r.mutable_capacity_range()->set_limit_bytes(kMiB); }),
       StatusCode::INVALID_ARGUMENT, "limit_bytes"},
      {"create again with another size", create([](auto& r) {
         r.set_name("held");
         r.mutable_capacity_range()->set_required_bytes(128 * kMiB);
       }),
       StatusCode::ALREADY_EXISTS, "\"held\" exists"},
      {"create from a snapshot that is not there", create([](auto& r) {
         r.mutable_volume_content_source()->mutable_snapshot()->set_snapshot_id("snap-none");
       }),
       StatusCode::NOT_FOUND, "snapshot snap-none not found"},
      {"clone a volume that is not there", create([](auto& r) {
         r.mutable_volume_content_source()->mutable_volume()->set_volume_id("vol-none");
       }),
       StatusCode::NOT_FOUND, "volume vol-none not found"},
      {"clone into less than the source", create([&](auto& r) {
         r.mutable_volume_content_source()->mutable_volume()->set_volume_id(id);
         r.mutable_capacity_range()->set_required_bytes(32 * kMiB);
       }),
       StatusCode::OUT_OF_RANGE, "more than the requested capacity"},
      {"create on another node", create([](auto& r) {
         (*r.mutable_accessibility_requirements()
               ->add_requisite()
               ->mutable_segments())[kTopologyKey] = "node-2";
       }),
       StatusCode::RESOURCE_EXHAUSTED, "only live on node node-1"},
      {"delete without an id",
       [&] {
         return Call(*controller_, &pb::Controller::Stub::DeleteVolume, pb::DeleteVolumeRequest());
       },
       StatusCode::INVALID_ARGUMENT, "volume_id is required"},
      {"publish without a node", publish(id, "", true), StatusCode::INVALID_ARGUMENT,
       "node_id is required"},
      {"publish without a capability", publish(id, "node-1", false), StatusCode::INVALID_ARGUMENT,
       "volume_capability is required"},
      {"publish a volume that is not there", publish("vol-none", "node-1", true),
       StatusCode::NOT_FOUND, "volume vol-none not found"},
      {"publish to another node", publish(id, "node-2", true), StatusCode::NOT_FOUND,
       "node node-2 not found"},
      {"list from a token not given",
       [&] {
         pb::ListVolumesRequest req;
         req.set_starting_token("invalid-token");
         return Call(*controller_, &pb::Controller::Stub::ListVolumes, req);
       },
       StatusCode::ABORTED, "starting_token"},
      {"expand without a range",
       [&] {
         pb::ControllerExpandVolumeRequest req;
         req.set_volume_id(id);
         return Call(*controller_, &pb::Controller::Stub::ControllerExpandVolume, req);
       },
       StatusCode::INVALID_ARGUMENT, "capacity_range is required"},
      {"expand a volume that is not there",
       [&] {
         pb::ControllerExpandVolumeRequest req;
         req.set_volume_id("vol-none");
         req.mutable_capacity_range()->set_required_bytes(kMiB);
         return Call(*controller_, &pb::Controller::Stub::ControllerExpandVolume, req);
       },
       StatusCode::NOT_FOUND, "volume vol-none not found"},
      {"validate a volume that is not there",
       [&] {
         pb::ValidateVolumeCapabilitiesRequest req;
         req.set_volume_id("vol-none");
         *req.add_volume_capabilities() = MountCapability();
         return Call(*controller_, &pb::Controller::Stub::ValidateVolumeCapabilities, req);
       },
       StatusCode::NOT_FOUND, "not found"},
      {"snapshot without a source",
       [&] {
         pb::CreateSnapshotRequest req;
         req.set_name("s");
         return Call(*controller_, &pb::Controller::Stub::CreateSnapshot, req);
       },
       StatusCode::INVALID_ARGUMENT, "source_volume_id is required"},
      {"snapshot a volume that is not there",
       [&] {
         pb::CreateSnapshotRequest req;
         req.set_name("s");
         req.set_source_volume_id("vol-none");
         return Call(*controller_, &pb::Controller::Stub::CreateSnapshot, req);
       },
       StatusCode::NOT_FOUND, "volume vol-none not found"},
      {"stage without a path",
       [&] {
         pb::NodeStageVolumeRequest req;
         req.set_volume_id(id);
         *req.mutable_volume_capability() = MountCapability();
         return Call(*node_, &pb::Node::Stub::NodeStageVolume, req);
       },
       StatusCode::INVALID_ARGUMENT, "staging_target_path is required"},
      {"stage a volume not published here",
       [&] {
         pb::NodeStageVolumeRequest req;
         req.set_volume_id(id);
         req.set_staging_target_path(dir_ + "/stage-unpublished");
         *req.mutable_volume_capability() = MountCapability();
         return Call(*node_, &pb::Node::Stub::NodeStageVolume, req);
       },
       StatusCode::FAILED_PRECONDITION, "not published to node node-1"},
      {"publish for a pod before staging",
       [&] {
         pb::NodePublishVolumeRequest req;
         req.set_volume_id(id);
         req.set_staging_target_path(dir_ + "/never-staged");
         req.set_target_path(dir_ + "/target");
         *req.mutable_volume_capability() = MountCapability();
         return Call(*node_, &pb::Node::Stub::NodePublishVolume, req);
       },
       StatusCode::FAILED_PRECONDITION, "is not staged"},
      {"stats of a path that is not there",
       [&] {
         pb::NodeGetVolumeStatsRequest req;
         req.set_volume_id(id);
         req.set_volume_path(dir_ + "/nowhere");
         return Call(*node_, &pb::Node::Stub::NodeGetVolumeStats, req);
       },
       StatusCode::NOT_FOUND, "volume_path"},
      {"node expand of a volume that is not there",
       [&] {
         pb::NodeExpandVolumeRequest req;
         req.set_volume_id("vol-none");
         req.set_volume_path("some/path");
         return Call(*node_, &pb::Node::Stub::NodeExpandVolume, req);
       },
       StatusCode::NOT_FOUND, "volume vol-none not found"},
  };
  for (const auto& c : cases) {
    grpc::Status s = c.call();
    EXPECT_EQ(s.error_code(), c.code) << c.name << ": " << s.error_message();
    EXPECT_NE(s.error_message().find(c.message), std::string::npos)
        << c.name << ": " << s.error_message();
  }
}

// Every call made twice answers the same, and leaves one mount and one device.
TEST_F(DriverTest, EveryCallTwiceIsOneCall) {
  const std::string id = CreateVolume("twice", 64 * kMiB);
  EXPECT_EQ(CreateVolume("twice", 64 * kMiB), id);
  const std::string target = Mount(id, MountCapability());
  EXPECT_EQ(Mount(id, MountCapability()), target);
  EXPECT_EQ(MountsUnder(dir_), 2);  // staged, published
  std::string out;
  ASSERT_EQ(
      std::system(
          ("losetup -l -n -O BACK-FILE | grep -c '^" + dir_ + "/' > " + dir_ + "/count").c_str()),
      0);
  EXPECT_EQ(ReadAll(dir_ + "/count"), "1\n");

  pb::DeleteVolumeRequest del;
  del.set_volume_id(id);
  grpc::Status s = Call(*controller_, &pb::Controller::Stub::DeleteVolume, del);
  EXPECT_EQ(s.error_code(), StatusCode::FAILED_PRECONDITION) << s.error_message();
  pb::ControllerUnpublishVolumeRequest early;
  early.set_volume_id(id);
  early.set_node_id("node-1");
  s = Call(*controller_, &pb::Controller::Stub::ControllerUnpublishVolume, early);
  EXPECT_EQ(s.error_code(), StatusCode::FAILED_PRECONDITION) << s.error_message();
  EXPECT_NE(s.error_message().find("still mounted"), std::string::npos);

  Unmount(id);
  Unmount(id);
  EXPECT_EQ(MountsUnder(dir_), 0);
  EXPECT_FALSE(fs::exists(target));
  EXPECT_TRUE(Call(*controller_, &pb::Controller::Stub::DeleteVolume, del).ok());
  EXPECT_TRUE(Call(*controller_, &pb::Controller::Stub::DeleteVolume, del).ok());

  pb::ListVolumesResponse list;
  EXPECT_TRUE(
      Call(*controller_, &pb::Controller::Stub::ListVolumes, pb::ListVolumesRequest(), &list).ok());
  EXPECT_EQ(list.entries_size(), 0);
}

// What a pod wrote is in a snapshot of its volume, and in a clone; a restore and a clone are
// volumes of their own.
TEST_F(DriverTest, SnapshotsAndClonesHoldTheData) {
  const std::string id = CreateVolume("source", 64 * kMiB);
  const std::string target = Mount(id, MountCapability("ext4"));
  { std::ofstream(target + "/data") << "written by a pod"; }
  sync();
  pb::CreateSnapshotRequest snap;
  snap.set_name("snap-1");
  snap.set_source_volume_id(id);
  pb::CreateSnapshotResponse snapped;
  ASSERT_TRUE(Call(*controller_, &pb::Controller::Stub::CreateSnapshot, snap, &snapped).ok());
  EXPECT_TRUE(snapped.snapshot().ready_to_use());
  EXPECT_EQ(snapped.snapshot().size_bytes(), 64 * kMiB);
  pb::CreateSnapshotResponse again;
  ASSERT_TRUE(Call(*controller_, &pb::Controller::Stub::CreateSnapshot, snap, &again).ok());
  EXPECT_EQ(again.snapshot().snapshot_id(), snapped.snapshot().snapshot_id());
  snap.set_source_volume_id("vol-other");
  EXPECT_EQ(Call(*controller_, &pb::Controller::Stub::CreateSnapshot, snap).error_code(),
            StatusCode::ALREADY_EXISTS);
  { std::ofstream(target + "/data") << "changed after the snapshot"; }
  sync();

  const std::string restored =
      CreateVolume("restored", 128 * kMiB, snapped.snapshot().snapshot_id());
  const std::string clone = CreateVolume("clone", 64 * kMiB, "", id);
  EXPECT_EQ(ReadAll(Mount(restored, MountCapability("ext4"), "pod2") + "/data"),
            "written by a pod");
  EXPECT_EQ(ReadAll(Mount(clone, MountCapability("ext4"), "pod3") + "/data"),
            "changed after the snapshot");
  Unmount(restored, "pod2");
  Unmount(clone, "pod3");
  Unmount(id);

  pb::ListSnapshotsRequest by_source;
  by_source.set_source_volume_id(id);
  pb::ListSnapshotsResponse listed;
  ASSERT_TRUE(Call(*controller_, &pb::Controller::Stub::ListSnapshots, by_source, &listed).ok());
  ASSERT_EQ(listed.entries_size(), 1);
  pb::DeleteSnapshotRequest del;
  del.set_snapshot_id(snapped.snapshot().snapshot_id());
  EXPECT_TRUE(Call(*controller_, &pb::Controller::Stub::DeleteSnapshot, del).ok());
  EXPECT_TRUE(Call(*controller_, &pb::Controller::Stub::DeleteSnapshot, del).ok());
}

// A volume grows on the controller (its file and device) and then on the node (its
// filesystem, while mounted).
TEST_F(DriverTest, GrowsWhileMounted) {
  const std::string id = CreateVolume("grow", 512 * kMiB);  // xfs: the default at this size
  const std::string target = Mount(id, MountCapability());
  struct statvfs before {};
  ASSERT_EQ(statvfs(target.c_str(), &before), 0);
  pb::ControllerExpandVolumeRequest ce;
  ce.set_volume_id(id);
  ce.mutable_capacity_range()->set_required_bytes(1024 * kMiB);
  pb::ControllerExpandVolumeResponse cer;
  ASSERT_TRUE(Call(*controller_, &pb::Controller::Stub::ControllerExpandVolume, ce, &cer).ok());
  EXPECT_EQ(cer.capacity_bytes(), 1024 * kMiB);
  EXPECT_TRUE(cer.node_expansion_required());
  pb::NodeExpandVolumeRequest ne;
  ne.set_volume_id(id);
  ne.set_volume_path(target);
  ne.mutable_capacity_range()->set_required_bytes(1024 * kMiB);
  pb::NodeExpandVolumeResponse ner;
  grpc::Status s = Call(*node_, &pb::Node::Stub::NodeExpandVolume, ne, &ner);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(ner.capacity_bytes(), 1024 * kMiB);
  struct statvfs after {};
  ASSERT_EQ(statvfs(target.c_str(), &after), 0);
  EXPECT_GT(after.f_blocks * after.f_frsize, before.f_blocks * before.f_frsize + 400 * kMiB);

  pb::NodeGetVolumeStatsRequest st;
  st.set_volume_id(id);
  st.set_volume_path(target);
  pb::NodeGetVolumeStatsResponse stats;
  ASSERT_TRUE(Call(*node_, &pb::Node::Stub::NodeGetVolumeStats, st, &stats).ok());
  ASSERT_EQ(stats.usage_size(), 2);
  EXPECT_EQ(stats.usage(0).unit(), pb::VolumeUsage::BYTES);
  EXPECT_EQ(stats.usage(0).total(), static_cast<int64_t>(after.f_blocks * after.f_frsize));
  EXPECT_FALSE(stats.volume_condition().abnormal());
  Unmount(id);
}

// ext4 grows while mounted only with CAP_SYS_RESOURCE; without it the driver says so.
TEST_F(DriverTest, Ext4GrowthNamesTheMissingCapability) {
  const std::string id = CreateVolume("ext4", 64 * kMiB);
  const std::string target = Mount(id, MountCapability());  // ext4: below the smallest xfs
  pb::ControllerExpandVolumeRequest ce;
  ce.set_volume_id(id);
  ce.mutable_capacity_range()->set_required_bytes(96 * kMiB);
  ASSERT_TRUE(Call(*controller_, &pb::Controller::Stub::ControllerExpandVolume, ce).ok());
  pb::NodeExpandVolumeRequest ne;
  ne.set_volume_id(id);
  ne.set_volume_path(target);
  grpc::Status s = Call(*node_, &pb::Node::Stub::NodeExpandVolume, ne);
  std::string status = ReadAll("/proc/self/status");
  const uint64_t caps = std::strtoull(status.c_str() + status.find("CapEff:") + 7, nullptr, 16);
  if (caps & (uint64_t{1} << 24)) {
    EXPECT_TRUE(s.ok()) << s.error_message();
  } else {
    EXPECT_EQ(s.error_code(), StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(s.error_message().find("CAP_SYS_RESOURCE"), std::string::npos) << s.error_message();
  }
  Unmount(id);
}

// A raw block volume: the pod's path is the device itself.
TEST_F(DriverTest, BlockVolumeIsTheDevice) {
  const std::string id = CreateVolume("block", 64 * kMiB);
  const std::string target = Mount(id, BlockCapability());
  struct stat st {};
  ASSERT_EQ(stat(target.c_str(), &st), 0);
  EXPECT_TRUE(S_ISBLK(st.st_mode));
  pb::NodeGetVolumeStatsRequest req;
  req.set_volume_id(id);
  req.set_volume_path(target);
  pb::NodeGetVolumeStatsResponse stats;
  ASSERT_TRUE(Call(*node_, &pb::Node::Stub::NodeGetVolumeStats, req, &stats).ok());
  ASSERT_EQ(stats.usage_size(), 1);
  EXPECT_EQ(stats.usage(0).total(), 64 * kMiB);
  EXPECT_FALSE(stats.volume_condition().abnormal()) << stats.volume_condition().message();
  // The volume's file gone from under it: abnormal, in words that say what is wrong.
  const std::string file = dir_ + "/data/volumes/" + id + ".img";
  fs::rename(file, file + ".away");
  ASSERT_TRUE(Call(*node_, &pb::Node::Stub::NodeGetVolumeStats, req, &stats).ok());
  EXPECT_TRUE(stats.volume_condition().abnormal());
  EXPECT_EQ(stats.volume_condition().message(), "the volume's file is missing");
  fs::rename(file + ".away", file);
  Unmount(id);
  EXPECT_FALSE(fs::exists(target));
}

// A node takes as many volumes as NodeGetInfo says, then RESOURCE_EXHAUSTED.
TEST_F(DriverTest, VolumeLimitPerNode) {
  pb::NodeGetInfoResponse info;
  ASSERT_TRUE(Call(*node_, &pb::Node::Stub::NodeGetInfo, pb::NodeGetInfoRequest(), &info).ok());
  EXPECT_EQ(info.node_id(), "node-1");
  EXPECT_EQ(info.max_volumes_per_node(), 4);
  EXPECT_EQ(info.accessible_topology().segments().at(kTopologyKey), "node-1");
  std::vector<std::string> ids;
  for (int i = 0; i <= 4; ++i) ids.push_back(CreateVolume("v" + std::to_string(i), kMiB));
  for (int i = 0; i <= 4; ++i) {
    pb::ControllerPublishVolumeRequest req;
    req.set_volume_id(ids[i]);
    req.set_node_id("node-1");
    *req.mutable_volume_capability() = BlockCapability();
    grpc::Status s = Call(*controller_, &pb::Controller::Stub::ControllerPublishVolume, req);
    EXPECT_EQ(s.error_code(), i < 4 ? StatusCode::OK : StatusCode::RESOURCE_EXHAUSTED) << i;
  }
  for (const auto& id : ids) {
    pb::ControllerUnpublishVolumeRequest req;
    req.set_volume_id(id);
    req.set_node_id("node-1");
    EXPECT_TRUE(Call(*controller_, &pb::Controller::Stub::ControllerUnpublishVolume, req).ok());
  }
}

// A restarted driver keeps its volumes and finds the devices it attached.
TEST_F(DriverTest, RestartKeepsVolumesAndDevices) {
  const std::string id = CreateVolume("kept", 64 * kMiB);
  pb::ControllerPublishVolumeRequest req;
  req.set_volume_id(id);
  req.set_node_id("node-1");
  *req.mutable_volume_capability() = BlockCapability();
  pb::ControllerPublishVolumeResponse first;
  ASSERT_TRUE(Call(*controller_, &pb::Controller::Stub::ControllerPublishVolume, req, &first).ok());
  driver_.reset();
  { std::ofstream(dir_ + "/data/volumes/vol-orphan.img") << "a file a crash left"; }
  auto d = Driver::Start({.endpoint = "unix://" + dir_ + "/csi.sock",
                          .node_id = "node-1",
                          .data_dir = dir_ + "/data"});
  ASSERT_TRUE(d.ok());
  driver_ = *std::move(d);
  EXPECT_FALSE(fs::exists(dir_ + "/data/volumes/vol-orphan.img"));
  pb::ControllerGetVolumeRequest get;
  get.set_volume_id(id);
  pb::ControllerGetVolumeResponse got;
  ASSERT_TRUE(Call(*controller_, &pb::Controller::Stub::ControllerGetVolume, get, &got).ok());
  EXPECT_EQ(got.volume().capacity_bytes(), 64 * kMiB);
  ASSERT_EQ(got.status().published_node_ids_size(), 1);
  pb::ControllerPublishVolumeResponse second;
  ASSERT_TRUE(
      Call(*controller_, &pb::Controller::Stub::ControllerPublishVolume, req, &second).ok());
  EXPECT_EQ(second.publish_context().at("devicePath"), first.publish_context().at("devicePath"));
  pb::ControllerUnpublishVolumeRequest un;
  un.set_volume_id(id);
  un.set_node_id("node-1");
  EXPECT_TRUE(Call(*controller_, &pb::Controller::Stub::ControllerUnpublishVolume, un).ok());
}

// An empty volume is its record alone until its first use: it survives a restart without a
// file, grows without one, and has a file of its size once published, snapshotted or cloned.
TEST_F(DriverTest, AnEmptyVolumeGetsItsFileAtFirstUse) {
  auto file_of = [&](const std::string& id) { return dir_ + "/data/volumes/" + id + ".img"; };
  const std::string published = CreateVolume("published", 8 * kMiB);
  const std::string snapshotted = CreateVolume("snapshotted", 8 * kMiB);
  const std::string cloned = CreateVolume("cloned", 8 * kMiB);
  for (const auto& id : {published, snapshotted, cloned}) EXPECT_FALSE(fs::exists(file_of(id)));
  pb::ControllerGetVolumeRequest get;
  get.set_volume_id(published);
  pb::ControllerGetVolumeResponse got;
  ASSERT_TRUE(Call(*controller_, &pb::Controller::Stub::ControllerGetVolume, get, &got).ok());
  EXPECT_FALSE(got.status().volume_condition().abnormal())
      << got.status().volume_condition().message();

  driver_.reset();
  auto d = Driver::Start({.endpoint = "unix://" + dir_ + "/csi.sock",
                          .node_id = "node-1",
                          .data_dir = dir_ + "/data"});
  ASSERT_TRUE(d.ok()) << d.status().message();
  driver_ = *std::move(d);
  ASSERT_TRUE(Call(*controller_, &pb::Controller::Stub::ControllerGetVolume, get, &got).ok())
      << "a volume without its file yet is kept through a restart";

  pb::ControllerExpandVolumeRequest grow;
  grow.set_volume_id(published);
  grow.mutable_capacity_range()->set_required_bytes(16 * kMiB);
  *grow.mutable_volume_capability() = BlockCapability();
  ASSERT_TRUE(Call(*controller_, &pb::Controller::Stub::ControllerExpandVolume, grow).ok());
  EXPECT_FALSE(fs::exists(file_of(published)));

  pb::ControllerPublishVolumeRequest pub;
  pub.set_volume_id(published);
  pub.set_node_id("node-1");
  *pub.mutable_volume_capability() = BlockCapability();
  pb::ControllerPublishVolumeResponse device;
  ASSERT_TRUE(
      Call(*controller_, &pb::Controller::Stub::ControllerPublishVolume, pub, &device).ok());
  EXPECT_EQ(fs::file_size(file_of(published)), static_cast<uintmax_t>(16 * kMiB));
  pb::ControllerUnpublishVolumeRequest unpub;
  unpub.set_volume_id(published);
  unpub.set_node_id("node-1");
  EXPECT_TRUE(Call(*controller_, &pb::Controller::Stub::ControllerUnpublishVolume, unpub).ok());

  pb::CreateSnapshotRequest snap;
  snap.set_name("of-an-unused-volume");
  snap.set_source_volume_id(snapshotted);
  pb::CreateSnapshotResponse snapped;
  ASSERT_TRUE(Call(*controller_, &pb::Controller::Stub::CreateSnapshot, snap, &snapped).ok());
  EXPECT_EQ(snapped.snapshot().size_bytes(), 8 * kMiB);
  EXPECT_EQ(fs::file_size(file_of(snapshotted)), static_cast<uintmax_t>(8 * kMiB));
  const std::string clone = CreateVolume("clone", 8 * kMiB, "", cloned);
  EXPECT_EQ(fs::file_size(file_of(cloned)), static_cast<uintmax_t>(8 * kMiB));
  EXPECT_EQ(fs::file_size(file_of(clone)), static_cast<uintmax_t>(8 * kMiB));

  // A file that goes missing once made is missing, not pending.
  fs::rename(file_of(published), file_of(published) + ".away");
  ASSERT_TRUE(Call(*controller_, &pb::Controller::Stub::ControllerGetVolume, get, &got).ok());
  EXPECT_TRUE(got.status().volume_condition().abnormal());
  fs::rename(file_of(published) + ".away", file_of(published));

  pb::DeleteVolumeRequest del;
  del.set_volume_id(published);
  EXPECT_TRUE(Call(*controller_, &pb::Controller::Stub::DeleteVolume, del).ok());
  EXPECT_FALSE(fs::exists(file_of(published)));
}

}  // namespace
}  // namespace kvol::csi::driver
