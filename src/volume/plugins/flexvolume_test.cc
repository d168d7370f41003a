// FlexVolume against a FakeHost: the driver's executable is a real (empty) file so that probing
// finds it, and its answers come from the FakeExec. What each call passes, what each reply
// means, and the defaults behind "Not supported".
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "api/codec.h"
#include "volume/plugins/plugins.h"
#include "volume/testing/fake_host.h"
#include "volume/testing/temp_dir.h"

namespace kvol::volume::plugins {
namespace {

namespace fs = std::filesystem;
using os::ExecResult;

constexpr char kDriver[] = "kvol.io/disk";
constexpr char kPlugin[] = "flexvolume-kvol.io/disk";

StatusOr<ExecResult> Reply(const std::string& json, int exit_code = 0) {
  return ExecResult{exit_code, json + "\n"};
}
StatusOr<ExecResult> Success() { return Reply(R"({"status": "Success"})"); }
StatusOr<ExecResult> NotSupported() { return Reply(R"({"status": "Not supported"})", 1); }

class FlexVolumeTest : public ::testing::Test {
 protected:
  FlexVolumeTest() : host_(tmp_.path() + "/agent") {
    options_.dir = tmp_.path() + "/exec";
    executable_ = options_.dir + "/kvol.io~disk/disk";
    fs::create_directories(fs::path(executable_).parent_path());
    std::ofstream(executable_) << "#!/bin/sh\n";
    chmod(executable_.c_str(), 0755);
    pod_.metadata.name = "p";
    pod_.metadata.namespace_ = "default";
    pod_.metadata.uid = "uid-1";
    pod_.spec.service_account_name = "default";
    // Each command answers from `replies_`; unknown commands are not supported.
    host_.fake_exec().On(executable_, [this](const std::vector<std::string>& argv) {
      auto it = replies_.find(argv.at(1));
      return it == replies_.end() ? NotSupported() : it->second(argv);
    });
  }

  // Probes with `init` answering `init_reply`; the plugin made, registered with the manager.
  VolumePlugin* Load(const std::string& init_reply) {
    replies_["init"] = [init_reply](const auto&) { return Reply(init_reply); };
    auto prober = FlexVolumeProber(host_, options_);
    for (auto& p : prober()) EXPECT_TRUE(manager_.Register(std::move(p)).ok());
    return manager_.FindByName(kPlugin);
  }

  Spec PodVolume() const {
    Spec s;
    s.volume.name = "data";
    auto& f = s.volume.flex_volume.emplace();
    f.driver = kDriver;
    f.fs_type = "ext4";
    f.options = {{"volumeID", "vol-1"}};
    return s;
  }
  Spec PvVolume() const {
    Spec s;
    s.volume.name = "data";
    api::PersistentVolume pv;
    pv.metadata.name = "pv-1";
    auto& f = pv.spec.flex_volume.emplace();
    f.driver = kDriver;
    f.options = {{"volumeID", "vol-1"}};
    s.pv = pv;
    return s;
  }
  // The calls of the driver made so far, without the executable: {"mount", dir, json}, ...
  std::vector<std::vector<std::string>> DriverCalls() {
    std::vector<std::vector<std::string>> out;
    for (auto argv : host_.fake_exec().calls()) {
      if (argv.front() != executable_) continue;
      argv.erase(argv.begin());
      out.push_back(argv);
    }
    return out;
  }
  std::vector<std::vector<std::string>> CallsOf(const std::string& command) {
    std::vector<std::vector<std::string>> out;
    for (auto& c : DriverCalls()) {
      if (c.front() == command) out.push_back(c);
    }
    return out;
  }

