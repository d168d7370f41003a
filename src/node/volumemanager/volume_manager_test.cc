// The volume manager as a whole: set-up, refresh, tear-down, attach and expansion through the
// reconciler and the operations, and the pods' status as the agent's status writer reports it.
// Reconstruction after a restart is in reconstruct_test.cc.
#include "node/volumemanager/volume_manager.h"

#include <gtest/gtest.h>
#include <sys/sysmacros.h>

#include "node/volumemanager/volume_manager_fixture.h"

namespace kvol::node::volumemanager {
namespace {

using client::testing::Eventually;

TEST_F(VolumeManagerTest, SetsUpVolumesThenMarksThePodVolumesReady) {
  PutConfigMap("log-config", "INFO", "5");
  PutPod(PodWith("web", {EmptyDir("cache"), EmptyDir("shm", "Memory"),
                         ConfigMapVolume("config-vol", "log-config")}));
  StartManager();
  ASSERT_TRUE(Eventually([&] { return VolumesReady("web") == "True"; }));
  EXPECT_TRUE(fs::is_directory(Dir("web", plugins::kEmptyDir, "cache")));
  EXPECT_TRUE(*host_.fake_mounter().IsMountPoint(Dir("web", plugins::kEmptyDir, "shm")));
  EXPECT_EQ(Read(Dir("web", plugins::kConfigMap, "config-vol") + "/log_level"), "INFO");
  api::Pod pod = StoredPod("web");
  EXPECT_EQ(pod.status.phase, "Pending");
  EXPECT_EQ(pod.status.host_ip, "10.0.0.7");
  EXPECT_TRUE(pod.status.start_time.has_value());
  ASSERT_EQ(pod.status.container_statuses.size(), 1u);
  EXPECT_EQ(pod.status.container_statuses[0].state.waiting->reason, "ContainerCreating");
  EXPECT_EQ(pod.status.container_statuses[0].image, "busybox");
  EXPECT_TRUE(Events().empty());
  EXPECT_EQ(vm_->MountedVolumeKeys().size(), 3u);
}

TEST_F(VolumeManagerTest, NothingChangingMeansNoWork) {
  PutPod(PodWith("web", {EmptyDir("cache", "Memory")}));
  StartManager();
  ASSERT_TRUE(Eventually([&] { return VolumesReady("web") == "True"; }));
  host_.fake_mounter().ClearCalls();
  api_.state().ClearActions();
  for (int i = 0; i < 5; ++i) vm_->Kick();
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(host_.fake_mounter().calls().empty());
  EXPECT_TRUE(api_.state().actions().empty()) << "no status rewrites";
}

TEST_F(VolumeManagerTest, ConfigMapAndLabelChangesReachTheFiles) {
  PutConfigMap("log-config", "INFO", "5");
  api::Volume dw;
  dw.name = "podinfo";
  dw.downward_api.emplace().items.push_back(
      {"labels", api::ObjectFieldSelector{"", "metadata.labels"}, std::nullopt, std::nullopt});
  api::Pod pod = PodWith("web", {ConfigMapVolume("config-vol", "log-config"), dw});
  pod.metadata.labels = {{"app", "web"}};
  PutPod(pod);
  StartManager();
  const std::string file = Dir("web", plugins::kConfigMap, "config-vol") + "/log_level";
  const std::string labels = Dir("web", plugins::kDownwardApi, "podinfo") + "/labels";
  ASSERT_TRUE(Eventually([&] { return Read(file) == "INFO"; }));
  PutConfigMap("log-config", "DEBUG", "6");
  EXPECT_TRUE(Eventually([&] { return Read(file) == "DEBUG"; }));
  pod.metadata.labels["version"] = "1.1";
  PutPod(pod);
  EXPECT_TRUE(Eventually([&] { return Read(labels) == "app=\"web\"\nversion=\"1.1\""; }))
      << Read(labels);
}

TEST_F(VolumeManagerTest, PodGoneMeansVolumesAndItsDirectoryGo) {
  PutPod(PodWith("web", {EmptyDir("cache"), EmptyDir("shm", "Memory")}));
  StartManager();
  ASSERT_TRUE(Eventually([&] { return VolumesReady("web") == "True"; }));
  const std::string pod_dir = host_.root() + "/pods/uid-web";
  ASSERT_TRUE(fs::exists(pod_dir));
  RemovePod("web");
  EXPECT_TRUE(Eventually([&] { return !fs::exists(pod_dir); }));
  EXPECT_FALSE(*host_.fake_mounter().IsMountPoint(Dir("web", plugins::kEmptyDir, "shm")));
  EXPECT_TRUE(vm_->MountedVolumeKeys().empty());
}

TEST_F(VolumeManagerTest, FinishedPodsGiveTheirVolumesBack) {
  api::Pod pod = PodWith("job", {EmptyDir("shm", "Memory")});
  PutPod(pod);
  StartManager();
  ASSERT_TRUE(Eventually([&] { return vm_->MountedVolumeKeys().size() == 1; }));
  pod.status.phase = "Succeeded";
  PutPod(pod);
  EXPECT_TRUE(Eventually([&] { return vm_->MountedVolumeKeys().empty(); }));
}

TEST_F(VolumeManagerTest, UnboundClaimWaitsWithAnEventThenMounts) {
  PutPod(PodWith("web", {ClaimVolume("data", "nginx-pvc")}));
  {
    std::lock_guard lock(mu_);
    api::PersistentVolumeClaim c;
    c.metadata.namespace_ = "default";
    c.metadata.name = "nginx-pvc";
    c.metadata.uid = "claim-uid";
    c.status.phase = "Pending";
    claims_["default/nginx-pvc"] = c;
  }
  StartManager();
  const std::string msg =
      "web Warning FailedMount Unable to attach or mount volumes: unmounted volumes=[data], "
      "unattached volumes=[data]: error processing PVC default/nginx-pvc: PVC is not bound";
  ASSERT_TRUE(Eventually([&] { return HasEvent(msg); }));
  ASSERT_TRUE(Eventually([&] { return VolumesReady("web") == "False"; }));
  for (const auto& c : StoredPod("web").status.conditions) {
    if (c.type == api::kPodVolumesReady) {
      EXPECT_EQ(c.message, "unmounted volumes=[data]");
    }
  }

  const std::string src = tmp_.path() + "/disks/ssd1";
  fs::create_directories(src);
  {
    std::lock_guard lock(mu_);
    api::PersistentVolume pv;
    pv.metadata.name = "nginx-pv";
    pv.spec.local.emplace().path = src;
    pv.spec.claim_ref.emplace().uid = "claim-uid";
    volumes_["nginx-pv"] = pv;
    claims_["default/nginx-pvc"].spec.volume_name = "nginx-pv";
    claims_["default/nginx-pvc"].status.phase = "Bound";
  }
  vm_->Kick();
  ASSERT_TRUE(Eventually([&] { return VolumesReady("web") == "True"; }));
  // Named after the PV, as kubelet does.
  EXPECT_TRUE(*host_.fake_mounter().IsMountPoint(Dir("web", plugins::kLocal, "nginx-pv")));
  EXPECT_EQ(Events().size(), 1u) << "the unbound claim was reported once";
}

TEST_F(VolumeManagerTest, AClaimMissingFromTheCacheForAMomentKeepsItsVolume) {
  const std::string src = tmp_.path() + "/disks/ssd2";
  fs::create_directories(src);
  BoundLocalClaim("keep", "pv-keep", src);
  PutPod(PodWith("web", {ClaimVolume("data", "keep")}));
  StartManager();
  ASSERT_TRUE(Eventually([&] { return VolumesReady("web") == "True"; }));
  const std::string dir = Dir("web", plugins::kLocal, "pv-keep");
  {
    std::lock_guard lock(mu_);
    claims_.erase("default/keep");
  }
  vm_->Kick();
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(*host_.fake_mounter().IsMountPoint(dir)) << "the pod still exists: its volume stays";
  RemovePod("web");
  EXPECT_TRUE(Eventually([&] { return !*host_.fake_mounter().IsMountPoint(dir); }));
}

TEST_F(VolumeManagerTest, FailedMountIsAnEventAndRetriedWithBackoff) {
  api::Volume nfs;
  nfs.name = "data";
  nfs.nfs.emplace();
  nfs.nfs->server = "192.168.3.103";
  nfs.nfs->path = "/mnt/nfs_share";
  PutPod(PodWith("web", {nfs, EmptyDir("cache")}));
  const std::string dir = Dir("web", plugins::kNfs, "data");
  host_.fake_mounter().FailMountAt(dir, InternalError("mount failed: exit status 32"));
  Options o;
  o.executor.initial_backoff = 500ms;
  StartManager(o);
  const std::string msg =
      "web Warning FailedMount MountVolume.SetUp failed for volume \"data\" : mount failed: exit "
      "status 32";
  ASSERT_TRUE(Eventually([&] { return HasEvent(msg); }));
  // The rest of the pod's volumes carry on.
  ASSERT_TRUE(
      Eventually([&] { return fs::is_directory(Dir("web", plugins::kEmptyDir, "cache")); }));
  EXPECT_EQ(VolumesReady("web"), "False");
  // No retry before the backoff passes, however often the reconciler runs.
  const size_t attempts = host_.fake_mounter().calls().size();
  for (int i = 0; i < 5; ++i) vm_->Kick();
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(host_.fake_mounter().calls().size(), attempts);
  host_.fake_mounter().FailMountAt(dir, OkStatus());
  clock_.Advance(600ms);
  EXPECT_TRUE(Eventually([&] { return VolumesReady("web") == "True"; }));
}

TEST_F(VolumeManagerTest, TimedOutMountIsUncertainRetriedAndTornDown) {
  PutPod(PodWith("web", {EmptyDir("shm", "Memory")}));
  const std::string dir = Dir("web", plugins::kEmptyDir, "shm");
  host_.fake_mounter().FailMountAt(
      dir, DeadlineExceededError("exec: \"mount\" still running after 120000ms; killed"));
  Options o;
  o.executor.initial_backoff = 500ms;
  StartManager(o);
  ASSERT_TRUE(Eventually([&] {
    return HasEvent(
        "web Warning FailedMount MountVolume.SetUp failed for volume \"shm\" : exec: "
        "\"mount\" still running after 120000ms; killed");
  }));
  EXPECT_EQ(VolumesReady("web"), "False");
  EXPECT_TRUE(vm_->MountedVolumeKeys().empty()) << "an uncertain mount is not a mounted one";
  // Still wanted: tried again after the backoff, and then it works.
  host_.fake_mounter().FailMountAt(dir, OkStatus());
  clock_.Advance(600ms);
  ASSERT_TRUE(Eventually([&] { return VolumesReady("web") == "True"; }));

  // An uncertain mount of a pod that goes is torn down all the same.
  PutPod(PodWith("api", {EmptyDir("shm", "Memory")}));
  const std::string api_dir = Dir("api", plugins::kEmptyDir, "shm");
  host_.fake_mounter().FailMountAt(api_dir, DeadlineExceededError("timed out"));
  ASSERT_TRUE(Eventually([&] { return fs::exists(api_dir); }));
  ASSERT_TRUE(Eventually([&] {
    return HasEvent(
        "api Warning FailedMount MountVolume.SetUp failed for volume \"shm\" : timed out");
  }));
  RemovePod("api");
  EXPECT_TRUE(Eventually([&] { return !fs::exists(host_.root() + "/pods/uid-api"); }));
}

TEST_F(VolumeManagerTest, TimeoutEventAfterTheMountDeadline) {
  api::Volume hp;
  hp.name = "missing";
  hp.host_path.emplace().path = tmp_.path() + "/nope";
  hp.host_path->type = "Directory";
  PutPod(PodWith("web", {hp}));
  StartManager({}, 123s);
  ASSERT_TRUE(Eventually([&] {
    return HasEvent(
        "web Warning FailedMount MountVolume.SetUp failed for volume \"missing\" : "
        "hostPath type check failed: " +
        tmp_.path() + "/nope is not a directory");
  }));
  clock_.Advance(124s);
  EXPECT_TRUE(Eventually([&] {
    return HasEvent(
        "web Warning FailedMount Unable to attach or mount volumes: unmounted "
        "volumes=[missing], unattached volumes=[]: timed out waiting for the condition");
  }));
}

TEST_F(VolumeManagerTest, BlockDeviceIsFormattedAndMountedOnceForTheNode) {
  // A block device node (loop major 7); blkid and mkfs are scripted, mounts are fake.
  const std::string dev = tmp_.path() + "/sdz";
  ASSERT_EQ(mknod(dev.c_str(), S_IFBLK | 0600, makedev(7, 250)), 0) << "tests run as root";
  host_.fake_exec().On("blkid", [](const auto&) -> StatusOr<os::ExecResult> {
    return os::ExecResult{2, ""};
  });
  host_.fake_exec().On("mkfs.ext4", [](const auto&) -> StatusOr<os::ExecResult> {
    return os::ExecResult{0, ""};
  });
  BoundLocalClaim("data", "pv-blk", dev);
  PutPod(PodWith("a", {ClaimVolume("data", "data")}));
  PutPod(PodWith("b", {ClaimVolume("data", "data")}));
  StartManager();
  ASSERT_TRUE(
      Eventually([&] { return VolumesReady("a") == "True" && VolumesReady("b") == "True"; }));
  const std::string global = host_.root() + "/plugins/kubernetes.io/local-volume/mounts/pv-blk";
  int device_mounts = 0;
  for (const auto& c : host_.fake_mounter().calls()) {
    if (c.op != "mount") continue;
    if (c.source == dev) {
      ++device_mounts;
      EXPECT_EQ(c.target, global);
      EXPECT_EQ(c.type, "ext4");
    } else {
      EXPECT_EQ(c.source, global) << "pods bind from the global mount";
    }
  }
  EXPECT_EQ(device_mounts, 1);
  EXPECT_EQ(vm_->MountedDevices(), std::set<std::string>{"kubernetes.io/local-volume/pv-blk"});
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard lock(mu_);
    return in_use_ == std::vector<std::string>{"kubernetes.io/local-volume/pv-blk"};
  }));

  // One pod goes: the device stays for the other. Both go: the device is unmounted.
  RemovePod("a");
  ASSERT_TRUE(Eventually([&] { return vm_->MountedVolumeKeys().size() == 1; }));
  EXPECT_TRUE(*host_.fake_mounter().IsMountPoint(global));
  RemovePod("b");
  // A device going away leaves MountedDevices() before its unmount has run: wait for that too.
  ASSERT_TRUE(Eventually([&] {
    return vm_->MountedDevices().empty() && !*host_.fake_mounter().IsMountPoint(global) &&
           !fs::exists(global);
  }));
  EXPECT_FALSE(*host_.fake_mounter().IsMountPoint(global));
  EXPECT_FALSE(fs::exists(global));
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard lock(mu_);
    return in_use_.empty();
  }));
}

