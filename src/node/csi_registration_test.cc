// The registration handshake: a registrar socket and a CSI driver served over real gRPC in
// this process, the API a FakeClient.
#include "node/csi_registration.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "api/well_known.h"
#include "client/testing/fake_client.h"
#include "csi/proto/csi.grpc.pb.h"
#include "csi/proto/pluginregistration.grpc.pb.h"

namespace kvol::node {
namespace {

namespace fs = std::filesystem;
namespace pb = ::csi::v1;
namespace reg = ::pluginregistration;

// node-driver-registrar's side of the handshake, scripted.
class FakeRegistrar final : public reg::Registration::Service {
 public:
  reg::PluginInfo info;
  std::mutex mu;
  std::vector<reg::RegistrationStatus> told;

  grpc::Status GetInfo(grpc::ServerContext*, const reg::InfoRequest*,
                       reg::PluginInfo* out) override {
    *out = info;
    return grpc::Status::OK;
  }
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*, const reg::RegistrationStatus* s,
                                        reg::RegistrationStatusResponse*) override {
    std::lock_guard lock(mu);
    told.push_back(*s);
    return grpc::Status::OK;
  }
};

class FakeDriver final : public pb::Identity::Service, public pb::Node::Service {
 public:
  grpc::Status GetPluginInfo(grpc::ServerContext*, const pb::GetPluginInfoRequest*,
                             pb::GetPluginInfoResponse* out) override {
    out->set_name("fake.csi.io");
    return grpc::Status::OK;
  }
  grpc::Status NodeGetInfo(grpc::ServerContext*, const pb::NodeGetInfoRequest*,
                           pb::NodeGetInfoResponse* out) override {
    out->set_node_id("fake-node-1");
    out->set_max_volumes_per_node(7);
    (*out->mutable_accessible_topology()->mutable_segments())["topology.fake/zone"] = "z1";
    return grpc::Status::OK;
  }
};

std::unique_ptr<grpc::Server> Serve(const std::string& socket,
                                    std::vector<grpc::Service*> services) {
  grpc::ServerBuilder b;
  b.AddListeningPort("unix://" + socket, grpc::InsecureServerCredentials());
  for (auto* s : services) b.RegisterService(s);
  return b.BuildAndStart();
}

class CsiRegistrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kvol-plugins.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ + "/plugins_registry");
    driver_server_ = Serve(dir_ + "/csi.sock", {static_cast<pb::Identity::Service*>(&driver_),
                                                static_cast<pb::Node::Service*>(&driver_)});
    api::Node node;
    node.metadata.name = "n1";
    ASSERT_TRUE(api_.resource<api::Node>().Create(node).ok());
    registrar_.info.set_type("CSIPlugin");
    registrar_.info.set_name("fake.csi.io");
    registrar_.info.set_endpoint(dir_ + "/csi.sock");
    registrar_.info.add_supported_versions("1.0.0");
  }
  void TearDown() override {
    for (auto* s : {&registrar_server_, &driver_server_}) {
      if (*s) (*s)->Shutdown();
    }
    fs::remove_all(dir_);
  }
  std::string RegistrationSocket() const { return dir_ + "/plugins_registry/fake.csi.io-reg.sock"; }
  void StartRegistrar() { registrar_server_ = Serve(RegistrationSocket(), {&registrar_}); }
  pluginwatcher::PluginWatcher Watcher(std::vector<std::string> direct = {}) {
    return pluginwatcher::PluginWatcher(
        {.dir = dir_ + "/plugins_registry", .direct = std::move(direct)}, handler_);
  }
  std::vector<reg::RegistrationStatus> Told() {
    std::lock_guard lock(registrar_.mu);
    return registrar_.told;
  }
  api::Node StoredNode() { return api_.fake<api::Node>().Objects().at("n1"); }

  std::string dir_;
  client::testing::FakeClient api_;
  CsiNodeInfo node_info_{api_, "n1"};
  volume::plugins::CsiDrivers drivers_;
  CsiRegistrationHandler handler_{node_info_, drivers_};
  FakeRegistrar registrar_;
  FakeDriver driver_;
  std::unique_ptr<grpc::Server> registrar_server_, driver_server_;
};

