// The csi plugin against a scripted CSI node service over real gRPC, on a FakeHost.
#include "volume/plugins/csi/csi_plugin.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "base/sha256.h"
#include "csi/names.h"
#include "volume/plugins/csi/csi_drivers.h"
#include "volume/plugins/csi/csi_util.h"
#include "volume/testing/fake_host.h"
#include "volume/testing/temp_dir.h"

namespace kvol::volume::plugins {
namespace {

namespace fs = std::filesystem;
namespace pb = ::csi::v1;
using kvol::StatusCode;

class ScriptedNode final : public pb::Node::Service {
 public:
  bool stage = true;
  bool mount_group = false;  // VOLUME_MOUNT_GROUP
  grpc::Status stage_answer = grpc::Status::OK;
  grpc::Status publish_answer = grpc::Status::OK;
  std::mutex mu;
  std::vector<pb::NodeStageVolumeRequest> staged;
  std::vector<pb::NodePublishVolumeRequest> published;
  std::vector<std::string> calls;

  grpc::Status NodeGetCapabilities(grpc::ServerContext*, const pb::NodeGetCapabilitiesRequest*,
                                   pb::NodeGetCapabilitiesResponse* out) override {
    if (stage) {
      out->add_capabilities()->mutable_rpc()->set_type(
          pb::NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME);
    }
    if (mount_group) {
      out->add_capabilities()->mutable_rpc()->set_type(
          pb::NodeServiceCapability::RPC::VOLUME_MOUNT_GROUP);
    }
    return grpc::Status::OK;
  }
  grpc::Status NodeStageVolume(grpc::ServerContext*, const pb::NodeStageVolumeRequest* r,
                               pb::NodeStageVolumeResponse*) override {
    std::lock_guard lock(mu);
    staged.push_back(*r);
    calls.push_back("stage");
    return stage_answer;
  }
  grpc::Status NodeUnstageVolume(grpc::ServerContext*, const pb::NodeUnstageVolumeRequest* r,
                                 pb::NodeUnstageVolumeResponse*) override {
    std::lock_guard lock(mu);
    calls.push_back("unstage " + r->volume_id() + " " + r->staging_target_path());
    return grpc::Status::OK;
  }
  grpc::Status NodePublishVolume(grpc::ServerContext*, const pb::NodePublishVolumeRequest* r,
                                 pb::NodePublishVolumeResponse*) override {
    std::lock_guard lock(mu);
    published.push_back(*r);
    calls.push_back("publish");
    // What a driver leaves at a filesystem's target: a directory.
    if (publish_answer.ok() && r->volume_capability().has_mount()) {
      std::error_code ec;
      fs::create_directories(r->target_path(), ec);
    }
    return publish_answer;
  }
  grpc::Status NodeUnpublishVolume(grpc::ServerContext*, const pb::NodeUnpublishVolumeRequest* r,
                                   pb::NodeUnpublishVolumeResponse*) override {
    std::lock_guard lock(mu);
    calls.push_back("unpublish " + r->volume_id() + " " + r->target_path());
    return grpc::Status::OK;
  }
};

class CsiPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder b;
    b.AddListeningPort("unix://" + dir_.path() + "/csi.sock", grpc::InsecureServerCredentials());
    b.RegisterService(&node_);
    server_ = b.BuildAndStart();
    auto d = std::make_shared<CsiDriver>();
    d->name = "fake.csi.io";
    d->endpoint = "unix://" + dir_.path() + "/csi.sock";
    d->client = *kvol::csi::Client::New(d->endpoint);
    drivers_.Add(d);
    host_.SetCsiDrivers(&drivers_);
  }
  void TearDown() override { server_->Shutdown(); }

  Spec PvSpec(const std::string& mode = "Filesystem") const {
    Spec s;
    s.volume.name = "data";
    api::PersistentVolume pv;
    pv.metadata.name = "pv-1";
    pv.spec.access_modes = {"ReadWriteOnce"};
    pv.spec.volume_mode = mode;
    pv.spec.csi = api::CSIPersistentVolumeSource{.driver = "fake.csi.io",
                                                 .volume_handle = "handle-1",
                                                 .fs_type = "ext4",
                                                 .volume_attributes = {{"tier", "gold"}}};
    s.pv = pv;
    return s;
  }
  api::Pod Pod() const {
    api::Pod p;
    p.metadata.name = "p";
    p.metadata.namespace_ = "default";
    p.metadata.uid = "uid-1";
    return p;
  }
  std::string StagePath() const {
    return host_.PluginDir(kCsiPluginName) + "/fake.csi.io/" + Sha256Hex("handle-1") +
           "/globalmount";
  }

