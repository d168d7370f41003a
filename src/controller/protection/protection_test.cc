#include "controller/protection/protection.h"

#include <gtest/gtest.h>

#include "api/well_known.h"
#include "client/testing/fake_client.h"

namespace kvol::controller::protection {
namespace {

using client::testing::FakeClient;

api::PersistentVolumeClaim Claim(bool finalizer, bool deleting) {
  api::PersistentVolumeClaim c;
  c.metadata.namespace_ = "default";
  c.metadata.name = "data";
  if (finalizer) c.metadata.finalizers = {std::string(api::kPVCProtectionFinalizer)};
  if (deleting) c.metadata.deletion_timestamp = api::Time::FromUnixSeconds(1);
  return c;
}

api::Pod Pod(std::string name, std::string phase, std::string claim = "data") {
  api::Pod p;
  p.metadata.namespace_ = "default";
  p.metadata.name = std::move(name);
  p.status.phase = std::move(phase);
  auto& v = p.spec.volumes.emplace_back();
  v.name = "v";
  v.persistent_volume_claim.emplace().claim_name = std::move(claim);
  return p;
}

api::PersistentVolume Volume(bool finalizer, bool deleting, std::string phase) {
  api::PersistentVolume v;
  v.metadata.name = "pv";
  if (finalizer) v.metadata.finalizers = {std::string(api::kPVProtectionFinalizer)};
  if (deleting) v.metadata.deletion_timestamp = api::Time::FromUnixSeconds(1);
  v.status.phase = std::move(phase);
  return v;
}

// What is left of the claim: "gone", or its finalizers.
std::string ClaimState(FakeClient& api) {
  auto objs = api.fake<api::PersistentVolumeClaim>().Objects();
  if (objs.empty()) return "gone";
  std::string out;
  for (const auto& f : objs.begin()->second.metadata.finalizers) out += f;
  return out.empty() ? "none" : out;
}

std::string VolumeState(FakeClient& api) {
  auto objs = api.fake<api::PersistentVolume>().Objects();
  if (objs.empty()) return "gone";
  std::string out;
  for (const auto& f : objs.begin()->second.metadata.finalizers) out += f;
  return out.empty() ? "none" : out;
}

TEST(PvcProtectionTest, AddsTheFinalizerToLiveClaims) {
  FakeClient api;
  Controller ctrl(api);
  auto c = api.fake<api::PersistentVolumeClaim>().Seed(Claim(false, false));
  ASSERT_TRUE(ctrl.SyncClaim(c).ok());
  EXPECT_EQ(ClaimState(api), "kubernetes.io/pvc-protection");
}

TEST(PvcProtectionTest, UnusedClaimIsLetGo) {
  FakeClient api;
  Controller ctrl(api);
  auto c = api.fake<api::PersistentVolumeClaim>().Seed(Claim(true, true));
  ASSERT_TRUE(ctrl.SyncClaim(c).ok());
  EXPECT_EQ(ClaimState(api), "gone");
}

TEST(PvcProtectionTest, ARunningPodHoldsTheClaim) {
  FakeClient api;
  Controller ctrl(api);
  ctrl.StorePod(Pod("web", "Running"));
  auto c = api.fake<api::PersistentVolumeClaim>().Seed(Claim(true, true));
  ASSERT_TRUE(ctrl.SyncClaim(c).ok());
  EXPECT_EQ(ClaimState(api), "kubernetes.io/pvc-protection");
}

TEST(PvcProtectionTest, PendingPodsHoldFinishedPodsDoNot) {
  FakeClient api;
  Controller ctrl(api);
  ctrl.StorePod(Pod("done", "Succeeded"));
  ctrl.StorePod(Pod("crashed", "Failed"));
  ctrl.StorePod(Pod("other", "Running", "other-claim"));
  auto c = api.fake<api::PersistentVolumeClaim>().Seed(Claim(true, true));
  ASSERT_TRUE(ctrl.SyncClaim(c).ok());
  EXPECT_EQ(ClaimState(api), "gone");

  FakeClient api2;
  Controller ctrl2(api2);
  ctrl2.StorePod(Pod("starting", "Pending"));
  c = api2.fake<api::PersistentVolumeClaim>().Seed(Claim(true, true));
  ASSERT_TRUE(ctrl2.SyncClaim(c).ok());
  EXPECT_EQ(ClaimState(api2), "kubernetes.io/pvc-protection");
}

TEST(PvcProtectionTest, APodTheCacheHasNotSeenStillHolds) {
  FakeClient api;
  Controller ctrl(api);
  api.fake<api::Pod>().Seed(Pod("new", "Pending"));
  auto c = api.fake<api::PersistentVolumeClaim>().Seed(Claim(true, true));
  ASSERT_TRUE(ctrl.SyncClaim(c).ok());
  EXPECT_EQ(ClaimState(api), "kubernetes.io/pvc-protection");
}

TEST(PvcProtectionTest, ErrorsKeepTheFinalizer) {
  FakeClient api;
  Controller ctrl(api);
  api.state().InjectError("list", "pods", api::ApiError{500, "InternalError", "injected"});
  auto c = api.fake<api::PersistentVolumeClaim>().Seed(Claim(true, true));
  EXPECT_FALSE(ctrl.SyncClaim(c).ok());
  EXPECT_EQ(ClaimState(api), "kubernetes.io/pvc-protection");
  api.state().InjectError("update", "persistentvolumeclaims",
                          api::ApiError{409, "Conflict", "injected"});
  auto s = ctrl.SyncClaim(c);
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(ClaimState(api), "kubernetes.io/pvc-protection");
  EXPECT_TRUE(ctrl.SyncClaim(c).ok());
  EXPECT_EQ(ClaimState(api), "gone");
}

TEST(PvProtectionTest, BoundVolumeIsHeldOthersAreLetGo) {
  for (const char* phase : {"Bound", "Released", "Available", "Failed", "Pending"}) {
    FakeClient api;
    Controller ctrl(api);
    auto v = api.fake<api::PersistentVolume>().Seed(Volume(true, true, phase));
    ASSERT_TRUE(ctrl.SyncVolume(v).ok());
    EXPECT_EQ(VolumeState(api), std::string(phase) == "Bound" ? "kubernetes.io/pv-protection" : "gone")
        << phase;
  }
}

TEST(PvProtectionTest, AddsTheFinalizerToLiveVolumes) {
  FakeClient api;
  Controller ctrl(api);
  auto v = api.fake<api::PersistentVolume>().Seed(Volume(false, false, "Available"));
  ASSERT_TRUE(ctrl.SyncVolume(v).ok());
  EXPECT_EQ(VolumeState(api), "kubernetes.io/pv-protection");
  // A volume being deleted without the finalizer is left alone.
  FakeClient api2;
  Controller ctrl2(api2);
  v = api2.fake<api::PersistentVolume>().Seed(Volume(false, true, "Bound"));
  ASSERT_TRUE(ctrl2.SyncVolume(v).ok());
  EXPECT_TRUE(api2.state().actions().empty());
}

}  // namespace
}  // namespace kvol::controller::protection
