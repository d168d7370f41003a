// The built-in CSI resizer against a FakeClient and an expander that records what it was asked.
#include "controller/resizer/resizer.h"

#include <gtest/gtest.h>

#include "api/pod_status.h"
#include "api/well_known.h"
#include "client/testing/fake_client.h"
#include "controller/expand/resize_status.h"

namespace kvol::controller::resizer {
namespace {

using client::testing::FakeClient;

constexpr char kDriver[] = "kvol.io/loop";

class FakeExpander final : public VolumeExpander {
 public:
  StatusOr<Expanded> Expand(const volume::plugins::CsiDriver& driver,
                            const api::PersistentVolume& pv, int64_t required_bytes,
                            const std::map<std::string, std::string>& secrets) override {
    std::string call = driver.name + " " + pv.spec.csi->volume_handle + " " +
                       std::to_string(required_bytes);
    for (const auto& [k, v] : secrets) call += " " + k + "=" + v;
    calls.push_back(call);
    if (!error.ok()) return error;
    return Expanded{.capacity_bytes = rounded_to ? rounded_to : required_bytes,
                    .node_expansion_required = node_expansion};
  }
  std::vector<std::string> calls;
  Status error;
  int64_t rounded_to = 0;
  bool node_expansion = false;
};

class ResizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    drivers_.Add(std::make_shared<volume::plugins::CsiDriver>(
        volume::plugins::CsiDriver{.name = kDriver, .endpoint = "unix:///none"}));
  }
  void Start(bool central = true) {
    Options o;
    o.node_name = "node-1";
    o.drivers = &drivers_;
    o.central = central;
    o.expander = &expander_;
    o.events = [this](const api::ObjectReference&, std::string_view type, std::string_view reason,
                      std::string msg) {
      events_.push_back(std::string(type) + " " + std::string(reason) + " " + msg);
    };
    ctrl_ = std::make_unique<Controller>(api_, o);
  }
  // A Bound claim default/data of 1Gi asking for `request`, annotated for `resizer`, on CSI
  // volume pv-1 of kvol.io/loop.
  api::PersistentVolumeClaim Seed(const std::string& request, const std::string& resizer = kDriver,
                                  bool with_affinity = false) {
    api::PersistentVolume pv;
    pv.metadata.name = "pv-1";
    pv.spec.capacity["storage"] = api::Quantity::MustParse("1Gi");
    auto& csi = pv.spec.csi.emplace();
    csi.driver = kDriver;
    csi.volume_handle = "vol-1";
    if (with_affinity) {
      api::NodeSelectorTerm term;
      term.match_expressions.push_back(
          {.key = "kubernetes.io/hostname", .operator_ = "In", .values = {"node-2"}});
      pv.spec.node_affinity.emplace().required.emplace().node_selector_terms.push_back(term);
    }
    api::PersistentVolumeClaim c;
    c.metadata.namespace_ = "default";
    c.metadata.name = "data";
    if (!resizer.empty()) c.metadata.annotations[std::string(api::kAnnStorageResizer)] = resizer;
    c.spec.volume_name = "pv-1";
    c.spec.resources.requests["storage"] = api::Quantity::MustParse(request);
    c.status.phase = "Bound";
    c.status.capacity["storage"] = api::Quantity::MustParse("1Gi");
    c = api_.fake<api::PersistentVolumeClaim>().Seed(c);
    auto& ref = pv.spec.claim_ref.emplace();
    ref.uid = c.metadata.uid;
    ref.namespace_ = "default";
    ref.name = "data";
    api_.fake<api::PersistentVolume>().Seed(pv);
    return c;
  }
  api::PersistentVolumeClaim Claim() {
    return api_.fake<api::PersistentVolumeClaim>().Objects().at("default/data");
  }
  api::PersistentVolume Volume() { return api_.fake<api::PersistentVolume>().Objects().at("pv-1"); }
  std::vector<std::string> Conditions() {
    std::vector<std::string> out;
    for (const auto& c : Claim().status.conditions) out.push_back(c.type + "=" + c.status);
    return out;
  }

  FakeClient api_;
  volume::plugins::CsiDrivers drivers_;
  FakeExpander expander_;
  std::unique_ptr<Controller> ctrl_;
  std::vector<std::string> events_;
};

