// The volume manager against fakes: plugins on a FakeHost (FakeMounter, temp directories), pod
// status through FakeClient, the caches as maps the test edits, time on a FakeClock.
#include "node/volumemanager/volume_manager.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "client/testing/eventually.h"
#include "client/testing/fake_client.h"
#include "volume/plugins/plugins.h"
#include "volume/testing/fake_host.h"
#include "volume/testing/temp_dir.h"

namespace kvol::node::volumemanager {
namespace {

namespace fs = std::filesystem;
using client::testing::Eventually;
using namespace std::chrono_literals;
namespace plugins = volume::plugins;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class VolumeManagerTest : public ::testing::Test {
 protected:
  VolumeManagerTest() : host_(tmp_.path() + "/agent") {
    for (auto& p : plugins::InTreePlugins(host_)) EXPECT_TRUE(plugins_.Register(std::move(p)).ok());
  }
  ~VolumeManagerTest() override {
    if (vm_) vm_->Stop();
  }

  void StartManager(Options o = {}) {
    o.root_dir = host_.root();
    o.host_ip = "10.0.0.7";
    Sources s;
    s.pods = [this] {
      std::lock_guard lock(mu_);
      std::vector<std::shared_ptr<const api::Pod>> out;
      for (const auto& [k, p] : pods_) out.push_back(std::make_shared<const api::Pod>(p));
      return out;
    };
    s.lookups.claim = [this](const std::string& ns, const std::string& name) {
      std::lock_guard lock(mu_);
      auto it = claims_.find(ns + "/" + name);
      return it == claims_.end() ? nullptr
                                 : std::make_shared<const api::PersistentVolumeClaim>(it->second);
    };
    s.lookups.volume = [this](const std::string& name) {
      std::lock_guard lock(mu_);
      auto it = volumes_.find(name);
      return it == volumes_.end() ? nullptr
                                  : std::make_shared<const api::PersistentVolume>(it->second);
    };
    s.lookups.config_map_version = [this](const std::string& ns, const std::string& name) {
      std::lock_guard lock(mu_);
      auto it = cm_versions_.find(ns + "/" + name);
      return it == cm_versions_.end() ? std::string() : it->second;
    };
    s.lookups.secret_version = [](const std::string&, const std::string&) { return std::string(); };
    o.on_volumes_in_use = [this](std::vector<std::string> names) {
      std::lock_guard lock(mu_);
      in_use_ = std::move(names);
    };
    vm_ = std::make_unique<VolumeManager>(
        api_, host_, plugins_, std::move(s),
        [this](const api::ObjectReference& ref, std::string_view type, std::string_view reason,
               std::string msg) {
          std::lock_guard lock(mu_);
          events_.push_back(ref.name + " " + std::string(type) + " " + std::string(reason) + " " +
                            msg);
        },
        clock_, o);
    ASSERT_TRUE(vm_->Start().ok());
  }

