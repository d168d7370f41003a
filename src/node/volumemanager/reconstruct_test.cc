// Reconstruction and the orphan sweep: what a restarted volume manager finds on disk (pod
// volumes, device mounts, attachment records) is kept when a pod needs it and removed when none
// does, and pod directories no pod needs go once nothing is mounted in them.
#include <gtest/gtest.h>

#include "node/volumemanager/volume_manager_fixture.h"

namespace kvol::node::volumemanager {
namespace {

using client::testing::Eventually;

class ReconstructTest : public VolumeManagerTest {};
class ReconstructAttachTest : public AttachTest {};

TEST_F(ReconstructTest, RestartKeepsWhatIsRightAndCleansTheRest) {
  // On disk before start: a pod that still exists (its tmpfs still mounted) and one that is gone.
  const std::string keep = Dir("web", plugins::kEmptyDir, "shm");
  const std::string gone = Dir("old", plugins::kEmptyDir, "shm");
  fs::create_directories(keep);
  fs::create_directories(gone);
  std::ofstream(keep + "/state") << "kept";
  for (const auto& path : {keep, gone}) {
    os::MountPoint m;
    m.path = path;
    m.type = "tmpfs";
    host_.fake_mounter().AddMountForTest(m);
  }
  PutPod(PodWith("web", {EmptyDir("shm", "Memory")}));
  api_.state().ClearActions();
  StartManager();
  ASSERT_TRUE(Eventually([&] { return !fs::exists(host_.root() + "/pods/uid-old"); }));
  ASSERT_TRUE(Eventually([&] { return VolumesReady("web") == "True"; }));
  int status_writes = 0;
  for (const auto& a : api_.state().actions()) status_writes += a.verb == "update-status";
  EXPECT_EQ(status_writes, 1) << "VolumesReady goes straight to True: no flap while confirming";
  for (const auto& c : host_.fake_mounter().calls()) {
    EXPECT_NE(c.op, "mount") << "nothing is mounted again: " << c.target;
  }
  EXPECT_TRUE(*host_.fake_mounter().IsMountPoint(keep));
  EXPECT_FALSE(*host_.fake_mounter().IsMountPoint(gone));
  EXPECT_EQ(Read(keep + "/state"), "kept");
}

TEST_F(ReconstructTest, DeviceMountFoundOnDiskWithNoUserIsUnmounted) {
  const std::string global = host_.root() + "/plugins/kubernetes.io/local-volume/mounts/stale";
  fs::create_directories(global);
  os::MountPoint m;
  m.path = global;
  m.type = "ext4";
  host_.fake_mounter().AddMountForTest(m);
  StartManager();
  EXPECT_TRUE(Eventually([&] { return !fs::exists(global); }));
  EXPECT_FALSE(*host_.fake_mounter().IsMountPoint(global));
}

TEST_F(ReconstructTest, APodDirectoryFoundAtStartGoesWhenItsPodGoesLater) {
  // On disk before start: the directory of a pod that still exists, with nothing in it to
  // tear down. The pod needs it at first; when the pod goes, so does the directory.
  const std::string pod_dir = host_.root() + "/pods/uid-web";
  fs::create_directories(pod_dir);
  std::ofstream(pod_dir + "/left-by-a-crash") << "x";
  PutPod(PodWith("web", {}));
  StartManager();
  ASSERT_TRUE(Eventually([&] { return VolumesReady("web") == "True"; }));
  EXPECT_TRUE(fs::exists(pod_dir)) << "a pod that exists keeps its directory";
  RemovePod("web");
  EXPECT_TRUE(Eventually([&] { return !fs::exists(pod_dir); }));
}

TEST_F(ReconstructTest, ResyncRemovesPodDirectoriesNoEventNamed) {
  PutPod(PodWith("web", {EmptyDir("shm", "Memory")}));
  Options o;
  o.resync = 60s;
  StartManager(o);
  ASSERT_TRUE(Eventually([&] { return VolumesReady("web") == "True"; }));
  // Made behind the manager's back: a stray pod directory, and one with a mount still in it.
  const std::string stray = host_.root() + "/pods/uid-stray";
  const std::string mounted = Dir("busy", plugins::kEmptyDir, "shm");
  fs::create_directories(stray + "/volumes/kubernetes.io~empty-dir/cache");
  std::ofstream(stray + "/volumes/kubernetes.io~empty-dir/cache/data") << "x";
  fs::create_directories(mounted);
  os::MountPoint m;
  m.path = mounted;
  m.type = "tmpfs";
  host_.fake_mounter().AddMountForTest(m);
  vm_->Kick();  // an event alone does not look at the disk
  std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(fs::exists(stray));
  clock_.Advance(61s);  // the resync does
  EXPECT_TRUE(Eventually([&] { return !fs::exists(stray); }));
  std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(fs::exists(mounted)) << "a directory with a mount in it is left in place";
  EXPECT_TRUE(fs::exists(Dir("web", plugins::kEmptyDir, "shm"))) << "a pod that exists keeps it";
  ASSERT_TRUE(host_.fake_mounter().Unmount(mounted).ok());
  clock_.Advance(61s);  // and looks again at the next one
  EXPECT_TRUE(Eventually([&] { return !fs::exists(host_.root() + "/pods/uid-busy"); }));
  EXPECT_TRUE(*host_.fake_mounter().IsMountPoint(Dir("web", plugins::kEmptyDir, "shm")));
}

TEST_F(ReconstructAttachTest, RestartAttachesAgainWhatIsNeededAndDetachesWhatIsNot) {
  // Records a previous agent left: one volume a pod still uses, one nobody does.
  BoundFlexClaim("data", "pv-flex", "vol-1");
  PutPod(PodWith("web", {ClaimVolume("data", "data")}));
  fs::create_directories(fs::path(Record("x")).parent_path());
  std::ofstream(Record("pv-flex")) << "/dev/fake-vol-1";
  std::ofstream(Record("pv-old")) << "/dev/fake-vol-9";
  StartManager();
  ASSERT_TRUE(Eventually([&] { return VolumesReady("web") == "True"; }));
  ASSERT_TRUE(Eventually([&] { return !fs::exists(Record("pv-old")); }));
  auto calls = DriverCalls();
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "detach pv-old"), 1);
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "detach pv-flex"), 0);
  EXPECT_EQ(
      vm_->AttachedVolumes(),
      (std::map<std::string, std::string>{{std::string(kPlugin) + "/pv-flex", "/dev/fake-vol-1"}}));
}

}  // namespace
}  // namespace kvol::node::volumemanager