  volume::testing::TempDir dir_;
  volume::testing::FakeHost host_{dir_.path() + "/root"};
  CsiDrivers drivers_;
  ScriptedNode node_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<VolumePlugin> plugin_ = NewCsiPlugin(host_);
};

// (capabilities, answers) -> what MountDevice and SetUp return and call. Errors after which the
// driver may still be working come back as DeadlineExceeded: the mount is uncertain.
// The rule the node's csi plugin and the attach/detach controller share.
TEST(AttachRequired, Table) {
  api::CSIDriver says_no, says_yes, silent;
  says_no.spec.attach_required = false;
  says_yes.spec.attach_required = true;
  struct Case {
    const char* name;
    const api::CSIDriver* driver;
    bool want;
  };
  const Case cases[] = {
      {"no CSIDriver object", nullptr, true},
      {"attachRequired: false", &says_no, false},
      {"attachRequired: true", &says_yes, true},
      {"attachRequired unset", &silent, true},
  };
  for (const auto& c : cases) EXPECT_EQ(AttachRequired(c.driver), c.want) << c.name;
}

TEST_F(CsiPluginTest, StageAndPublishTable) {
  struct Case {
    std::string name;
    bool stage_capability;
    grpc::Status stage_answer;
    grpc::Status publish_answer;
    StatusCode mount_device;  // what MountDevice returns
    StatusCode set_up;        // what SetUp returns (after MountDevice)
    std::string message;      // a part of the first error
  };
  const grpc::Status ok = grpc::Status::OK;
  const std::vector<Case> cases = {
      {"staged and published", true, ok, ok, StatusCode::kOk, StatusCode::kOk, ""},
      {"no staging", false, ok, ok, StatusCode::kOk, StatusCode::kOk, ""},
      {"stage fails for good", true, grpc::Status(grpc::StatusCode::INTERNAL, "mkfs failed"), ok,
       StatusCode::kInternal, StatusCode::kOk, "rpc error: code = Internal desc = mkfs failed"},
      {"stage times out", true, grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "slow"), ok,
       StatusCode::kDeadlineExceeded, StatusCode::kOk, "code = DeadlineExceeded"},
      {"stage still in progress", true, grpc::Status(grpc::StatusCode::ABORTED, "busy"), ok,
       StatusCode::kDeadlineExceeded, StatusCode::kOk, "rpc error: code = Aborted desc = busy"},
      {"driver out of resources", true, grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "later"),
       ok, StatusCode::kDeadlineExceeded, StatusCode::kOk, "code = ResourceExhausted"},
      {"publish refused", true, ok, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad"),
       StatusCode::kOk, StatusCode::kInvalidArgument, "rpc error: code = InvalidArgument"},
      {"publish unavailable", true, ok, grpc::Status(grpc::StatusCode::UNAVAILABLE, "restarting"),
       StatusCode::kOk, StatusCode::kDeadlineExceeded, "code = Unavailable desc = restarting"},
  };
  for (const auto& c : cases) {
    node_.stage = c.stage_capability;
    node_.stage_answer = c.stage_answer;
    node_.publish_answer = c.publish_answer;
    node_.staged.clear();
    node_.published.clear();
    const Spec spec = PvSpec();
    auto* dm = plugin_->AsDeviceMountable();
    EXPECT_TRUE(dm->NeedsDeviceMount(spec)) << c.name;
    Status s = dm->MountDevice(spec, "");
    EXPECT_EQ(s.code(), c.mount_device) << c.name << ": " << s.message();
    if (!s.ok()) {
      EXPECT_NE(s.message().find(c.message), std::string::npos) << c.name << ": " << s.message();
    }
    if (c.stage_capability) {
      ASSERT_EQ(node_.staged.size(), 1u) << c.name;
      const auto& st = node_.staged[0];
      EXPECT_EQ(st.volume_id(), "handle-1");
      EXPECT_EQ(st.staging_target_path(), StagePath());
      EXPECT_EQ(st.volume_capability().mount().fs_type(), "ext4");
      EXPECT_EQ(st.volume_capability().access_mode().mode(),
                pb::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
      EXPECT_EQ(st.volume_context().at("tier"), "gold");
    } else {
      EXPECT_TRUE(node_.staged.empty()) << c.name;
    }
    if (!s.ok()) continue;
    auto mounter = plugin_->NewMounter(spec, Pod());
    ASSERT_TRUE(mounter.ok());
    s = (*mounter)->SetUp();
    EXPECT_EQ(s.code(), c.set_up) << c.name << ": " << s.message();
    if (!s.ok()) {
      EXPECT_NE(s.message().find(c.message), std::string::npos) << c.name << ": " << s.message();
    }
    ASSERT_EQ(node_.published.size(), 1u) << c.name;
    const auto& pub = node_.published[0];
    EXPECT_EQ(pub.target_path(), (*mounter)->GetPath());
    EXPECT_EQ(pub.staging_target_path(), c.stage_capability ? StagePath() : "") << c.name;
    EXPECT_TRUE(fs::exists(fs::path((*mounter)->GetPath()).parent_path() / "vol_data.json"));
  }
}