TEST_F(VolumeManagerTest, BlockVolumeIsMappedForThePod) {
  const std::string dev = tmp_.path() + "/sdy";
  ASSERT_EQ(mknod(dev.c_str(), S_IFBLK | 0600, makedev(7, 251)), 0) << "tests run as root";
  const std::string not_a_device = tmp_.path() + "/plain";
  fs::create_directories(not_a_device);
  BoundLocalClaim("raw", "pv-raw", dev, "Block");
  BoundLocalClaim("wrong", "pv-wrong", not_a_device, "Block");
  PutPod(PodWith("db", {ClaimVolume("disk", "raw")}));
  StartManager();
  ASSERT_TRUE(Eventually([&] { return VolumesReady("db") == "True"; }));
  const std::string link =
      host_.root() + "/pods/uid-db/volumeDevices/kubernetes.io~local-volume/pv-raw";
  ASSERT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link).string(), dev);
  EXPECT_TRUE(host_.fake_mounter().calls().empty()) << "a block volume is mapped, not mounted";

  PutPod(PodWith("bad", {ClaimVolume("disk", "wrong")}));
  EXPECT_TRUE(Eventually([&] {
    return HasEvent(
        "bad Warning FailedMapVolume MapVolume.MapPodDevice failed for volume "
        "\"pv-wrong\" : local volume pv-wrong: \"" +
        not_a_device + "\" is not a block device; volumeMode Block needs one");
  }));
  RemovePod("db");
  EXPECT_TRUE(Eventually([&] { return !fs::exists(host_.root() + "/pods/uid-db"); }));
}