TEST_F(ResizerTest, GrowsTheVolumeAndLeavesTheFilesystemToTheNode) {
  Start();
  expander_.node_expansion = true;
  ASSERT_TRUE(ctrl_->SyncClaim(Seed("2Gi")).ok());
  EXPECT_EQ(expander_.calls, std::vector<std::string>{"kvol.io/loop vol-1 2147483648"});
  EXPECT_EQ(Volume().spec.capacity.at("storage"), api::Quantity::MustParse("2Gi"));
  EXPECT_EQ(Claim().status.capacity.at("storage"), api::Quantity::MustParse("1Gi"));
  EXPECT_EQ(Conditions(), std::vector<std::string>{"FileSystemResizePending=True"});
  EXPECT_EQ(Claim().status.conditions[0].message, expand::kFileSystemResizePendingMessage);
  EXPECT_EQ(Claim().status.allocated_resources.at("storage"), api::Quantity::MustParse("2Gi"));
  EXPECT_EQ(Claim().status.allocated_resource_statuses.at("storage"), "NodeResizePending");
  EXPECT_EQ(events_, (std::vector<std::string>{
                         "Normal Resizing External resizer is resizing volume pv-1",
                         "Normal FileSystemResizeRequired Require file system resize of volume on "
                         "node"}));
  ASSERT_TRUE(ctrl_->SyncClaim(Claim()).ok());
  EXPECT_EQ(expander_.calls.size(), 1u) << "the node's turn now";
}

TEST_F(ResizerTest, AVolumeWithoutNodeExpansionFinishesTheClaim) {
  Start();
  expander_.rounded_to = 3LL << 30;  // the driver gives more than asked
  ASSERT_TRUE(ctrl_->SyncClaim(Seed("2Gi")).ok());
  EXPECT_EQ(Volume().spec.capacity.at("storage"), api::Quantity::MustParse("3Gi"));
  EXPECT_EQ(Claim().status.capacity.at("storage"), api::Quantity::MustParse("3Gi"));
  EXPECT_TRUE(Conditions().empty());
  EXPECT_FALSE(Claim().status.allocated_resource_statuses.count("storage"));
  EXPECT_EQ(events_.back(), "Normal VolumeResizeSuccessful Resize volume succeeded");
  ASSERT_TRUE(ctrl_->SyncClaim(Claim()).ok());
  EXPECT_EQ(expander_.calls.size(), 1u) << "done";
}

TEST_F(ResizerTest, AFailureIsAnEventAndTheNextSyncRetries) {
  Start();
  expander_.error = ResourceExhaustedError("not enough space: 2147483648 bytes asked");
  EXPECT_FALSE(ctrl_->SyncClaim(Seed("2Gi")).ok());
  EXPECT_EQ(events_.back(),
            "Warning VolumeResizeFailed resize volume \"pv-1\" by resizer \"kvol.io/loop\" "
            "failed: not enough space: 2147483648 bytes asked");
  EXPECT_EQ(Conditions(), std::vector<std::string>{"Resizing=True"});
  EXPECT_EQ(Claim().status.allocated_resource_statuses.at("storage"), "ControllerResizeInProgress");
  EXPECT_EQ(Volume().spec.capacity.at("storage"), api::Quantity::MustParse("1Gi"));
  expander_.error = OkStatus();
  ASSERT_TRUE(ctrl_->SyncClaim(Claim()).ok());
  EXPECT_EQ(Claim().status.capacity.at("storage"), api::Quantity::MustParse("2Gi"));
  EXPECT_TRUE(Conditions().empty());
}

TEST_F(ResizerTest, ACrashAfterTheVolumeGrewAsksTheDriverAgainAndFinishes) {
  Start();
  auto c = Seed("2Gi");
  // What a resizer that died after the driver answered left: the volume at 2Gi, the claim
  // still Resizing at 1Gi. Only the driver knows whether the node must grow the filesystem.
  api::PersistentVolume pv = Volume();
  pv.spec.capacity["storage"] = api::Quantity::MustParse("2Gi");
  ASSERT_TRUE(api_.resource<api::PersistentVolume>().Update(pv).ok());
  c.status.conditions.push_back({.type = "Resizing", .status = "True"});
  c = *api_.resource<api::PersistentVolumeClaim>().UpdateStatus(c);
  ASSERT_TRUE(ctrl_->SyncClaim(c).ok());
  EXPECT_EQ(expander_.calls.size(), 1u);
  EXPECT_EQ(Claim().status.capacity.at("storage"), api::Quantity::MustParse("2Gi"));
  EXPECT_TRUE(Conditions().empty());
}