TEST_F(CsiPluginTest, TearDownFromTheRecordAlone) {
  const Spec spec = PvSpec();
  ASSERT_TRUE(plugin_->AsDeviceMountable()->MountDevice(spec, "").ok());
  auto mounter = plugin_->NewMounter(spec, Pod());
  ASSERT_TRUE((*mounter)->SetUp().ok());
  // As after a restart: a new plugin, only the pod's uid and the volume's directory name.
  auto fresh = NewCsiPlugin(host_);
  auto unmounter = fresh->NewUnmounter("pv-1", "uid-1");
  ASSERT_TRUE(unmounter.ok());
  ASSERT_TRUE((*unmounter)->TearDown().ok());
  ASSERT_TRUE(fresh->AsDeviceMountable()->UnmountDevice(StagePath()).ok());
  const std::vector<std::string> want = {"stage", "publish",
                                         "unpublish handle-1 " + (*mounter)->GetPath(),
                                         "unstage handle-1 " + StagePath()};
  EXPECT_EQ(node_.calls, want);
  EXPECT_FALSE(fs::exists(fs::path(StagePath()).parent_path()));
  EXPECT_FALSE(fs::exists(fs::path((*mounter)->GetPath()).parent_path()));
}

// volumeMode Block, with and without staging: staged to volumeDevices/staging/<pv>, published
// for each pod to volumeDevices/publish/<pv>/<uid>, the pod's link pointing there; the shared
// record goes with the last use.
TEST_F(CsiPluginTest, BlockVolumes) {
  for (bool stage : {true, false}) {
    SCOPED_TRACE(stage ? "staged" : "not staged");
    node_.stage = stage;
    node_.calls.clear();
    node_.published.clear();
    node_.staged.clear();
    const Spec spec = PvSpec("Block");
    const std::string root = host_.PluginDir(kCsiPluginName) + "/volumeDevices";
    auto* dm = plugin_->AsDeviceMountable();
    auto* block = plugin_->AsBlock();
    ASSERT_NE(block, nullptr);
    EXPECT_TRUE(dm->NeedsDeviceMount(spec));
    EXPECT_EQ(dm->GetDeviceMountPath(spec), root + "/staging/pv-1");
    ASSERT_TRUE(dm->MountDevice(spec, "").ok());
    if (stage) {
      ASSERT_EQ(node_.staged.size(), 1u);
      EXPECT_TRUE(node_.staged[0].volume_capability().has_block());
      EXPECT_EQ(node_.staged[0].staging_target_path(), root + "/staging/pv-1");
    } else {
      EXPECT_TRUE(node_.staged.empty());
      EXPECT_FALSE(fs::exists(root + "/staging/pv-1")) << "nothing staged, nothing made";
    }
    ASSERT_TRUE(block->MapPodDevice(spec, "uid-1").ok());
    ASSERT_TRUE(block->MapPodDevice(spec, "uid-2").ok());
    ASSERT_TRUE(block->MapPodDevice(spec, "uid-1").ok());  // idempotent
    ASSERT_EQ(node_.published.size(), 3u);
    const auto& pub = node_.published[0];
    EXPECT_TRUE(pub.volume_capability().has_block());
    EXPECT_EQ(pub.target_path(), root + "/publish/pv-1/uid-1");
    EXPECT_EQ(pub.staging_target_path(), stage ? root + "/staging/pv-1" : "");
    const std::string link = host_.PodDeviceDir("uid-1", kCsiPluginName, "pv-1");
    EXPECT_EQ(fs::read_symlink(link).string(), root + "/publish/pv-1/uid-1");
    EXPECT_TRUE(fs::exists(root + "/pv-1/data/vol_data.json"));
    // The driver publishes a file at the target.
    std::ofstream(root + "/publish/pv-1/uid-1").put('\n');
    std::ofstream(root + "/publish/pv-1/uid-2").put('\n');

    // Torn down from the record alone, as after a restart.
    auto fresh = NewCsiPlugin(host_);
    ASSERT_TRUE(fresh->AsBlock()->UnmapPodDevice("pv-1", "uid-1").ok());
    EXPECT_FALSE(fs::exists(fs::symlink_status(link)));
    EXPECT_TRUE(fs::exists(root + "/pv-1/data/vol_data.json")) << "still used by uid-2";
    ASSERT_TRUE(fresh->AsBlock()->UnmapPodDevice("pv-1", "uid-2").ok());
    ASSERT_TRUE(fresh->AsBlock()->UnmapPodDevice("pv-1", "uid-2").ok());  // idempotent
    EXPECT_EQ(fs::exists(root + "/pv-1"), stage) << "the record stays while staged";
    if (stage) {
      ASSERT_TRUE(fresh->AsDeviceMountable()->UnmountDevice(root + "/staging/pv-1").ok());
    }
    std::vector<std::string> want;
    if (stage) want.push_back("stage");
    want.insert(want.end(), {"publish", "publish", "publish",
                             "unpublish handle-1 " + root + "/publish/pv-1/uid-1",
                             "unpublish handle-1 " + root + "/publish/pv-1/uid-2"});
    if (stage) want.push_back("unstage handle-1 " + root + "/staging/pv-1");
    EXPECT_EQ(node_.calls, want);
    EXPECT_FALSE(fs::exists(root + "/pv-1"));
    EXPECT_FALSE(fs::exists(root + "/staging/pv-1"));
    EXPECT_FALSE(fs::exists(root + "/publish/pv-1"));
  }
}