TEST_F(VolumeManagerTest, ResyncSetsUpAgainWhatWasUnmountedBehindItsBack) {
  PutPod(PodWith("web", {EmptyDir("shm", "Memory"), EmptyDir("cache")}));
  Options o;
  o.resync = 60s;
  StartManager(o);
  ASSERT_TRUE(Eventually([&] { return VolumesReady("web") == "True"; }));
  const std::string shm = Dir("web", plugins::kEmptyDir, "shm");
  const std::string cache = Dir("web", plugins::kEmptyDir, "cache");
  ASSERT_TRUE(host_.fake_mounter().Unmount(shm).ok());
  fs::remove_all(cache);
  vm_->Kick();  // an event alone does not look at the disk
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(*host_.fake_mounter().IsMountPoint(shm));
  clock_.Advance(61s);  // the resync does
  EXPECT_TRUE(Eventually([&] { return *host_.fake_mounter().IsMountPoint(shm); }));
  EXPECT_TRUE(Eventually([&] { return fs::is_directory(cache); }));
}

TEST_F(VolumeManagerTest, SubPathsAreLeftToTheRuntimeAsEachContainerStarts) {
  // Volumes ready means the volumes: a subPath is resolved (and made) by the pod runtime when
  // its container starts, after the init containers that may create it, as kubelet does; an
  // escaping one is refused there, with CreateContainerConfigError (cri_pods_test).
  api::Pod ok = PodWith("ok", {EmptyDir("cache")});
  ok.spec.containers[0].volume_mounts.push_back({"cache", false, "/var/cache", "nginx/tmp"});
  PutPod(ok);
  const std::string host = tmp_.path() + "/host";
  fs::create_directories(host);
  fs::create_directory_symlink("/", host + "/escape");
  api::Volume hp;
  hp.name = "shared";
  hp.host_path.emplace().path = host;
  api::Pod bad = PodWith("bad", {hp});
  bad.spec.containers[0].volume_mounts.push_back({"shared", false, "/data", "escape"});
  PutPod(bad);
  StartManager();
  ASSERT_TRUE(Eventually([&] { return VolumesReady("ok") == "True"; }));
  ASSERT_TRUE(Eventually([&] { return VolumesReady("bad") == "True"; }));
  EXPECT_FALSE(fs::exists(Dir("ok", plugins::kEmptyDir, "cache") + "/nginx"))
      << "nothing of a subPath is made before its container starts";
}