  void PutPod(api::Pod p) {
    if (p.metadata.namespace_.empty()) p.metadata.namespace_ = "default";
    if (p.metadata.uid.empty()) p.metadata.uid = "uid-" + p.metadata.name;
    p.spec.node_name = "node-1";
    api_.fake<api::Pod>().Seed(p);
    {
      std::lock_guard lock(mu_);
      pods_[p.metadata.name] = p;
    }
    if (vm_) vm_->Kick();
  }
  void RemovePod(const std::string& name) {
    {
      std::lock_guard lock(mu_);
      pods_.erase(name);
    }
    vm_->Kick();
  }
  void PutConfigMap(const std::string& name, const std::string& value, const std::string& rv) {
    api::ConfigMap cm;
    cm.metadata.namespace_ = "default";
    cm.metadata.name = name;
    cm.metadata.resource_version = rv;
    cm.data = {{"log_level", value}};
    host_.PutConfigMap(cm);
    {
      std::lock_guard lock(mu_);
      cm_versions_["default/" + name] = rv;
    }
    if (vm_) vm_->Kick();
  }
  // A local PV at `path` and the claim default/`claim` Bound to it, as the caches show them.
  void BoundLocalClaim(const std::string& claim, const std::string& pv_name,
                       const std::string& path, const std::string& mode = "Filesystem") {
    api::PersistentVolume pv;
    pv.metadata.name = pv_name;
    pv.spec.local.emplace().path = path;
    pv.spec.volume_mode = mode;
    BindClaim(claim, std::move(pv));
  }
  // `pv` and the claim default/`claim` Bound to it, as the caches show them.
  void BindClaim(const std::string& claim, api::PersistentVolume pv) {
    std::lock_guard lock(mu_);
    pv.spec.claim_ref.emplace().uid = "uid-" + claim;
    api::PersistentVolumeClaim c;
    c.metadata.uid = "uid-" + claim;
    c.spec.volume_name = pv.metadata.name;
    c.status.phase = "Bound";
    claims_["default/" + claim] = c;
    volumes_[pv.metadata.name] = std::move(pv);
  }
  api::Pod StoredPod(const std::string& name) {
    return api_.fake<api::Pod>().Objects().at("default/" + name);
  }
  std::string VolumesReady(const std::string& name) {
    for (const auto& c : StoredPod(name).status.conditions) {
      if (c.type == kVolumesReady) return c.status;
    }
    return "";
  }
  std::vector<std::string> Events() {
    std::lock_guard lock(mu_);
    return events_;
  }
  bool HasEvent(const std::string& e) {
    auto ev = Events();
    return std::find(ev.begin(), ev.end(), e) != ev.end();
  }
  std::string Dir(const std::string& pod, std::string_view plugin, const std::string& name) {
    return host_.PodVolumeDir("uid-" + pod, plugin, name);
  }
  static api::Pod PodWith(const std::string& name, std::vector<api::Volume> volumes) {
    api::Pod p;
    p.metadata.name = name;
    p.spec.volumes = std::move(volumes);
    api::Container c;
    c.name = "busybox";
    c.image = "busybox";
    p.spec.containers.push_back(c);
    return p;
  }
  static api::Volume EmptyDir(const std::string& name, const std::string& medium = "") {
    api::Volume v;
    v.name = name;
    v.empty_dir.emplace().medium = medium;
    return v;
  }
  static api::Volume ConfigMapVolume(const std::string& name, const std::string& cm) {
    api::Volume v;
    v.name = name;
    v.config_map.emplace().name = cm;
    return v;
  }
  static api::Volume ClaimVolume(const std::string& name, const std::string& claim) {
    api::Volume v;
    v.name = name;
    v.persistent_volume_claim.emplace().claim_name = claim;
    return v;
  }