TEST_F(CsiPluginTest, InlineVolumesAreNoBlockDevices) {
  Spec spec;
  spec.volume.name = "scratch";
  spec.volume.csi = api::CSIVolumeSource{.driver = "fake.csi.io"};
  EXPECT_EQ(plugin_->AsBlock()->MapPodDevice(spec, "uid-1").code(), StatusCode::kInvalidArgument);
}

// What a restarted agent finds staged: filesystems by the record beside globalmount, block
// volumes by their staging path; attachment records are not devices.
TEST_F(CsiPluginTest, FindsStagedDevices) {
  Spec fs_spec = PvSpec();
  Spec block_spec = PvSpec("Block");
  block_spec.pv->metadata.name = "pv-2";
  block_spec.pv->spec.csi->volume_handle = "handle-2";
  ASSERT_TRUE(plugin_->AsDeviceMountable()->MountDevice(fs_spec, "").ok());
  ASSERT_TRUE(plugin_->AsDeviceMountable()->MountDevice(block_spec, "").ok());
  ASSERT_TRUE(plugin_->AsAttachable()->Attach(fs_spec, "node-1").ok());
  auto found = NewCsiPlugin(host_)->AsDeviceMountable()->FindDeviceMounts();
  std::map<std::string, std::string> by_name;
  for (const auto& f : found) by_name[f.volume_name] = f.mount_path;
  const std::map<std::string, std::string> want = {
      {"pv-1", StagePath()},
      {"pv-2", host_.PluginDir(kCsiPluginName) + "/volumeDevices/staging/pv-2"}};
  EXPECT_EQ(by_name, want);
}