  testing::TempDir tmp_;
  testing::FakeHost host_;
  PluginManager manager_;
  FlexVolumeOptions options_;
  std::string executable_;
  api::Pod pod_;
  std::map<std::string, std::function<StatusOr<ExecResult>(const std::vector<std::string>&)>>
      replies_;
};

TEST_F(FlexVolumeTest, ProbingMakesOnePluginPerDriverAfterItsInit) {
  VolumePlugin* p = Load(R"({"status": "Success", "capabilities": {"attach": false}})");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->Name(), kPlugin);
  EXPECT_TRUE(p->CanSupport(PodVolume()));
  EXPECT_TRUE(p->CanSupport(PvVolume()));
  Spec other = PodVolume();
  other.volume.flex_volume->driver = "kvol.io/other";
  EXPECT_FALSE(p->CanSupport(other));
  EXPECT_EQ(p->AsAttachable(), nullptr);
  EXPECT_EQ(p->AsDeviceMountable(), nullptr);
  EXPECT_NE(p->AsExpandable(), nullptr);
  EXPECT_EQ(CallsOf("init").size(), 1u);
}

TEST_F(FlexVolumeTest, AnInitThatFailsIsTriedAgainAtTheNextProbe) {
  replies_["init"] = [](const auto&) {
    return Reply(R"({"status": "Failure", "message": "no backend"})", 1);
  };
  manager_.SetProber(FlexVolumeProber(host_, options_));
  auto found = manager_.FindBySpec(PodVolume());
  EXPECT_EQ(found.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(CallsOf("init").size(), 1u);

  // Fixed, but within the probe interval: not looked at again.
  replies_["init"] = [](const auto&) { return Reply(R"({"status": "Success"})"); };
  EXPECT_FALSE(manager_.FindBySpec(PodVolume()).ok());
  EXPECT_EQ(CallsOf("init").size(), 1u);

  host_.fake_clock().Advance(options_.probe_interval);
  found = manager_.FindBySpec(PodVolume());
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ((*found)->Name(), kPlugin);
  // A driver made once is not probed again.
  host_.fake_clock().Advance(options_.probe_interval);
  Spec other = PodVolume();
  other.volume.flex_volume->driver = "kvol.io/other";
  EXPECT_FALSE(manager_.FindBySpec(other).ok());
  EXPECT_EQ(CallsOf("init").size(), 2u);
}

TEST_F(FlexVolumeTest, MountPassesThePodTheOptionsAndTheSecret) {
  VolumePlugin* p = Load(R"({"status": "Success", "capabilities": {"attach": false}})");
  ASSERT_NE(p, nullptr);
  api::Secret secret;
  secret.metadata.namespace_ = "default";
  secret.metadata.name = "creds";
  secret.type = kDriver;
  secret.data = {{"password", "c2VjcmV0"}};
  host_.PutSecret(secret);
  Spec spec = PodVolume();
  spec.volume.flex_volume->secret_ref.emplace().name = "creds";
  spec.volume.flex_volume->options["kubernetes.io/fsType"] = "xfs";  // the user's option wins
  replies_["mount"] = [](const auto&) { return Success(); };

  auto m = p->NewMounter(spec, pod_);
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE((*m)->SetUp().ok());
  auto calls = CallsOf("mount");
  ASSERT_EQ(calls.size(), 1u);
  const std::string dir = host_.PodVolumeDir("uid-1", kPlugin, "data");
  EXPECT_EQ((*m)->GetPath(), dir);
  EXPECT_NE(dir.find("/pods/uid-1/volumes/flexvolume-kvol.io~disk/data"), std::string::npos);
  EXPECT_EQ(calls[0].at(1), dir);
  EXPECT_TRUE(fs::is_directory(dir));
  const api::Json options = api::Json::parse(calls[0].at(2));
  EXPECT_EQ(options, api::Json({{"kubernetes.io/fsType", "xfs"},
                                {"kubernetes.io/readwrite", "rw"},
                                {"kubernetes.io/pvOrVolumeName", "data"},
                                {"kubernetes.io/pod.name", "p"},
                                {"kubernetes.io/pod.namespace", "default"},
                                {"kubernetes.io/pod.uid", "uid-1"},
                                {"kubernetes.io/serviceAccount.name", "default"},
                                {"kubernetes.io/secret/password", "c2VjcmV0"},
                                {"volumeID", "vol-1"}}));
}

TEST_F(FlexVolumeTest, ASecretOfAnotherTypeIsNotGivenToTheDriver) {
  VolumePlugin* p = Load(R"({"status": "Success", "capabilities": {"attach": false}})");
  api::Secret secret;
  secret.metadata.namespace_ = "default";
  secret.metadata.name = "creds";
  secret.type = "Opaque";
  host_.PutSecret(secret);
  Spec spec = PodVolume();
  spec.volume.flex_volume->secret_ref.emplace().name = "creds";
  auto m = p->NewMounter(spec, pod_);
  Status s = (*m)->SetUp();
  EXPECT_EQ(s.message(),
            "secret default/creds has type \"Opaque\"; FlexVolume driver kvol.io/disk is given "
            "only secrets of type \"kvol.io/disk\"");
  EXPECT_TRUE(CallsOf("mount").empty());
  EXPECT_FALSE(fs::exists(host_.PodVolumeDir("uid-1", kPlugin, "data")));
}

TEST_F(FlexVolumeTest, DriverFailuresAndBadRepliesAreErrorsThatSayWhat) {
  VolumePlugin* p = Load(R"({"status": "Success", "capabilities": {"attach": false}})");
  replies_["mount"] = [](const auto&) {
    return Reply(R"({"status": "Failure", "message": "volume vol-1 is busy"})", 1);
  };
  auto m = p->NewMounter(PodVolume(), pod_);
  EXPECT_EQ((*m)->SetUp().message(),
            "mount command failed, status: Failure, reason: volume vol-1 is busy");
  replies_["mount"] = [](const auto&) {
    return Reply(R"({"status": "Failure", "message": 42, "device": 7, "capabilities": [1]})", 1);
  };
  EXPECT_EQ((*m)->SetUp().message(), "mount command failed, status: Failure, reason: ");
  replies_["mount"] = [](const auto&) { return Reply(R"({"status": 1})", 1); };
  EXPECT_NE((*m)->SetUp().message().find("failed to unmarshal output for command: mount"),
            std::string::npos);
  replies_["mount"] = [](const auto&) { return Reply("mounted!", 0); };
  EXPECT_EQ((*m)->SetUp().message(),
            "failed to unmarshal output for command: mount, output: \"mounted!\", exit status 0");
  replies_["mount"] = [](const auto&) { return Reply(R"({"status": "Success"})", 2); };
  EXPECT_NE((*m)->SetUp().message().find("answered Success to mount but exited with exit status 2"),
            std::string::npos);
  replies_["mount"] = [](const auto&) -> StatusOr<ExecResult> {
    return DeadlineExceededError("killed");
  };
  Status s = (*m)->SetUp();
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(s.message().find("mount command of driver " + executable_ + " timed out"),
            std::string::npos);
}

TEST_F(FlexVolumeTest, AMountNotSupportedWithoutAttachIsAnErrorAndIsNotAskedAgain) {
  VolumePlugin* p = Load(R"({"status": "Success", "capabilities": {"attach": false}})");
  auto m = p->NewMounter(PodVolume(), pod_);
  EXPECT_EQ((*m)->SetUp().message(), "driver kvol.io/disk implements neither mount nor attach");
  EXPECT_EQ((*m)->SetUp().message(), "driver kvol.io/disk implements neither mount nor attach");
  EXPECT_EQ(CallsOf("mount").size(), 1u);
}

TEST_F(FlexVolumeTest, AttachWaitMountDeviceAndBindByDefault) {
  // No capabilities in init's reply: attach, as Kubernetes assumes.
  VolumePlugin* p = Load(R"({"status": "Success"})");
  ASSERT_NE(p, nullptr);
  ASSERT_NE(p->AsAttachable(), nullptr);
  ASSERT_NE(p->AsDeviceMountable(), nullptr);
  Spec spec = PvVolume();
  EXPECT_TRUE(p->AsAttachable()->NeedsAttach(spec));
  EXPECT_TRUE(p->AsDeviceMountable()->NeedsDeviceMount(spec));
  replies_["attach"] = [](const auto&) {
    return Reply(R"({"status": "Success", "device": "/dev/loop7"})");
  };
  // waitforattach, mountdevice, mount and unmount: not supported, so the defaults.
  auto device = p->AsAttachable()->Attach(spec, "node-1");
  ASSERT_TRUE(device.ok());
  EXPECT_EQ(*device, "/dev/loop7");
  auto attach = CallsOf("attach");
  ASSERT_EQ(attach.size(), 1u);
  EXPECT_EQ(api::Json::parse(attach[0].at(1)),
            api::Json({{"kubernetes.io/fsType", ""},
                       {"kubernetes.io/readwrite", "rw"},
                       {"kubernetes.io/pvOrVolumeName", "pv-1"},
                       {"volumeID", "vol-1"}}));
  EXPECT_EQ(attach[0].at(2), "node-1");
  auto waited = p->AsAttachable()->WaitForAttach(spec, *device);
  ASSERT_TRUE(waited.ok());
  EXPECT_EQ(*waited, "/dev/loop7");

  // mountdevice not supported: a blank device is formatted (ext4) and mounted.
  host_.fake_exec().On("blkid", [](const auto&) { return StatusOr<ExecResult>(ExecResult{2, ""}); });
  host_.fake_exec().On("mkfs.ext4", [](const auto&) { return StatusOr<ExecResult>(ExecResult{}); });
  const std::string global = p->AsDeviceMountable()->GetDeviceMountPath(spec);
  EXPECT_EQ(global, host_.PluginDir(kPlugin) + "/mounts/pv-1");
  ASSERT_TRUE(p->AsDeviceMountable()->MountDevice(spec, *device).ok());
  EXPECT_EQ(CallsOf("mountdevice").size(), 1u);
  EXPECT_EQ(CallsOf("mountdevice")[0].at(1), global);
  EXPECT_EQ(CallsOf("mountdevice")[0].at(2), "/dev/loop7");
  auto mounts = host_.fake_mounter().calls();
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0].source, "/dev/loop7");
  EXPECT_EQ(mounts[0].target, global);
  EXPECT_EQ(mounts[0].type, "ext4");

