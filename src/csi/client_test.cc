// The CSI client against a scripted driver served over real gRPC on a unix socket.
#include "csi/client.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "csi/redact.h"

namespace kvol::csi {
namespace {

// A node service whose answers the test sets.
class ScriptedNode final : public pb::Node::Service {
 public:
  grpc::Status stage_answer = grpc::Status::OK;
  std::chrono::milliseconds info_delay{0};

  grpc::Status NodeStageVolume(grpc::ServerContext*, const pb::NodeStageVolumeRequest*,
                               pb::NodeStageVolumeResponse*) override {
    return stage_answer;
  }
  grpc::Status NodeGetInfo(grpc::ServerContext*, const pb::NodeGetInfoRequest*,
                           pb::NodeGetInfoResponse* resp) override {
    std::this_thread::sleep_for(info_delay);
    resp->set_node_id("node-1");
    return grpc::Status::OK;
  }
  grpc::Status NodeGetCapabilities(grpc::ServerContext*, const pb::NodeGetCapabilitiesRequest*,
                                   pb::NodeGetCapabilitiesResponse* resp) override {
    resp->add_capabilities()->mutable_rpc()->set_type(
        pb::NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME);
    return grpc::Status::OK;
  }
};

// A controller service that counts how often it is asked for its capabilities.
class ScriptedController final : public pb::Controller::Service {
 public:
  std::vector<pb::ControllerServiceCapability::RPC::Type> offered;
  std::atomic<int> asked{0};

  grpc::Status ControllerGetCapabilities(grpc::ServerContext*,
                                         const pb::ControllerGetCapabilitiesRequest*,
                                         pb::ControllerGetCapabilitiesResponse* resp) override {
    ++asked;
    for (auto rpc : offered) resp->add_capabilities()->mutable_rpc()->set_type(rpc);
    return grpc::Status::OK;
  }
};

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kvol-csi-client.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    socket_ = dir_ + "/csi.sock";
    Serve();
    auto c = Client::New("unix://" + socket_);
    ASSERT_TRUE(c.ok());
    client_ = *std::move(c);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    std::filesystem::remove_all(dir_);
  }
  void Serve() {
    unlink(socket_.c_str());
    grpc::ServerBuilder b;
    b.AddListeningPort("unix://" + socket_, grpc::InsecureServerCredentials());
    b.RegisterService(&node_);
    b.RegisterService(&controller_);
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }

  std::string dir_, socket_;
  ScriptedNode node_;
  ScriptedController controller_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientTest, DriverErrorsReadAsKubeletReportsThem) {
  node_.stage_answer = grpc::Status(grpc::StatusCode::INTERNAL, "mkfs failed");
  auto r = client_->Call(&pb::Node::Stub::NodeStageVolume, pb::NodeStageVolumeRequest());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_EQ(r.status().message(), "rpc error: code = Internal desc = mkfs failed");
  EXPECT_TRUE(IsFinal(r.status()));
}

// Kubelet's split between final errors and those after which a mount is uncertain.
TEST(IsFinalTest, AsKubeletDecides) {
  struct Case {
    grpc::StatusCode code;
    bool final;
  };
  const Case cases[] = {
      {grpc::StatusCode::CANCELLED, false},
      {grpc::StatusCode::DEADLINE_EXCEEDED, false},
      {grpc::StatusCode::UNAVAILABLE, false},
      {grpc::StatusCode::RESOURCE_EXHAUSTED, false},
      {grpc::StatusCode::ABORTED, false},
      {grpc::StatusCode::INTERNAL, true},
      {grpc::StatusCode::INVALID_ARGUMENT, true},
      {grpc::StatusCode::NOT_FOUND, true},
      {grpc::StatusCode::FAILED_PRECONDITION, true},
      {grpc::StatusCode::UNKNOWN, true},
      {grpc::StatusCode::UNIMPLEMENTED, true},
      {grpc::StatusCode::ALREADY_EXISTS, true},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(IsFinal(FromGrpc(grpc::Status(c.code, "x"))), c.final) << c.code;
  }
  // An error that did not come from the driver: the operation may be under way.
  EXPECT_FALSE(IsFinal(InternalError("cannot create the target directory")));
}