TEST_F(CsiPluginTest, UnregisteredDriverInKubeletsWords) {
  drivers_.Remove("fake.csi.io", "unix://" + dir_.path() + "/csi.sock");
  Status s = plugin_->AsDeviceMountable()->MountDevice(PvSpec(), "");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(),
            "kubernetes.io/csi: driver name fake.csi.io not found in the list of registered CSI "
            "drivers");
}

TEST_F(CsiPluginTest, AttachThroughAVolumeAttachment) {
  auto* at = plugin_->AsAttachable();
  const Spec spec = PvSpec();
  EXPECT_TRUE(at->NeedsAttach(spec));  // no CSIDriver: attach required, as in Kubernetes
  api::CSIDriver d;
  d.metadata.name = "fake.csi.io";
  d.spec.attach_required = false;
  host_.PutCSIDriver(d);
  EXPECT_FALSE(at->NeedsAttach(spec));
  d.spec.attach_required = true;
  host_.PutCSIDriver(d);
  EXPECT_TRUE(at->NeedsAttach(spec));

  ASSERT_TRUE(at->Attach(spec, "node-1").ok());
  ASSERT_TRUE(at->Attach(spec, "node-1").ok());  // idempotent
  const std::string name = kvol::csi::AttachmentName("handle-1", "fake.csi.io", "node-1");
  auto attachments = host_.Attachments();
  ASSERT_EQ(attachments.size(), 1u);
  const auto& va = attachments.at(name);
  EXPECT_EQ(va.spec.attacher, "fake.csi.io");
  EXPECT_EQ(va.spec.node_name, "node-1");
  EXPECT_EQ(va.spec.source.persistent_volume_name.value_or(""), "pv-1");

  host_.SetAttachmentStatus(name, {.attach_error = api::VolumeError{.message = "no such disk"}});
  auto waited = at->WaitForAttach(spec, "");
  ASSERT_FALSE(waited.ok());
  EXPECT_NE(waited.status().message().find("no such disk"), std::string::npos);

  host_.SetAttachmentStatus(
      name, {.attached = true, .attachment_metadata = {{"devicePath", "/dev/loop7"}}});
  ASSERT_TRUE(at->WaitForAttach(spec, "").ok());
  ASSERT_TRUE(plugin_->AsDeviceMountable()->MountDevice(spec, "").ok());
  EXPECT_EQ(node_.staged.back().publish_context().at("devicePath"), "/dev/loop7");

  ASSERT_TRUE(at->Detach("pv-1", "node-1").ok());
  EXPECT_TRUE(host_.Attachments().empty());
  ASSERT_TRUE(at->Detach("pv-1", "node-1").ok());  // idempotent
}

