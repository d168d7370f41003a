// The built-in attacher against a FakeClient and a scripted CSI controller over real gRPC.
#include "controller/attacher/attacher.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "base/strings.h"
#include "client/testing/fake_client.h"
#include "csi/proto/csi.grpc.pb.h"

namespace kvol::controller::attacher {
namespace {

namespace pb = ::csi::v1;

class ScriptedController final : public pb::Controller::Service {
 public:
  bool publish_unpublish = true;
  grpc::Status answer = grpc::Status::OK;
  std::mutex mu;
  std::vector<pb::ControllerPublishVolumeRequest> published;
  std::vector<pb::ControllerUnpublishVolumeRequest> unpublished;

  grpc::Status ControllerGetCapabilities(grpc::ServerContext*,
                                         const pb::ControllerGetCapabilitiesRequest*,
                                         pb::ControllerGetCapabilitiesResponse* out) override {
    out->add_capabilities()->mutable_rpc()->set_type(
        pb::ControllerServiceCapability::RPC::CREATE_DELETE_VOLUME);
    if (publish_unpublish) {
      out->add_capabilities()->mutable_rpc()->set_type(
          pb::ControllerServiceCapability::RPC::PUBLISH_UNPUBLISH_VOLUME);
    }
    return grpc::Status::OK;
  }
  grpc::Status ControllerPublishVolume(grpc::ServerContext*,
                                       const pb::ControllerPublishVolumeRequest* req,
                                       pb::ControllerPublishVolumeResponse* out) override {
    std::lock_guard lock(mu);
    published.push_back(*req);
    (*out->mutable_publish_context())["devicePath"] = "/dev/loop9";
    return answer;
  }
  grpc::Status ControllerUnpublishVolume(grpc::ServerContext*,
                                         const pb::ControllerUnpublishVolumeRequest* req,
                                         pb::ControllerUnpublishVolumeResponse*) override {
    std::lock_guard lock(mu);
    unpublished.push_back(*req);
    return answer;
  }
};

class AttacherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kvol-attacher.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    grpc::ServerBuilder b;
    b.AddListeningPort("unix://" + dir_ + "/csi.sock", grpc::InsecureServerCredentials());
    b.RegisterService(&driver_);
    server_ = b.BuildAndStart();
    auto driver = std::make_shared<volume::plugins::CsiDriver>();
    driver->name = "fake.csi.io";
    driver->endpoint = "unix://" + dir_ + "/csi.sock";
    driver->client = *csi::Client::New(driver->endpoint);
    drivers_.Add(driver);

    api::CSINode node;
    node.metadata.name = "n1";
    node.spec.drivers.push_back({.name = "fake.csi.io", .node_id = "fake-node-1"});
    ASSERT_TRUE(api_.resource<api::CSINode>().Create(node).ok());
    api::PersistentVolume pv;
    pv.metadata.name = "pv1";
    pv.spec.access_modes = {"ReadWriteOnce"};
    pv.spec.csi = api::CSIPersistentVolumeSource{
        .driver = "fake.csi.io",
        .volume_handle = "h1",
        .read_only = true,
        .fs_type = "xfs",
        .volume_attributes = {{"tier", "gold"}},
        .controller_publish_secret_ref = api::SecretReference{.name = "s", .namespace_ = "ns"}};
    ASSERT_TRUE(api_.resource<api::PersistentVolume>().Create(pv).ok());
    api::Secret secret;
    secret.metadata = {.name = "s", .namespace_ = "ns"};
    secret.data = {{"key", Base64Encode("value")}};
    ASSERT_TRUE(api_.resource<api::Secret>().Create(secret).ok());
  }
  void TearDown() override {
    server_->Shutdown();
    std::filesystem::remove_all(dir_);
  }
  api::VolumeAttachment MakeAttachment(std::string name, std::string attacher, std::string node) {
    api::VolumeAttachment va;
    va.metadata.name = std::move(name);
    va.spec.attacher = std::move(attacher);
    va.spec.node_name = std::move(node);
    va.spec.source.persistent_volume_name = "pv1";
    auto created = api_.resource<api::VolumeAttachment>().Create(va);
    EXPECT_TRUE(created.ok());
    return *created;
  }
  api::VolumeAttachment Stored(const std::string& name) {
    return api_.fake<api::VolumeAttachment>().Objects().at(name);
  }
  // Syncs until the attacher has nothing more to do (a finalizer added is a pass of its own).
  Status Sync(const std::string& name) {
    Status s = attacher_.SyncAttachment(Stored(name));
    if (s.code() == StatusCode::kAborted) s = attacher_.SyncAttachment(Stored(name));
    return s;
  }