  volume::testing::TempDir tmp_;
  volume::testing::FakeHost host_;
  volume::PluginManager plugins_;
  client::testing::FakeClient api_;
  os::testing::FakeClock clock_;
  std::mutex mu_;
  std::map<std::string, api::Pod> pods_;
  std::map<std::string, api::PersistentVolumeClaim> claims_;
  std::map<std::string, api::PersistentVolume> volumes_;
  std::map<std::string, std::string> cm_versions_;
  std::vector<std::string> events_;
  std::vector<std::string> in_use_;
  std::unique_ptr<VolumeManager> vm_;
};

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
    if (c.type == kVolumesReady) {
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
  Options o;
  o.mount_timeout = 123s;
  StartManager(o);
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

TEST_F(VolumeManagerTest, RestartKeepsWhatIsRightAndCleansTheRest) {
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

TEST_F(VolumeManagerTest, DeviceMountFoundOnDiskWithNoUserIsUnmounted) {
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

TEST_F(VolumeManagerTest, APodDirectoryFoundAtStartGoesWhenItsPodGoesLater) {
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

TEST_F(VolumeManagerTest, ResyncRemovesPodDirectoriesNoEventNamed) {
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

TEST_F(VolumeManagerTest, SubPathsResolveInsideTheirVolumeOrThePodWaits) {
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
  EXPECT_TRUE(fs::is_directory(Dir("ok", plugins::kEmptyDir, "cache") + "/nginx/tmp"));
  const std::string msg =
      "Error: failed to prepare subPath for volumeMount \"shared\" of container \"busybox\": "
      "subpath \"/\" not within volume path \"" +
      host + "\"";
  ASSERT_TRUE(Eventually([&] { return HasEvent("bad Warning Failed " + msg); }));
  ASSERT_TRUE(Eventually([&] { return VolumesReady("bad") == "False"; }));
  for (const auto& c : StoredPod("bad").status.conditions) {
    if (c.type == kVolumesReady) {
      EXPECT_EQ(c.message, msg);
    }
  }
}

TEST(OperationExecutor, OneOperationPerKeyAndBackoffAfterFailure) {
  os::testing::FakeClock clock;
  OperationExecutor ex(clock, {.initial_backoff = 500ms, .max_backoff = 2s});
  std::atomic<bool> release{false};
  std::atomic<int> ran{0};
  ASSERT_TRUE(ex.Run(
      "k",
      [&] {
        while (!release) std::this_thread::sleep_for(1ms);
        ++ran;
        return InternalError("boom");
      },
      nullptr));
  EXPECT_TRUE(ex.IsPending("k"));
  EXPECT_FALSE(ex.Run(
      "k", [] { return OkStatus(); }, nullptr))
      << "one in flight per key";
  EXPECT_TRUE(ex.Run(
      "other", [] { return OkStatus(); }, nullptr));
  release = true;
  ASSERT_TRUE(Eventually([&] { return !ex.IsPending("k"); }));
  EXPECT_FALSE(ex.Run(
      "k", [] { return OkStatus(); }, nullptr))
      << "in backoff";
  ASSERT_TRUE(ex.NextRetry().has_value());
  EXPECT_EQ(*ex.NextRetry() - clock.Monotonic(), 500ms);
  clock.Advance(500ms);
  std::atomic<bool> done{false};
  EXPECT_TRUE(ex.Run(
      "k", [] { return OkStatus(); }, [&](Status s) { done = s.ok(); }));
  EXPECT_TRUE(Eventually([&] { return done.load(); }));
  EXPECT_EQ(ran.load(), 1);
}

TEST(OperationExecutor, AtMostMaxThreadsRunAndTheRestWait) {
  os::testing::FakeClock clock;
  OperationExecutor ex(clock, {.max_threads = 2});
  std::atomic<bool> release{false};
  std::atomic<int> running{0}, peak{0}, done{0};
  auto op = [&] {
    int now = ++running;
    int p = peak;
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    while (!release) std::this_thread::sleep_for(1ms);
    --running;
    return OkStatus();
  };
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(ex.Run("k" + std::to_string(i), op, [&](Status) { ++done; }));
  }
  ASSERT_TRUE(Eventually([&] { return running.load() == 2; }));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(running.load(), 2) << "a hung operation holds one worker, and no more than two run";
  EXPECT_TRUE(ex.IsPending("k4")) << "queued operations stay pending";
  release = true;
  ASSERT_TRUE(Eventually([&] { return done.load() == 5; }));
  EXPECT_EQ(peak.load(), 2);
  // Workers come back when work does.
  std::atomic<bool> again{false};
  EXPECT_TRUE(ex.Run(
      "k0", [] { return OkStatus(); }, [&](Status) { again = true; }));
  EXPECT_TRUE(Eventually([&] { return again.load(); }));
}


// A FlexVolume driver that attaches, scripted on the FakeExec: the real FlexVolume plugin calls
// it. attach gives /dev/fake-<volumeID>; mountdevice mounts it (on the FakeMounter); everything
// else is not supported, so the defaults apply (pods bind the device's mount).
class AttachTest : public VolumeManagerTest {
 protected:
  static constexpr char kPlugin[] = "flexvolume-kvol.io/disk";

  AttachTest() {
    const std::string dir = tmp_.path() + "/exec";
    executable_ = dir + "/kvol.io~disk/disk";
    fs::create_directories(fs::path(executable_).parent_path());
    std::ofstream(executable_) << "#!/bin/sh\n";
    chmod(executable_.c_str(), 0755);
    host_.fake_exec().On(executable_, [this](const std::vector<std::string>& argv) {
      return Driver(argv);
    });
    plugins::FlexVolumeOptions fo;
    fo.dir = dir;
    for (auto& p : plugins::FlexVolumeProber(host_, fo)()) {
      EXPECT_TRUE(plugins_.Register(std::move(p)).ok());
    }
  }

  StatusOr<os::ExecResult> Driver(const std::vector<std::string>& argv) {
    const std::string& cmd = argv.at(1);
    std::lock_guard lock(driver_mu_);
    driver_calls_.push_back(cmd + (cmd == "detach" ? " " + argv.at(2) : ""));
    auto reply = [](const std::string& json) { return os::ExecResult{0, json}; };
    if (cmd == "init") return reply(R"({"status": "Success", "capabilities": {"attach": true}})");
    if (cmd == "attach") {
      if (!attach_error_.empty()) {
        return reply(R"({"status": "Failure", "message": ")" + attach_error_ + "\"}");
      }
      const std::string id = api::Json::parse(argv.at(2)).at("volumeID");
      return reply(R"({"status": "Success", "device": "/dev/fake-)" + id + "\"}");
    }
    if (cmd == "mountdevice") {
      EXPECT_TRUE(host_.fake_mounter().Mount(argv.at(3), argv.at(2), "ext4", {}).ok());
      return reply(R"({"status": "Success"})");
    }
    if (cmd == "detach" || cmd == "expandfs") return reply(R"({"status": "Success"})");
    return reply(R"({"status": "Not supported"})");
  }
  std::vector<std::string> DriverCalls() {
    std::lock_guard lock(driver_mu_);
    return driver_calls_;
  }
  void SetAttachError(std::string e) {
    std::lock_guard lock(driver_mu_);
    attach_error_ = std::move(e);
  }
  // A FlexVolume PV `pv_name` of volume `id`, and the claim default/`claim` Bound to it.
  void BoundFlexClaim(const std::string& claim, const std::string& pv_name, const std::string& id) {
    api::PersistentVolume pv;
    pv.metadata.name = pv_name;
    auto& f = pv.spec.flex_volume.emplace();
    f.driver = "kvol.io/disk";
    f.options = {{"volumeID", id}};
    BindClaim(claim, std::move(pv));
  }
  std::string Record(const std::string& pv_name) {
    return host_.root() + "/plugins/" + kPlugin + "/attachments/" + pv_name;
  }
  size_t IndexOf(const std::string& call) {
    auto calls = DriverCalls();
    return std::find(calls.begin(), calls.end(), call) - calls.begin();
  }

  std::string executable_;
  std::mutex driver_mu_;
  std::vector<std::string> driver_calls_;  // guarded by driver_mu_
  std::string attach_error_;               // guarded by driver_mu_
  std::vector<api::AttachedVolume> attached_;  // guarded by mu_
};

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
  EXPECT_EQ(vm_->AttachedVolumes(), (std::map<std::string, std::string>{{unique, "/dev/fake-vol-1"}}));
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
  ASSERT_TRUE(Eventually([&] { return vm_->AttachedVolumes().empty() && !fs::exists(Record("pv-flex")); }));
  EXPECT_FALSE(fs::exists(global));
  EXPECT_LT(IndexOf("unmountdevice"), IndexOf("detach pv-flex"));
  EXPECT_TRUE(Eventually([&] {
    std::lock_guard lock(mu_);
    return attached_.empty() && in_use_.empty();
  }));
}

TEST_F(AttachTest, AttachFailureIsAnEventAndThePodWaitsUnattached) {
  BoundFlexClaim("data", "pv-flex", "vol-1");
  PutPod(PodWith("web", {ClaimVolume("data", "data")}));
  SetAttachError("disk vol-1 is attached to another node");
  Options o;
  o.executor.initial_backoff = 500ms;
  o.mount_timeout = 10s;
  StartManager(o);
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

TEST_F(AttachTest, RestartAttachesAgainWhatIsNeededAndDetachesWhatIsNot) {
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
  EXPECT_EQ(vm_->AttachedVolumes(),
            (std::map<std::string, std::string>{{std::string(kPlugin) + "/pv-flex", "/dev/fake-vol-1"}}));
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