TEST_F(ClientTest, EveryCallHasADeadline) {
  node_.info_delay = std::chrono::milliseconds(1500);
  auto r = client_->Call(&pb::Node::Stub::NodeGetInfo, pb::NodeGetInfoRequest(),
                         std::chrono::milliseconds(100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(IsFinal(r.status()));
}

TEST_F(ClientTest, FollowsTheDriverThroughARestart) {
  ASSERT_TRUE(client_->NodeGetInfo().ok());
  server_->Shutdown();
  server_.reset();
  auto down = client_->Call(&pb::Node::Stub::NodeGetInfo, pb::NodeGetInfoRequest(),
                            std::chrono::milliseconds(500));
  ASSERT_FALSE(down.ok());
  EXPECT_FALSE(IsFinal(down.status())) << down.status().message();
  Serve();
  // Found again within the reconnect backoff (at most a second).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  StatusOr<pb::NodeGetInfoResponse> up = UnavailableError("not tried");
  while (!up.ok() && std::chrono::steady_clock::now() < deadline) {
    up = client_->Call(&pb::Node::Stub::NodeGetInfo, pb::NodeGetInfoRequest(),
                       std::chrono::milliseconds(500));
  }
  ASSERT_TRUE(up.ok()) << up.status().message();
  EXPECT_EQ(up->node_id(), "node-1");
  auto stage = client_->NodeSupports(pb::NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME);
  ASSERT_TRUE(stage.ok());
  EXPECT_TRUE(*stage);
  auto stats = client_->NodeSupports(pb::NodeServiceCapability::RPC::GET_VOLUME_STATS);
  ASSERT_TRUE(stats.ok());
  EXPECT_FALSE(*stats);
}

TEST_F(ClientTest, ControllerCapabilitiesAreAskedOncePerConnection) {
  using Rpc = pb::ControllerServiceCapability::RPC;
  controller_.offered = {Rpc::CREATE_DELETE_VOLUME};
  for (int i = 0; i < 3; ++i) {
    auto create = client_->ControllerSupports(Rpc::CREATE_DELETE_VOLUME);
    ASSERT_TRUE(create.ok()) << create.status().message();
    EXPECT_TRUE(*create);
    auto expand = client_->ControllerSupports(Rpc::EXPAND_VOLUME);
    ASSERT_TRUE(expand.ok());
    EXPECT_FALSE(*expand);
  }
  EXPECT_EQ(controller_.asked.load(), 1);
  // A driver that went away and came back (perhaps another version) is asked again.
  server_->Shutdown();
  server_.reset();
  auto down = client_->Call(&pb::Node::Stub::NodeGetInfo, pb::NodeGetInfoRequest(),
                            std::chrono::milliseconds(500));
  ASSERT_FALSE(down.ok());
  ASSERT_EQ(down.status().code(), StatusCode::kUnavailable) << down.status().message();
  controller_.offered = {Rpc::CREATE_DELETE_VOLUME, Rpc::EXPAND_VOLUME};
  Serve();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  StatusOr<bool> expand = UnavailableError("not tried");
  while (!expand.ok() && std::chrono::steady_clock::now() < deadline) {
    expand = client_->ControllerSupports(Rpc::EXPAND_VOLUME);
  }
  ASSERT_TRUE(expand.ok()) << expand.status().message();
  EXPECT_TRUE(*expand);
  EXPECT_EQ(controller_.asked.load(), 2);
}

TEST(StripSecretsTest, SecretValuesNeverShow) {
  pb::NodeStageVolumeRequest stage;
  stage.set_volume_id("vol-1");
  (*stage.mutable_secrets())["password"] = "hunter2";
  (*stage.mutable_volume_context())["server"] = "nfs-1";
  const std::string text = StripSecrets(stage);
  EXPECT_EQ(text.find("hunter2"), std::string::npos) << text;
  EXPECT_NE(text.find("password"), std::string::npos) << text;
  EXPECT_NE(text.find(kStripped), std::string::npos) << text;
  EXPECT_NE(text.find("nfs-1"), std::string::npos) << text;
  EXPECT_NE(text.find("vol-1"), std::string::npos) << text;
  // The original is untouched.
  EXPECT_EQ(stage.secrets().at("password"), "hunter2");

  pb::CreateVolumeRequest create;
  create.set_name("pvc-1");
  (*create.mutable_secrets())["token"] = "s3cr3t";
  (*create.mutable_parameters())["type"] = "fast";
  EXPECT_EQ(StripSecrets(create).find("s3cr3t"), std::string::npos);
  EXPECT_NE(StripSecrets(create).find("fast"), std::string::npos);
}

TEST(UnixTargetTest, Endpoints) {
  struct Case {
    std::string endpoint;
    std::string target;  // "" when refused
  };
  const Case cases[] = {
      {"unix:///run/csi.sock", "unix:///run/csi.sock"},
      {"unix:/run/csi.sock", "unix:///run/csi.sock"},
      {"/run/csi.sock", "unix:///run/csi.sock"},
      {"tcp://127.0.0.1:10000", ""},
      {"run/csi.sock", ""},
      {"unix://", ""},
  };
  for (const auto& c : cases) {
    auto t = UnixTarget(c.endpoint);
    if (c.target.empty()) {
      EXPECT_FALSE(t.ok()) << c.endpoint;
    } else {
      ASSERT_TRUE(t.ok()) << c.endpoint;
      EXPECT_EQ(*t, c.target);
    }
  }
}

}  // namespace
}  // namespace kvol::csi