TEST_F(CsiRegistrationTest, RegistersAndDeregistersThroughTheSocket) {
  StartRegistrar();
  auto watcher = Watcher();
  watcher.SyncOnceForTest();

  ASSERT_EQ(Told().size(), 1u);
  EXPECT_TRUE(Told()[0].plugin_registered()) << Told()[0].error();
  auto driver = drivers_.Find("fake.csi.io");
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(driver->node_id, "fake-node-1");
  EXPECT_EQ(driver->max_volumes_per_node, 7);

  const auto csinode = api_.fake<api::CSINode>().Objects().at("n1");
  ASSERT_EQ(csinode.metadata.owner_references.size(), 1u);
  EXPECT_EQ(csinode.metadata.owner_references[0].kind, "Node");
  ASSERT_EQ(csinode.spec.drivers.size(), 1u);
  const auto& entry = csinode.spec.drivers[0];
  EXPECT_EQ(entry.name, "fake.csi.io");
  EXPECT_EQ(entry.node_id, "fake-node-1");
  EXPECT_EQ(entry.topology_keys, std::vector<std::string>{"topology.fake/zone"});
  ASSERT_TRUE(entry.allocatable.has_value());
  EXPECT_EQ(entry.allocatable->count, 7);
  api::Node node = StoredNode();
  EXPECT_EQ(node.metadata.annotations.at(std::string(api::kAnnCSINodeID)),
            R"({"fake.csi.io":"fake-node-1"})");
  EXPECT_EQ(node.metadata.labels.at("topology.fake/zone"), "z1");

  // A second pass changes nothing.
  watcher.SyncOnceForTest();
  EXPECT_EQ(Told().size(), 1u);

  // The socket goes: so does the driver.
  registrar_server_->Shutdown();
  registrar_server_.reset();
  fs::remove(RegistrationSocket());
  watcher.SyncOnceForTest();
  EXPECT_EQ(drivers_.Find("fake.csi.io"), nullptr);
  EXPECT_TRUE(api_.fake<api::CSINode>().Objects().at("n1").spec.drivers.empty());
  EXPECT_FALSE(StoredNode().metadata.annotations.contains(std::string(api::kAnnCSINodeID)));
}

// What the plugin is told when it cannot be registered.
TEST_F(CsiRegistrationTest, RefusalsAreToldToThePlugin) {
  struct Case {
    std::string name;
    std::function<void(reg::PluginInfo&)> edit;
    std::string error;  // a part of what the plugin is told
  };
  const std::vector<Case> cases = {
      {"another type", [](auto& i) { i.set_type("DevicePlugin"); },
       "no handler registered for plugin type: DevicePlugin"},
      {"no CSI version kvol speaks",
       [](auto& i) {
         i.clear_supported_versions();
         i.add_supported_versions("0.3.0");
       },
       "none of the versions specified [0.3.0] are supported"},
      {"no name", [](auto& i) { i.clear_name(); }, "gave no name"},
      {"a driver that does not answer",
       [this](auto& i) { i.set_endpoint(dir_ + "/nothing-here.sock"); }, "NodeGetInfo failed"},
  };
  for (const auto& c : cases) {
    const reg::PluginInfo good = registrar_.info;
    c.edit(registrar_.info);
    StartRegistrar();
    Watcher().SyncOnceForTest();
    const auto told = Told();
    ASSERT_EQ(told.size(), 1u) << c.name;
    EXPECT_FALSE(told[0].plugin_registered()) << c.name;
    EXPECT_NE(told[0].error().find(c.error), std::string::npos)
        << c.name << ": " << told[0].error();
    EXPECT_TRUE(drivers_.Names().empty()) << c.name;
    EXPECT_FALSE(api_.fake<api::CSINode>().Objects().contains("n1")) << c.name;
    registrar_server_->Shutdown();
    registrar_server_.reset();
    fs::remove(RegistrationSocket());
    registrar_.info = good;
    registrar_.told.clear();
  }
}

// --csi-driver: no registration socket; the name from GetPluginInfo.
TEST_F(CsiRegistrationTest, DirectRegistration) {
  auto watcher = Watcher({"unix://" + dir_ + "/csi.sock"});
  watcher.SyncOnceForTest();
  auto driver = drivers_.Find("fake.csi.io");
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(driver->endpoint, "unix://" + dir_ + "/csi.sock");
  EXPECT_EQ(api_.fake<api::CSINode>().Objects().at("n1").spec.drivers.size(), 1u);
}

}  // namespace
}  // namespace kvol::node