  // mount not supported: the pod's directory binds the device's mount.
  auto m = p->NewMounter(spec, pod_);
  ASSERT_TRUE((*m)->SetUp().ok());
  mounts = host_.fake_mounter().calls();
  ASSERT_EQ(mounts.size(), 2u);
  EXPECT_EQ(mounts[1].source, global);
  EXPECT_EQ(mounts[1].target, host_.PodVolumeDir("uid-1", kPlugin, "pv-1"));
  EXPECT_EQ(mounts[1].options, std::vector<std::string>{"bind"});

  // Tear-down: unmount (not supported: the bind is unmounted), unmountdevice, detach.
  auto u = p->NewUnmounter("pv-1", "uid-1");
  ASSERT_TRUE((*u)->TearDown().ok());
  EXPECT_FALSE(fs::exists(host_.PodVolumeDir("uid-1", kPlugin, "pv-1")));
  ASSERT_TRUE(p->AsDeviceMountable()->UnmountDevice(global).ok());
  EXPECT_FALSE(fs::exists(global));
  EXPECT_TRUE(host_.fake_mounter().List()->empty());
  replies_["detach"] = [](const auto&) { return Success(); };
  ASSERT_TRUE(p->AsAttachable()->Detach("pv-1", "node-1").ok());
  EXPECT_EQ(CallsOf("detach").at(0), (std::vector<std::string>{"detach", "pv-1", "node-1"}));
  EXPECT_EQ(CallsOf("unmountdevice").at(0), (std::vector<std::string>{"unmountdevice", global}));
}