TEST_F(AttachTest, AttachesMountsTheDeviceThenSetsUpAndDetachesAfterTheLastPod) {
  BoundFlexClaim("data", "pv-flex", "vol-1");
  PutPod(PodWith("a", {ClaimVolume("data", "data")}));
  PutPod(PodWith("b", {ClaimVolume("data", "data")}));
  Options o;
  o.on_volumes_attached = [this](std::vector<api::AttachedVolume> v) {
    std::lock_guard lock(mu_);
    attached_ = std::move(v);
  };
  StartManager(o);
  ASSERT_TRUE(
      Eventually([&] { return VolumesReady("a") == "True" && VolumesReady("b") == "True"; }));
  const std::string unique = std::string(kPlugin) + "/pv-flex";
  EXPECT_EQ(vm_->AttachedVolumes(),
            (std::map<std::string, std::string>{{unique, "/dev/fake-vol-1"}}));
  EXPECT_EQ(Read(Record("pv-flex")), "/dev/fake-vol-1");
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard lock(mu_);
    return attached_.size() == 1 && attached_[0].name == unique &&
           attached_[0].device_path == "/dev/fake-vol-1" &&
           in_use_ == std::vector<std::string>{unique};
  }));
  // Once per node, in order: attach, mount the device; then each pod binds from it.
  auto calls = DriverCalls();
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "attach"), 1);
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "mountdevice"), 1);
  EXPECT_LT(IndexOf("attach"), IndexOf("mountdevice"));
  const std::string global = host_.root() + "/plugins/" + kPlugin + "/mounts/pv-flex";
  for (const std::string pod : {"a", "b"}) {
    EXPECT_TRUE(*host_.fake_mounter().IsMountPoint(Dir(pod, kPlugin, "pv-flex")));
  }

  RemovePod("a");
  ASSERT_TRUE(Eventually([&] { return vm_->MountedVolumeKeys().size() == 1; }));
  EXPECT_EQ(IndexOf("detach pv-flex"), DriverCalls().size()) << "b still uses it";
  RemovePod("b");
  ASSERT_TRUE(
      Eventually([&] { return vm_->AttachedVolumes().empty() && !fs::exists(Record("pv-flex")); }));
  EXPECT_FALSE(fs::exists(global));
  EXPECT_LT(IndexOf("unmountdevice"), IndexOf("detach pv-flex"));
  EXPECT_TRUE(Eventually([&] {
    std::lock_guard lock(mu_);
    return attached_.empty() && in_use_.empty();
  }));
}