// spec.volumes[].csi: published only, for drivers whose CSIDriver lists Ephemeral.
TEST_F(CsiPluginTest, InlineEphemeralVolumes) {
  Spec spec;
  spec.volume.name = "scratch";
  api::CSIVolumeSource src;
  src.driver = "fake.csi.io";
  src.volume_attributes = {{"size", "1Mi"}};
  spec.volume.csi = src;
  ASSERT_TRUE(plugin_->CanSupport(spec));
  EXPECT_FALSE(plugin_->AsDeviceMountable()->NeedsDeviceMount(spec));
  EXPECT_FALSE(plugin_->AsAttachable()->NeedsAttach(spec));

  // No CSIDriver: Persistent only, as in Kubernetes.
  auto mounter = plugin_->NewMounter(spec, Pod());
  ASSERT_TRUE(mounter.ok());
  Status s = (*mounter)->SetUp();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "volume mode \"Ephemeral\" not supported by driver fake.csi.io (only "
            "supports [\"Persistent\"])");
  EXPECT_TRUE(node_.published.empty());

  api::CSIDriver d;
  d.metadata.name = "fake.csi.io";
  d.spec.volume_lifecycle_modes = {"Ephemeral"};
  d.spec.pod_info_on_mount = true;
  host_.PutCSIDriver(d);
  ASSERT_TRUE((*mounter)->SetUp().ok());
  ASSERT_EQ(node_.published.size(), 1u);
  const auto& req = node_.published[0];
  EXPECT_EQ(req.volume_id(), "csi-" + Sha256Hex("uid-1scratch"));
  EXPECT_EQ(req.staging_target_path(), "");
  EXPECT_EQ(req.volume_context().at("csi.storage.k8s.io/ephemeral"), "true");
  EXPECT_EQ(req.volume_context().at("csi.storage.k8s.io/pod.name"), "p");
  EXPECT_EQ(req.volume_context().at("csi.storage.k8s.io/pod.namespace"), "default");
  EXPECT_EQ(req.volume_context().at("csi.storage.k8s.io/pod.uid"), "uid-1");
  EXPECT_EQ(req.volume_context().at("csi.storage.k8s.io/serviceAccount.name"), "default");
  EXPECT_EQ(req.volume_context().at("size"), "1Mi");

  auto fresh = NewCsiPlugin(host_);  // as after a restart; outlives the unmounter it makes
  auto unmounter = fresh->NewUnmounter("scratch", "uid-1");
  ASSERT_TRUE((*unmounter)->TearDown().ok());
  EXPECT_EQ(node_.calls.back(),
            "unpublish csi-" + Sha256Hex("uid-1scratch") + " " + (*mounter)->GetPath());

  // A driver that serves only inline volumes refuses PersistentVolumes.
  s = plugin_->NewMounter(PvSpec(), Pod()).value()->SetUp();
  EXPECT_EQ(s.message(),
            "volume mode \"Persistent\" not supported by driver fake.csi.io (only "
            "supports [\"Ephemeral\"])");
}

