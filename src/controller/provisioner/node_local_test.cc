// A node agent's own kvol.io/local-path provisioner against a FakeClient and a real directory.
#include "controller/provisioner/node_local.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "api/well_known.h"
#include "client/testing/fake_client.h"
#include "volume/local_path.h"
#include "volume/testing/temp_dir.h"

namespace kvol::controller::provisioner {
namespace {

namespace fs = std::filesystem;
using client::testing::FakeClient;

class NodeLocalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    provisioner_ = std::make_unique<volume::LocalPathProvisioner>(
        volume::LocalPathOptions{root_.path(), "node-2"});
    ctrl_ = std::make_unique<NodeLocalController>(
        api_, NodeLocalOptions{.node_name = "node-2", .provisioner = provisioner_.get()});
    api::StorageClass cls;
    cls.metadata.name = "local-path";
    cls.provisioner = "kvol.io/local-path";
    cls.volume_binding_mode = "WaitForFirstConsumer";
    api_.fake<api::StorageClass>().Seed(cls);
    for (std::string name : {"node-1", "node-2"}) {
      api::Node n;
      n.metadata.name = name;
      n.metadata.labels["kubernetes.io/hostname"] = name;
      api_.fake<api::Node>().Seed(n);
    }
  }
  // A claim of class local-path that the PV controller left to an agent, given to `node`.
  api::PersistentVolumeClaim Claim(const std::string& node, const std::string& mode = "") {
    api::PersistentVolumeClaim c;
    c.metadata.namespace_ = "default";
    c.metadata.name = "data";
    c.metadata.annotations[std::string(api::kAnnStorageProvisioner)] = "kvol.io/local-path";
    c.metadata.annotations[std::string(api::kAnnSelectedNode)] = node;
    c.spec.storage_class_name = "local-path";
    c.spec.access_modes = {"ReadWriteOnce"};
    if (!mode.empty()) c.spec.volume_mode = mode;
    c.spec.resources.requests["storage"] = api::Quantity::MustParse("1Gi");
    return api_.fake<api::PersistentVolumeClaim>().Seed(c);
  }
  std::map<std::string, api::PersistentVolume> Volumes() {
    return api_.fake<api::PersistentVolume>().Objects();
  }

  volume::testing::TempDir root_;
  FakeClient api_;
  std::unique_ptr<volume::LocalPathProvisioner> provisioner_;
  std::unique_ptr<NodeLocalController> ctrl_;
};

TEST_F(NodeLocalTest, MakesTheVolumeOfAClaimGivenToItsNode) {
  auto c = Claim("node-2");
  ASSERT_TRUE(ctrl_->SyncClaim(c).ok());
  const std::string name = "pvc-" + c.metadata.uid;
  ASSERT_EQ(Volumes().count(name), 1u);
  const api::PersistentVolume pv = Volumes().at(name);
  EXPECT_TRUE(fs::is_directory(pv.spec.host_path->path));
  EXPECT_EQ(fs::path(pv.spec.host_path->path).parent_path(), fs::path(root_.path()));
  EXPECT_EQ(pv.spec.node_affinity->required->node_selector_terms[0].match_expressions[0].values,
            std::vector<std::string>{"node-2"});
  EXPECT_EQ(pv.spec.claim_ref->uid, c.metadata.uid);
  EXPECT_EQ(pv.spec.storage_class_name, "local-path");
  EXPECT_EQ(pv.metadata.annotations.at(std::string(api::kAnnDynamicallyProvisioned)),
            "kvol.io/local-path");
  EXPECT_EQ(pv.metadata.finalizers, std::vector<std::string>{"kubernetes.io/pv-controller"});
  // Again: the volume is there, nothing more is made.
  ASSERT_TRUE(ctrl_->SyncClaim(c).ok());
  EXPECT_EQ(Volumes().size(), 1u);
}

TEST_F(NodeLocalTest, ClaimsOfOtherNodesOrBoundOnesAreNotItsOwn) {
  ASSERT_TRUE(ctrl_->SyncClaim(Claim("node-1")).ok());
  auto bound = Claim("node-2");
  bound.spec.volume_name = "pv-elsewhere";
  ASSERT_TRUE(ctrl_->SyncClaim(bound).ok());
  EXPECT_TRUE(Volumes().empty());
  EXPECT_TRUE(fs::is_empty(root_.path()));
}

TEST_F(NodeLocalTest, AClaimItCannotServeGoesBackToTheScheduler) {
  auto c = Claim("node-2", "Block");
  ASSERT_TRUE(ctrl_->SyncClaim(c).ok()) << "a claim's own error waits for the claim to change";
  EXPECT_TRUE(Volumes().empty());
  auto now = api_.fake<api::PersistentVolumeClaim>().Objects().at("default/data");
  EXPECT_FALSE(now.metadata.annotations.count(std::string(api::kAnnSelectedNode)));
}

TEST_F(NodeLocalTest, RemovesAReleasedVolumeOfItsNodeStorageFirst) {
  auto c = Claim("node-2");
  ASSERT_TRUE(ctrl_->SyncClaim(c).ok());
  api::PersistentVolume pv = Volumes().begin()->second;
  const std::string dir = pv.spec.host_path->path;
  pv.status.phase = std::string(api::kVolumeReleased);
  pv = *api_.resource<api::PersistentVolume>().UpdateStatus(pv);
  ASSERT_TRUE(ctrl_->SyncVolume(pv).ok());
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_TRUE(Volumes().empty()) << "its finalizer taken away, the object deleted";
}

TEST_F(NodeLocalTest, LeavesOtherNodesAndRetainedVolumes) {
  auto c = Claim("node-2");
  ASSERT_TRUE(ctrl_->SyncClaim(c).ok());
  api::PersistentVolume pv = Volumes().begin()->second;
  const std::string dir = pv.spec.host_path->path;
  pv.status.phase = std::string(api::kVolumeReleased);
  pv.spec.persistent_volume_reclaim_policy = "Retain";
  ASSERT_TRUE(ctrl_->SyncVolume(pv).ok());
  pv.spec.persistent_volume_reclaim_policy = "Delete";
  pv.spec.node_affinity->required->node_selector_terms[0].match_expressions[0].values = {"node-1"};
  ASSERT_TRUE(ctrl_->SyncVolume(pv).ok());
  EXPECT_TRUE(fs::exists(dir));
  EXPECT_EQ(Volumes().size(), 1u);
}

}  // namespace
}  // namespace kvol::controller::provisioner