TEST_F(ResizerTest, AStaleCopyOfTheClaimDoesNotUndoTheNodesTurn) {
  Start();
  expander_.node_expansion = true;
  const api::PersistentVolumeClaim stale = Seed("2Gi");
  ASSERT_TRUE(ctrl_->SyncClaim(stale).ok());
  ASSERT_EQ(Conditions(), std::vector<std::string>{"FileSystemResizePending=True"});
  // A cache that has not seen the claim's last write yet hands the old copy again: the stored
  // claim waits for its node, which is left alone.
  ASSERT_TRUE(ctrl_->SyncClaim(stale).ok());
  EXPECT_EQ(expander_.calls.size(), 1u);
  EXPECT_EQ(Conditions(), std::vector<std::string>{"FileSystemResizePending=True"});
  // The node finished; the old copy again: nothing comes back.
  api::PersistentVolumeClaim done = Claim();
  api::MarkClaimResizeFinished(done.status, api::Quantity::MustParse("2Gi"));
  ASSERT_TRUE(api_.resource<api::PersistentVolumeClaim>().UpdateStatus(done).ok());
  ASSERT_TRUE(ctrl_->SyncClaim(stale).ok());
  EXPECT_EQ(expander_.calls.size(), 1u);
  EXPECT_TRUE(Conditions().empty());
  EXPECT_EQ(Claim().status.capacity.at("storage"), api::Quantity::MustParse("2Gi"));
}

TEST_F(ResizerTest, TheControllerExpandSecretIsPassed) {
  Start();
  auto c = Seed("2Gi");
  api::Secret s;
  s.metadata.namespace_ = "kube-system";
  s.metadata.name = "expand";
  s.data["token"] = "czNjcjN0";  // s3cr3t
  api_.fake<api::Secret>().Seed(s);
  api::PersistentVolume pv = Volume();
  pv.spec.csi->controller_expand_secret_ref =
      api::SecretReference{.name = "expand", .namespace_ = "kube-system"};
  ASSERT_TRUE(api_.resource<api::PersistentVolume>().Update(pv).ok());
  ASSERT_TRUE(ctrl_->SyncClaim(c).ok());
  EXPECT_EQ(expander_.calls, std::vector<std::string>{"kvol.io/loop vol-1 2147483648 token=s3cr3t"});
}

TEST_F(ResizerTest, ClaimsNotHandedToADriverHereAreLeftAlone) {
  Start();
  ASSERT_TRUE(ctrl_->SyncClaim(Seed("2Gi", /*resizer=*/"")).ok());
  api::PersistentVolumeClaim other = Claim();
  other.metadata.annotations[std::string(api::kAnnStorageResizer)] = "ebs.csi.aws.com";
  ASSERT_TRUE(ctrl_->SyncClaim(other).ok());
  EXPECT_TRUE(expander_.calls.empty());
  EXPECT_TRUE(events_.empty());
  EXPECT_TRUE(Conditions().empty());
}

TEST_F(ResizerTest, AVolumeOfAnotherNodeIsThatNodesAgents) {
  Start(/*central=*/true);
  api::Node node;
  node.metadata.name = "node-1";
  node.metadata.labels["kubernetes.io/hostname"] = "node-1";
  api_.fake<api::Node>().Seed(node);
  ASSERT_TRUE(ctrl_->SyncClaim(Seed("2Gi", kDriver, /*with_affinity=*/true)).ok());
  EXPECT_TRUE(expander_.calls.empty()) << "the volume is on node-2";
}

TEST_F(ResizerTest, AVolumeWithoutAffinityIsTheCentralAgents) {
  Start(/*central=*/false);
  ASSERT_TRUE(ctrl_->SyncClaim(Seed("2Gi")).ok());
  EXPECT_TRUE(expander_.calls.empty());
}

TEST_F(ResizerTest, SatisfiedOrUnboundClaimsNeedNothing) {
  Start();
  auto c = Seed("1Gi");
  ASSERT_TRUE(ctrl_->SyncClaim(c).ok());
  c.spec.resources.requests["storage"] = api::Quantity::MustParse("5Gi");
  c.status.phase = "Pending";
  ASSERT_TRUE(ctrl_->SyncClaim(c).ok());
  EXPECT_TRUE(expander_.calls.empty());
}

}  // namespace
}  // namespace kvol::controller::resizer