// On a node the attach/detach controller manages, the agent never calls attach or detach: it
// waits for the node's status to list the volume attached, mounts the device only once the
// status lists it in use, and keeps reporting it in use until the device is unmounted.
TEST_F(AttachTest, OnAControllerManagedNodeTheAgentWaitsForTheController) {
  BoundFlexClaim("data", "pv-flex", "vol-1");
  PutPod(PodWith("a", {ClaimVolume("data", "data")}));
  const std::string unique = std::string(kPlugin) + "/pv-flex";
  ControllerAttachments status;  // guarded by mu_: the node's status as the controller leaves it
  Options o;
  o.controller_attachments = [&] {
    std::lock_guard lock(mu_);
    return status;
  };
  StartManager(o);
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard lock(mu_);
    return in_use_ == std::vector<std::string>{unique};
  })) << "in use as soon as a pod wants it";
  vm_->Kick();
  EXPECT_EQ(VolumesReady("a"), "False");
  EXPECT_EQ(IndexOf("attach"), DriverCalls().size()) << "the controller attaches, not the agent";
  {
    std::lock_guard lock(mu_);
    status.attached[unique] = "/dev/fake-vol-1";  // attached, not yet reported in use
  }
  vm_->Kick();
  ASSERT_TRUE(Eventually([&] { return vm_->AttachedVolumes().size() == 1; }));
  EXPECT_EQ(IndexOf("mountdevice"), DriverCalls().size()) << "not before it is reported in use";
  {
    std::lock_guard lock(mu_);
    status.in_use.insert(unique);
  }
  vm_->Kick();
  ASSERT_TRUE(Eventually([&] { return VolumesReady("a") == "True"; }));
  EXPECT_FALSE(fs::exists(Record("pv-flex"))) << "no record of what the agent did not attach";

  RemovePod("a");
  ASSERT_TRUE(Eventually([&] { return vm_->AttachedVolumes().empty(); }));
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard lock(mu_);
    return in_use_.empty();
  }));
  const auto calls = DriverCalls();
  EXPECT_LT(IndexOf("unmountdevice"), calls.size()) << "the device is unmounted";
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "attach"), 0);
  EXPECT_EQ(std::count_if(calls.begin(), calls.end(),
                          [](const std::string& c) { return c.rfind("detach", 0) == 0; }),
            0);
}

