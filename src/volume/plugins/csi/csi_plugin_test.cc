// The csi plugin against a scripted CSI node service over real gRPC, on a FakeHost.
#include "volume/plugins/csi/csi_plugin.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/sha256.h"
#include "csi/names.h"
#include "volume/plugins/csi/csi_drivers.h"
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
    EXPECT_EQ(dm->NeedsDeviceMount(spec), c.stage_capability) << c.name;
    Status s = dm->MountDevice(spec, "");
    EXPECT_EQ(s.code(), c.mount_device) << c.name << ": " << s.message();
    if (!s.ok())
      EXPECT_NE(s.message().find(c.message), std::string::npos) << c.name << ": " << s.message();
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
    if (!s.ok())
      EXPECT_NE(s.message().find(c.message), std::string::npos) << c.name << ": " << s.message();
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

  auto unmounter = NewCsiPlugin(host_)->NewUnmounter("scratch", "uid-1");
  ASSERT_TRUE((*unmounter)->TearDown().ok());
  EXPECT_EQ(node_.calls.back(),
            "unpublish csi-" + Sha256Hex("uid-1scratch") + " " + (*mounter)->GetPath());

  // A driver that serves only inline volumes refuses PersistentVolumes.
  s = plugin_->NewMounter(PvSpec(), Pod()).value()->SetUp();
  EXPECT_EQ(s.message(),
            "volume mode \"Persistent\" not supported by driver fake.csi.io (only "
            "supports [\"Ephemeral\"])");
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

}  // namespace
}  // namespace kvol::volume::plugins