TEST_F(FlexVolumeTest, TheDriversOwnMountDeviceAndWaitForAttachAreUsed) {
  VolumePlugin* p = Load(R"({"status": "Success", "capabilities": {"attach": true}})");
  replies_["waitforattach"] = [](const auto& argv) {
    EXPECT_EQ(argv.at(2), "vol-1-pending");
    return Reply(R"({"status": "Success", "device": "/dev/sdx"})");
  };
  replies_["mountdevice"] = [this](const auto& argv) {
    // The driver mounts it itself.
    EXPECT_TRUE(host_.fake_mounter().Mount(argv.at(3), argv.at(2), "xfs", {}).ok());
    return Success();
  };
  Spec spec = PvVolume();
  auto waited = p->AsAttachable()->WaitForAttach(spec, "vol-1-pending");
  ASSERT_TRUE(waited.ok());
  EXPECT_EQ(*waited, "/dev/sdx");
  ASSERT_TRUE(p->AsDeviceMountable()->MountDevice(spec, "/dev/sdx").ok());
  // Mounted already: the driver is not called again.
  ASSERT_TRUE(p->AsDeviceMountable()->MountDevice(spec, "/dev/sdx").ok());
  EXPECT_EQ(CallsOf("mountdevice").size(), 1u);
  for (const auto& argv : host_.fake_exec().calls()) EXPECT_NE(argv.front(), "mkfs.ext4");
}

TEST_F(FlexVolumeTest, ExpandCallsTheDriverOrGrowsTheFilesystem) {
  VolumePlugin* p = Load(R"({"status": "Success", "capabilities": {"requiresFSResize": true}})");
  Spec spec = PvVolume();
  replies_["expandvolume"] = [](const auto&) { return Success(); };
  auto size = p->AsExpandable()->ExpandVolumeDevice(spec, 2 << 20, 1 << 20);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 2 << 20);
  auto ev = CallsOf("expandvolume").at(0);
  EXPECT_EQ(ev.at(2), host_.PluginDir(kPlugin) + "/mounts/pv-1");
  EXPECT_EQ(ev.at(3), "2097152");
  EXPECT_EQ(ev.at(4), "1048576");
  EXPECT_TRUE(p->AsExpandable()->RequiresFSResize(spec));

  // expandfs not supported: resize2fs on the device's ext4.
  host_.fake_exec().On("blkid", [](const auto&) {
    return StatusOr<ExecResult>(ExecResult{0, "TYPE=ext4\n"});
  });
  std::vector<std::string> resized;
  host_.fake_exec().On("resize2fs", [&](const auto& argv) {
    resized = argv;
    return StatusOr<ExecResult>(ExecResult{});
  });
  NodeExpandOptions o{"/dev/loop7", "/mnt/global", 2 << 20, 1 << 20};
  ASSERT_TRUE(p->AsNodeExpandable()->NodeExpand(spec, o).ok());
  EXPECT_EQ(resized, (std::vector<std::string>{"resize2fs", "/dev/loop7"}));
  auto ef = CallsOf("expandfs").at(0);
  EXPECT_EQ(std::vector<std::string>(ef.begin() + 2, ef.end()),
            (std::vector<std::string>{"/dev/loop7", "/mnt/global", "2097152", "1048576"}));

  // A driver without expandvolume still expands (nothing to do for its storage).
  replies_["expandvolume"] = [](const auto&) { return NotSupported(); };
  size = p->AsExpandable()->ExpandVolumeDevice(spec, 3 << 20, 2 << 20);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 3 << 20);
}

}  // namespace
}  // namespace kvol::volume::plugins