TEST_F(AttachTest, AttachFailureIsAnEventAndThePodWaitsUnattached) {
  BoundFlexClaim("data", "pv-flex", "vol-1");
  PutPod(PodWith("web", {ClaimVolume("data", "data")}));
  SetAttachError("disk vol-1 is attached to another node");
  Options o;
  o.executor.initial_backoff = 500ms;
  StartManager(o, 10s);
  ASSERT_TRUE(Eventually([&] {
    return HasEvent(
        "web Warning FailedAttachVolume AttachVolume.Attach failed for volume \"pv-flex\" : "
        "attach command failed, status: Failure, reason: disk vol-1 is attached to another node");
  }));
  EXPECT_EQ(VolumesReady("web"), "False");
  EXPECT_EQ(IndexOf("mountdevice"), DriverCalls().size()) << "no device mount before attach";
  clock_.Advance(11s);
  ASSERT_TRUE(Eventually([&] {
    return HasEvent(
        "web Warning FailedMount Unable to attach or mount volumes: unmounted volumes=[data], "
        "unattached volumes=[data]: timed out waiting for the condition");
  }));
  // Recorded while it was tried: if the pod went now, the volume would be detached.
  EXPECT_TRUE(fs::exists(Record("pv-flex")));
  SetAttachError("");
  // An attempt started by the last advance may still be running and fail; its backoff then
  // counts from when it ends, so time moves on until the retry has run.
  EXPECT_TRUE(Eventually([&] {
    clock_.Advance(1s);
    return VolumesReady("web") == "True";
  }));
}