// (fsGroupPolicy, fsType, access mode, VOLUME_MOUNT_GROUP, readOnly) -> who applies the pod's
// fsGroup: kvol on the published files, the driver (volume_mount_group), or nobody.
TEST_F(CsiPluginTest, FsGroupPolicyTable) {
  struct Case {
    std::string name;
    std::optional<std::string> policy;  // the CSIDriver's fsGroupPolicy; none: no CSIDriver
    std::string fs_type;
    std::string access_mode;
    bool mount_group = false;
    bool read_only = false;
    std::string want;  // "kvol", "driver" or "nobody"
  };
  const Case cases[] = {
      {.name = "default: an fsType and ReadWriteOnce",
       .fs_type = "ext4",
       .access_mode = "ReadWriteOnce",
       .want = "kvol"},
      {.name = "default: no fsType", .access_mode = "ReadWriteOnce", .want = "nobody"},
      {.name = "default: ReadWriteMany",
       .policy = "ReadWriteOnceWithFSType",
       .fs_type = "ext4",
       .access_mode = "ReadWriteMany",
       .want = "nobody"},
      {.name = "ReadWriteOncePod counts as once",
       .policy = "ReadWriteOnceWithFSType",
       .fs_type = "xfs",
       .access_mode = "ReadWriteOncePod",
       .want = "kvol"},
      {.name = "File: always", .policy = "File", .access_mode = "ReadWriteMany", .want = "kvol"},
      {.name = "None: never",
       .policy = "None",
       .fs_type = "ext4",
       .access_mode = "ReadWriteOnce",
       .want = "nobody"},
      {.name = "read-only volumes keep their owners",
       .policy = "File",
       .fs_type = "ext4",
       .access_mode = "ReadWriteOnce",
       .read_only = true,
       .want = "nobody"},
      {.name = "a driver with VOLUME_MOUNT_GROUP mounts with the group",
       .policy = "File",
       .fs_type = "ext4",
       .access_mode = "ReadWriteOnce",
       .mount_group = true,
       .want = "driver"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    node_.mount_group = c.mount_group;
    node_.published.clear();
    if (c.policy) {
      api::CSIDriver d;
      d.metadata.name = "fake.csi.io";
      d.spec.fs_group_policy = c.policy;
      host_.PutCSIDriver(d);
    } else {
      host_.DeleteCSIDriver("fake.csi.io");
    }
    Spec spec = PvSpec();
    spec.pv->spec.csi->fs_type = c.fs_type;
    spec.pv->spec.access_modes = {c.access_mode};
    spec.read_only = c.read_only;
    api::Pod pod = Pod();
    pod.spec.security_context.emplace().fs_group = 4321;
    auto mounter = plugin_->NewMounter(spec, pod);
    ASSERT_TRUE(mounter.ok());
    fs::create_directories((*mounter)->GetPath());
    chown((*mounter)->GetPath().c_str(), 0, 0);
    ASSERT_TRUE((*mounter)->SetUp().ok());
    ASSERT_EQ(node_.published.size(), 1u);
    struct stat st;
    ASSERT_EQ(stat((*mounter)->GetPath().c_str(), &st), 0);
    const std::string group = node_.published[0].volume_capability().mount().volume_mount_group();
    const std::string got = st.st_gid == 4321 ? "kvol" : !group.empty() ? "driver" : "nobody";
    EXPECT_EQ(got, c.want);
    if (c.want == "driver") {
      EXPECT_EQ(group, "4321");
    }
    ASSERT_TRUE(plugin_->NewUnmounter("pv-1", "uid-1").value()->TearDown().ok());
  }
}

// requiresRepublish: the volume manager publishes again at each resync.
TEST_F(CsiPluginTest, RequiresRepublishFromTheCSIDriver) {
  EXPECT_FALSE(plugin_->RequiresRemount(PvSpec()));
  api::CSIDriver d;
  d.metadata.name = "fake.csi.io";
  d.spec.requires_republish = true;
  host_.PutCSIDriver(d);
  EXPECT_TRUE(plugin_->RequiresRemount(PvSpec()));
  Spec inline_spec;
  inline_spec.volume.name = "scratch";
  inline_spec.volume.csi = api::CSIVolumeSource{.driver = "fake.csi.io"};
  EXPECT_TRUE(plugin_->RequiresRemount(inline_spec));
}

TEST_F(CsiPluginTest, PodInfoOnMount) {
  api::CSIDriver d;
  d.metadata.name = "fake.csi.io";
  d.spec.pod_info_on_mount = true;
  host_.PutCSIDriver(d);
  api::Pod pod = Pod();
  pod.spec.service_account_name = "builder";
  ASSERT_TRUE(plugin_->NewMounter(PvSpec(), pod).value()->SetUp().ok());
  const auto& ctx = node_.published.back().volume_context();
  EXPECT_EQ(ctx.at("csi.storage.k8s.io/serviceAccount.name"), "builder");
  EXPECT_EQ(ctx.at("csi.storage.k8s.io/pod.uid"), "uid-1");
  EXPECT_FALSE(ctx.contains("csi.storage.k8s.io/ephemeral"));
  EXPECT_EQ(ctx.at("tier"), "gold");
}

TEST_F(CsiPluginTest, TokenRequestsPassThePodsTokensToNodePublish) {
  api::CSIDriver d;
  d.metadata.name = "fake.csi.io";
  d.spec.token_requests = {{.audience = "vault", .expiration_seconds = 600}, {.audience = ""}};
  host_.PutCSIDriver(d);
  ASSERT_TRUE(plugin_->NewMounter(PvSpec(), Pod()).value()->SetUp().ok());
  const auto& ctx = node_.published.back().volume_context();
  ASSERT_TRUE(ctx.contains("csi.storage.k8s.io/serviceAccount.tokens"));
  const auto tokens = nlohmann::json::parse(ctx.at("csi.storage.k8s.io/serviceAccount.tokens"));
  const auto now = host_.clock().Now();
  EXPECT_EQ(tokens, nlohmann::json::parse(
                        R"({"vault":{"token":"vault@p/1","expirationTimestamp":")" +
                        api::Time::FromTimePoint(now + std::chrono::seconds(600)).ToString() +
                        R"("},"":{"token":"@p/2","expirationTimestamp":")" +
                        api::Time::FromTimePoint(now + std::chrono::seconds(3600)).ToString() +
                        R"("}})"));
  EXPECT_FALSE(ctx.contains("csi.storage.k8s.io/pod.name")) << "podInfoOnMount is off";

  // No token, no publish.
  host_.token_error = UnavailableError("the API server is down");
  auto failed = plugin_->NewMounter(PvSpec(), Pod()).value()->SetUp();
  EXPECT_EQ(failed.message(),
            "failed to get service account token attributes: the API server is down");
}

}  // namespace
}  // namespace kvol::volume::plugins