  std::string dir_;
  ScriptedController driver_;
  std::unique_ptr<grpc::Server> server_;
  volume::plugins::CsiDrivers drivers_;
  client::testing::FakeClient api_;
  Controller attacher_{api_, {.node_name = "n1", .drivers = &drivers_}};
};

TEST_F(AttacherTest, AttachesThenDetaches) {
  MakeAttachment("va1", "fake.csi.io", "n1");
  ASSERT_TRUE(Sync("va1").ok());
  api::VolumeAttachment va = Stored("va1");
  EXPECT_EQ(va.metadata.finalizers, std::vector<std::string>{"external-attacher/fake.csi.io"});
  ASSERT_TRUE(va.status.has_value());
  EXPECT_TRUE(va.status->attached);
  EXPECT_EQ(va.status->attachment_metadata.at("devicePath"), "/dev/loop9");
  ASSERT_EQ(driver_.published.size(), 1u);
  const auto& req = driver_.published[0];
  EXPECT_EQ(req.volume_id(), "h1");
  EXPECT_EQ(req.node_id(), "fake-node-1");
  EXPECT_TRUE(req.readonly());
  EXPECT_EQ(req.volume_capability().mount().fs_type(), "xfs");
  EXPECT_EQ(req.volume_capability().access_mode().mode(),
            pb::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
  EXPECT_EQ(req.volume_context().at("tier"), "gold");
  EXPECT_EQ(req.secrets().at("key"), "value");

  // Attached: nothing more.
  ASSERT_TRUE(Sync("va1").ok());
  EXPECT_EQ(driver_.published.size(), 1u);

  // Deleted: unpublished, and the finalizer goes.
  va = Stored("va1");
  va.metadata.deletion_timestamp = api::Time::FromUnixSeconds(1);
  ASSERT_TRUE(api_.resource<api::VolumeAttachment>().Update(va).ok());
  ASSERT_TRUE(Sync("va1").ok());
  ASSERT_EQ(driver_.unpublished.size(), 1u);
  EXPECT_EQ(driver_.unpublished[0].volume_id(), "h1");
  EXPECT_EQ(driver_.unpublished[0].node_id(), "fake-node-1");
  // Its last finalizer gone, the deleted attachment is gone.
  EXPECT_FALSE(api_.fake<api::VolumeAttachment>().Objects().contains("va1"));
}

TEST_F(AttacherTest, ErrorsAreWrittenOnTheAttachment) {
  MakeAttachment("va1", "fake.csi.io", "n1");
  driver_.answer = grpc::Status(grpc::StatusCode::INTERNAL, "no loop device");
  EXPECT_FALSE(Sync("va1").ok());
  api::VolumeAttachment va = Stored("va1");
  ASSERT_TRUE(va.status && va.status->attach_error);
  EXPECT_FALSE(va.status->attached);
  EXPECT_EQ(va.status->attach_error->message, "rpc error: code = Internal desc = no loop device");

  driver_.answer = grpc::Status::OK;
  ASSERT_TRUE(Sync("va1").ok());
  va = Stored("va1");
  EXPECT_TRUE(va.status->attached);

  va.metadata.deletion_timestamp = api::Time::FromUnixSeconds(1);
  ASSERT_TRUE(api_.resource<api::VolumeAttachment>().Update(va).ok());
  driver_.answer = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "still mounted");
  EXPECT_FALSE(Sync("va1").ok());
  va = Stored("va1");
  ASSERT_TRUE(va.status->detach_error);
  EXPECT_NE(va.status->detach_error->message.find("still mounted"), std::string::npos);
  EXPECT_EQ(va.metadata.finalizers.size(), 1u);  // kept until the volume is unpublished
}

TEST_F(AttacherTest, DriverWithoutPublishIsAttachedWithoutACall) {
  driver_.publish_unpublish = false;
  MakeAttachment("va1", "fake.csi.io", "n1");
  ASSERT_TRUE(Sync("va1").ok());
  EXPECT_TRUE(Stored("va1").status->attached);
  EXPECT_TRUE(driver_.published.empty());
}

TEST_F(AttacherTest, OthersAreLeftAlone) {
  MakeAttachment("other-driver", "ebs.csi.aws.com", "n1");
  MakeAttachment("other-node", "fake.csi.io", "n2");
  for (const char* name : {"other-driver", "other-node"}) {
    ASSERT_TRUE(Sync(name).ok());
    EXPECT_TRUE(Stored(name).metadata.finalizers.empty()) << name;
    EXPECT_FALSE(Stored(name).status.has_value()) << name;
  }
  EXPECT_TRUE(driver_.published.empty());
}

}  // namespace
}  // namespace kvol::controller::attacher