TEST_F(AttachTest, AGrownVolumesFilesystemIsGrownThenTheClaimHasItsCapacity) {
  BoundFlexClaim("data", "pv-flex", "vol-1");
  {
    // The expand controller grew the volume to 2Gi; the claim, at 1Gi, waits for the node.
    std::lock_guard lock(mu_);
    api::PersistentVolume& pv = volumes_["pv-flex"];
    pv.spec.capacity["storage"] = api::Quantity::MustParse("2Gi");
    api::PersistentVolumeClaim& c = claims_["default/data"];
    c.metadata.namespace_ = "default";
    c.metadata.name = "data";
    c.status.capacity["storage"] = api::Quantity::MustParse("1Gi");
    c.status.conditions.push_back({.type = "FileSystemResizePending", .status = "True"});
    c.status.allocated_resource_statuses["storage"] = "NodeResizePending";
    api_.fake<api::PersistentVolumeClaim>().Seed(c);
  }
  PutPod(PodWith("web", {ClaimVolume("data", "data")}));
  StartManager();
  ASSERT_TRUE(Eventually([&] {
    return HasEvent(
        "web Normal FileSystemResizeSuccessful MountVolume.NodeExpandVolume succeeded for volume "
        "\"pv-flex\" node-1");
  }));
  auto claim = api_.fake<api::PersistentVolumeClaim>().Objects().at("default/data");
  EXPECT_EQ(claim.status.capacity.at("storage"), api::Quantity::MustParse("2Gi"));
  EXPECT_TRUE(claim.status.conditions.empty());
  EXPECT_TRUE(claim.status.allocated_resource_statuses.empty());
  // After the volume was mounted, once.
  EXPECT_LT(IndexOf("mountdevice"), IndexOf("expandfs"));
  auto calls = DriverCalls();
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "expandfs"), 1);
  for (int i = 0; i < 3; ++i) vm_->Kick();
  std::this_thread::sleep_for(30ms);
  calls = DriverCalls();
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "expandfs"), 1)
      << "not again while the cache still shows the old claim";
}

}  // namespace
}  // namespace kvol::node::volumemanager
