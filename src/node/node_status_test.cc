// The node's registration, status and Lease against FakeClient with a fake clock.
#include "node/node_status.h"

#include <gtest/gtest.h>

#include "client/testing/fake_client.h"
#include "os/testing/fake_clock.h"

namespace kvol::node {
namespace {

using namespace std::chrono_literals;

class NodeStatusTest : public ::testing::Test {
 protected:
  NodeStatusTest() : manager_(api_, clock_, Options()) {}
  static NodeStatusOptions Options() {
    NodeStatusOptions o;
    o.node_name = "n1";
    o.labels = {{"disk", "ssd"}};
    o.machine.cpus = 2;
    o.machine.memory_bytes = 4LL << 30;
    o.machine.disk_bytes = 100LL << 30;
    o.machine.arch = "amd64";
    o.machine.address = "10.0.0.7";
    o.version = "0.1.0";
    return o;
  }
  api::Node Stored() { return api_.fake<api::Node>().Objects().at("n1"); }

  client::testing::FakeClient api_;
  os::testing::FakeClock clock_;
  NodeStatusManager manager_;
};

TEST_F(NodeStatusTest, RegistersReportsAndRenews) {
  ASSERT_TRUE(manager_.SyncOnce().ok());
  api::Node n = Stored();
  EXPECT_EQ(n.metadata.labels.at("kubernetes.io/hostname"), "n1");
  EXPECT_EQ(n.metadata.labels.at("kubernetes.io/arch"), "amd64");
  EXPECT_EQ(n.metadata.labels.at("disk"), "ssd");
  ASSERT_EQ(n.status.conditions.size(), 1u);
  EXPECT_EQ(n.status.conditions[0].type, "Ready");
  EXPECT_EQ(n.status.conditions[0].reason, "KubeletReady");
  EXPECT_EQ(n.status.capacity.at("cpu"), api::Quantity::MustParse("2"));
  EXPECT_EQ(n.status.addresses[0].address, "10.0.0.7");
  EXPECT_EQ(n.status.unknown_fields["nodeInfo"]["kubeletVersion"], "v0.1.0-kvol");
  auto lease = api_.fake<api::Lease>().Objects().at("kube-node-lease/n1");
  EXPECT_EQ(lease.spec.holder_identity.value_or(""), "n1");

  // Between heartbeats only the Lease is written; volumesInUse changes are written at once.
  api_.state().ClearActions();
  ASSERT_TRUE(manager_.SyncOnce().ok());
  for (const auto& a : api_.state().actions()) EXPECT_NE(a.resource, "nodes") << a.verb;
  manager_.SetVolumesInUse({"kubernetes.io/local-volume/pv1"});
  ASSERT_TRUE(manager_.SyncOnce().ok());
  EXPECT_EQ(Stored().status.volumes_in_use,
            std::vector<std::string>{"kubernetes.io/local-volume/pv1"});
}

TEST_F(NodeStatusTest, ADeletedNodeIsRegisteredAgain) {
  ASSERT_TRUE(manager_.SyncOnce().ok());
  ASSERT_TRUE(api_.resource<api::Node>().Delete("", "n1").ok());
  clock_.Advance(61s);
  EXPECT_FALSE(manager_.SyncOnce().ok()) << "the status write finds no node";
  ASSERT_TRUE(manager_.SyncOnce().ok());
  EXPECT_EQ(Stored().metadata.labels.at("kubernetes.io/hostname"), "n1");
  EXPECT_EQ(Stored().status.conditions.size(), 1u);
}

TEST_F(NodeStatusTest, AnExistingNodeKeepsItsOwnLabelsAndGetsOurs) {
  api::Node mine;
  mine.metadata.name = "n1";
  mine.metadata.labels = {{"team", "storage"}};
  mine.spec.unschedulable = true;
  api_.fake<api::Node>().Seed(mine);
  ASSERT_TRUE(manager_.SyncOnce().ok());
  EXPECT_EQ(Stored().metadata.labels.at("team"), "storage");
  EXPECT_EQ(Stored().metadata.labels.at("disk"), "ssd");
  EXPECT_TRUE(Stored().spec.unschedulable);
}

// Where a remote agent serves logs and exec: the port in status.daemonEndpoints, as kubelet
// reports it, and the certificate's fingerprint as an annotation, on new and existing nodes.
TEST(NodeStatusEndpointTest, PublishesTheAgentsEndpoint) {
  for (bool exists : {false, true}) {
    client::testing::FakeClient api;
    os::testing::FakeClock clock;
    if (exists) {
      api::Node mine;
      mine.metadata.name = "n1";
      mine.metadata.annotations = {{"note", "mine"}};
      api.fake<api::Node>().Seed(mine);
    }
    NodeStatusOptions o;
    o.node_name = "n1";
    o.daemon_port = 10250;
    o.annotations = {{"kvol.io/agent-certificate-sha256", "ab12"}};
    NodeStatusManager manager(api, clock, o);
    ASSERT_TRUE(manager.SyncOnce().ok());
    api::Node n = api.fake<api::Node>().Objects().at("n1");
    EXPECT_EQ(n.metadata.annotations.at("kvol.io/agent-certificate-sha256"), "ab12") << exists;
    EXPECT_EQ(n.status.unknown_fields["daemonEndpoints"]["kubeletEndpoint"]["Port"], 10250);
    if (exists) {
      EXPECT_EQ(n.metadata.annotations.at("note"), "mine");
    }
  }
}

// The pressure conditions: written before Ready in kubelet's order, a change written at once
// with kubelet's event, and nothing written or recorded while they stand.
TEST(NodeStatusPressureTest, WritesChangesAtOnceWithAnEvent) {
  client::testing::FakeClient api;
  os::testing::FakeClock clock;
  auto condition = [](std::string type, std::string status, std::string reason) {
    api::NodeCondition c;
    c.type = std::move(type);
    c.status = std::move(status);
    c.reason = std::move(reason);
    return c;
  };
  std::vector<api::NodeCondition> pressure = {
      condition("MemoryPressure", "False", "KubeletHasSufficientMemory"),
      condition("DiskPressure", "False", "KubeletHasNoDiskPressure")};
  std::vector<std::string> events;
  NodeStatusOptions o;
  o.node_name = "n1";
  o.pressure = [&] { return pressure; };
  o.events = [&](const api::ObjectReference& about, std::string_view type, std::string_view reason,
                 std::string message) {
    EXPECT_EQ(about.kind, "Node");
    EXPECT_EQ(about.name, "n1");
    EXPECT_EQ(type, "Normal");
    events.push_back(std::string(reason) + ": " + message);
  };
  NodeStatusManager manager(api, clock, o);
  auto stored = [&] { return api.fake<api::Node>().Objects().at("n1").status.conditions; };

  ASSERT_TRUE(manager.SyncOnce().ok());
  auto conditions = stored();
  ASSERT_EQ(conditions.size(), 3u);
  EXPECT_EQ(conditions[0].type, "MemoryPressure");
  EXPECT_EQ(conditions[1].type, "DiskPressure");
  EXPECT_EQ(conditions[1].reason, "KubeletHasNoDiskPressure");
  EXPECT_TRUE(conditions[1].last_heartbeat_time.has_value());
  EXPECT_EQ(conditions[2].type, "Ready");
  EXPECT_EQ(events, (std::vector<std::string>{
                        "NodeHasSufficientMemory: Node n1 status is now: NodeHasSufficientMemory",
                        "NodeHasNoDiskPressure: Node n1 status is now: NodeHasNoDiskPressure",
                        "NodeReady: Node n1 status is now: NodeReady"}));
  const auto first_transition = conditions[0].last_transition_time;

  // Nothing changed: only the Lease.
  events.clear();
  api.state().ClearActions();
  clock.Advance(std::chrono::seconds(10));
  ASSERT_TRUE(manager.SyncOnce().ok());
  for (const auto& a : api.state().actions()) EXPECT_NE(a.resource, "nodes") << a.verb;
  EXPECT_TRUE(events.empty());

  // The disk fills: written at once, before the heartbeat is due.
  pressure[1] = condition("DiskPressure", "True", "KubeletHasDiskPressure");
  clock.Advance(std::chrono::seconds(10));
  ASSERT_TRUE(manager.SyncOnce().ok());
  conditions = stored();
  ASSERT_EQ(conditions.size(), 3u);
  EXPECT_EQ(conditions[1].status, "True");
  EXPECT_EQ(conditions[1].reason, "KubeletHasDiskPressure");
  EXPECT_NE(conditions[1].last_transition_time, first_transition);
  EXPECT_EQ(conditions[0].last_transition_time, first_transition) << "MemoryPressure stood";
  EXPECT_EQ(events, (std::vector<std::string>{
                        "NodeHasDiskPressure: Node n1 status is now: NodeHasDiskPressure"}));
}

}  // namespace
}  // namespace kvol::node
