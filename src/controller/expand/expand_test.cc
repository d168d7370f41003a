// The expand controller against a FakeClient and a plugin that records what it was asked.
#include "controller/expand/expand.h"
#include "controller/expand/resize_status.h"

#include <gtest/gtest.h>

#include "client/testing/fake_client.h"

namespace kvol::controller::expand {
namespace {

using client::testing::FakeClient;

// Expands volumes whose PV has a hostPath (any source will do); fails while `error` is set.
class FakeExpandablePlugin final : public volume::VolumePlugin,
                                   public volume::ExpandableVolumePlugin {
 public:
  explicit FakeExpandablePlugin(bool fs_resize) : fs_resize_(fs_resize) {}
  std::string_view Name() const override { return "kvol.io/fake"; }
  bool CanSupport(const volume::Spec& spec) const override {
    return spec.pv && spec.pv->spec.host_path;
  }
  StatusOr<std::unique_ptr<volume::Mounter>> NewMounter(const volume::Spec&,
                                                        const api::Pod&) override {
    return UnimplementedError("not for mounting");
  }
  StatusOr<std::unique_ptr<volume::Unmounter>> NewUnmounter(std::string_view,
                                                            std::string_view) override {
    return UnimplementedError("not for mounting");
  }
  volume::ExpandableVolumePlugin* AsExpandable() override { return this; }
  StatusOr<int64_t> ExpandVolumeDevice(const volume::Spec& spec, int64_t new_size,
                                       int64_t old_size) override {
    calls.push_back(spec.Name() + " " + std::to_string(old_size) + "->" + std::to_string(new_size));
    if (!error.empty()) return InternalError(error);
    return new_size;
  }
  bool RequiresFSResize(const volume::Spec&) override { return fs_resize_; }

  std::vector<std::string> calls;
  std::string error;

 private:
  const bool fs_resize_;
};

class ExpandTest : public ::testing::Test {
 protected:
  void Start(bool fs_resize) {
    auto p = std::make_unique<FakeExpandablePlugin>(fs_resize);
    plugin_ = p.get();
    ASSERT_TRUE(plugins_.Register(std::move(p)).ok());
    Options o;
    o.plugins = &plugins_;
    ctrl_ = std::make_unique<Controller>(
        api_,
        [this](const api::ObjectReference&, std::string_view type, std::string_view reason,
               std::string msg) {
          events_.push_back(std::string(type) + " " + std::string(reason) + " " + msg);
        },
        o);
  }
  // A Bound claim default/data of 1Gi, asking for `request`, on volume pv-1 (hostPath, or CSI).
  api::PersistentVolumeClaim Seed(const std::string& request, bool csi = false) {
    api::PersistentVolume pv;
    pv.metadata.name = "pv-1";
    pv.spec.capacity["storage"] = api::Quantity::MustParse("1Gi");
    if (csi) {
      pv.spec.csi.emplace().driver = "hostpath.csi.k8s.io";
    } else {
      pv.spec.host_path.emplace().path = "/srv/pv-1";
    }
    api::PersistentVolumeClaim c;
    c.metadata.namespace_ = "default";
    c.metadata.name = "data";
    c.spec.volume_name = "pv-1";
    c.spec.resources.requests["storage"] = api::Quantity::MustParse(request);
    c.status.phase = "Bound";
    c.status.capacity["storage"] = api::Quantity::MustParse("1Gi");
    c = api_.fake<api::PersistentVolumeClaim>().Seed(c);
    pv.spec.claim_ref.emplace().uid = c.metadata.uid;
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
  volume::PluginManager plugins_;
  FakeExpandablePlugin* plugin_ = nullptr;
  std::unique_ptr<Controller> ctrl_;
  std::vector<std::string> events_;
};

TEST_F(ExpandTest, GrowsTheVolumeAndTheClaimWhenNoFilesystemResizeIsNeeded) {
  Start(/*fs_resize=*/false);
  auto c = Seed("2Gi");
  ASSERT_TRUE(ctrl_->SyncClaim(c).ok());
  EXPECT_EQ(plugin_->calls, std::vector<std::string>{"pv-1 1073741824->2147483648"});
  EXPECT_EQ(Volume().spec.capacity.at("storage"), api::Quantity::MustParse("2Gi"));
  EXPECT_EQ(Claim().status.capacity.at("storage"), api::Quantity::MustParse("2Gi"));
  EXPECT_TRUE(Conditions().empty());
  EXPECT_EQ(Claim().status.allocated_resources.at("storage"), api::Quantity::MustParse("2Gi"));
  EXPECT_FALSE(Claim().status.allocated_resource_statuses.count("storage"));
  EXPECT_EQ(events_, std::vector<std::string>{
                         "Normal VolumeResizeSuccessful ExpandVolume succeeded for volume default/data"});
  // Done: another sync does nothing.
  ASSERT_TRUE(ctrl_->SyncClaim(Claim()).ok());
  EXPECT_EQ(plugin_->calls.size(), 1u);
}

TEST_F(ExpandTest, LeavesTheFilesystemToTheNode) {
  Start(/*fs_resize=*/true);
  auto c = Seed("3Gi");
  ASSERT_TRUE(ctrl_->SyncClaim(c).ok());
  EXPECT_EQ(Volume().spec.capacity.at("storage"), api::Quantity::MustParse("3Gi"));
  EXPECT_EQ(Claim().status.capacity.at("storage"), api::Quantity::MustParse("1Gi"));
  EXPECT_EQ(Conditions(), std::vector<std::string>{"FileSystemResizePending=True"});
  EXPECT_EQ(Claim().status.conditions[0].message, kFileSystemResizePendingMessage);
  EXPECT_EQ(Claim().status.allocated_resource_statuses.at("storage"), "NodeResizePending");
  EXPECT_TRUE(events_.empty());
  ASSERT_TRUE(ctrl_->SyncClaim(Claim()).ok());
  EXPECT_EQ(plugin_->calls.size(), 1u) << "the node's turn now";
}

TEST_F(ExpandTest, AFailureIsAnEventAndTheClaimStaysResizing) {
  Start(false);
  plugin_->error = "backend quota exceeded";
  auto c = Seed("2Gi");
  EXPECT_FALSE(ctrl_->SyncClaim(c).ok());
  EXPECT_EQ(events_, std::vector<std::string>{
                         "Warning VolumeResizeFailed error expanding volume \"default/data\" of "
                         "plugin \"kvol.io/fake\": backend quota exceeded"});
  EXPECT_EQ(Conditions(), std::vector<std::string>{"Resizing=True"});
  EXPECT_EQ(Claim().status.allocated_resource_statuses.at("storage"), "ControllerResizeInProgress");
  EXPECT_EQ(Volume().spec.capacity.at("storage"), api::Quantity::MustParse("1Gi"));
  // Retried: it works now.
  plugin_->error.clear();
  ASSERT_TRUE(ctrl_->SyncClaim(Claim()).ok());
  EXPECT_EQ(Claim().status.capacity.at("storage"), api::Quantity::MustParse("2Gi"));
  EXPECT_TRUE(Conditions().empty());
}

TEST_F(ExpandTest, ACrashAfterTheVolumeGrewIsFinishedWithoutExpandingAgain) {
  Start(false);
  auto c = Seed("2Gi");
  // What a controller that died after resizing the volume left: the volume at 2Gi, the claim
  // still Resizing at 1Gi.
  api::PersistentVolume pv = Volume();
  pv.spec.capacity["storage"] = api::Quantity::MustParse("2Gi");
  ASSERT_TRUE(api_.resource<api::PersistentVolume>().Update(pv).ok());
  c.status.conditions.push_back({.type = "Resizing", .status = "True"});
  c = *api_.resource<api::PersistentVolumeClaim>().UpdateStatus(c);
  ASSERT_TRUE(ctrl_->SyncClaim(c).ok());
  EXPECT_TRUE(plugin_->calls.empty());
  EXPECT_EQ(Claim().status.capacity.at("storage"), api::Quantity::MustParse("2Gi"));
  EXPECT_TRUE(Conditions().empty());
}

TEST_F(ExpandTest, AClaimWriteThatFailsIsRetriedByTheNextSync) {
  Start(false);
  auto c = Seed("2Gi");
  api_.state().InjectError("update-status", "persistentvolumeclaims",
                           api::ApiError{500, "InternalError", "etcdserver: leader changed"});
  EXPECT_FALSE(ctrl_->SyncClaim(c).ok());
  EXPECT_TRUE(plugin_->calls.empty()) << "not expanded before the claim says so";
  ASSERT_TRUE(ctrl_->SyncClaim(Claim()).ok());
  EXPECT_EQ(Claim().status.capacity.at("storage"), api::Quantity::MustParse("2Gi"));
}

TEST_F(ExpandTest, NothingToDoForUnboundOrSatisfiedClaims) {
  Start(false);
  auto c = Seed("1Gi");
  ASSERT_TRUE(ctrl_->SyncClaim(c).ok());
  c.spec.resources.requests["storage"] = api::Quantity::MustParse("5Gi");
  c.status.phase = "Pending";
  ASSERT_TRUE(ctrl_->SyncClaim(c).ok());
  EXPECT_TRUE(plugin_->calls.empty());
  EXPECT_TRUE(events_.empty());
}

TEST_F(ExpandTest, VolumesOfNoPluginHereWaitForAnExternalResizer) {
  Start(false);
  auto c = Seed("2Gi", /*csi=*/true);
  ASSERT_TRUE(ctrl_->SyncClaim(c).ok());
  EXPECT_EQ(Claim().metadata.annotations.at(std::string(api::kAnnStorageResizer)), "hostpath.csi.k8s.io");
  EXPECT_EQ(events_, std::vector<std::string>{
                         "Normal ExternalExpanding waiting for an external controller to expand "
                         "this PVC"});
  ASSERT_TRUE(ctrl_->SyncClaim(Claim()).ok());
  EXPECT_EQ(events_.size(), 1u) << "annotated once";
  EXPECT_TRUE(plugin_->calls.empty());
  EXPECT_EQ(Volume().spec.capacity.at("storage"), api::Quantity::MustParse("1Gi"));
}

}  // namespace
}  // namespace kvol::controller::expand
