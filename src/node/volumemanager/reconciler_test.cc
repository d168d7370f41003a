// The reconciler's table: (desired, actual, operations in flight) -> the operations one pass
// starts, in order. The operations are recorded, not run; like the executor, one whose key is
// in flight is not started again.
#include "node/volumemanager/reconciler.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "volume/testing/temp_dir.h"

namespace kvol::node::volumemanager {
namespace {

class RecordedOperations final : public Operations {
 public:
  std::set<std::string> pending;
  std::vector<std::string> started;
  std::set<std::string> kept;

  bool IsPending(const std::string& key) const override { return pending.count(key) > 0; }
  void ForgetBackoffExcept(const std::set<std::string>& keep) override { kept = keep; }
  void Attach(const DesiredPod&, const DesiredVolume& v) override {
    Start(AttachOperationKey(v.unique_name), "attach " + v.unique_name);
  }
  void VerifyAttached(const DesiredPod&, const DesiredVolume& v,
                      const std::string& device) override {
    Start(AttachOperationKey(v.unique_name), "verify-attached " + v.unique_name + " " + device);
  }
  void ForgetAttachment(const std::string& name, const ActualAttachment&) override {
    started.push_back("forget-attachment " + name);
  }
  void MountDevice(const DesiredPod&, const DesiredVolume& v, const std::string& device) override {
    Start(DeviceOperationKey(v.unique_name), "mount-device " + v.unique_name + " " + device);
  }
  void SetUp(const std::string& key, const DesiredPod&, const DesiredVolume&) override {
    Start(key, "set-up " + key);
  }
  void NodeExpand(const DesiredPod&, const DesiredVolume& v, volume::NodeExpandOptions o) override {
    Start(ResizeOperationKey(v.unique_name), "expand " + v.unique_name + " to " +
                                                 std::to_string(o.new_size) + " from " +
                                                 std::to_string(o.old_size) + " device " +
                                                 o.device_path + " at " + o.device_mount_path);
  }
  void TearDown(const std::string& key, const ActualVolume&) override {
    Start(key, "tear-down " + key);
  }
  void UnmountDevice(const std::string& name, const ActualDevice& d) override {
    Start(DeviceOperationKey(name), "unmount-device " + name + " at " + d.mount_path);
  }
  void Detach(const std::string& name, const ActualAttachment& a) override {
    Start(AttachOperationKey(name), "detach " + name + " " + a.volume_name);
  }

 private:
  void Start(const std::string& key, std::string what) {
    if (!pending.count(key)) started.push_back(std::move(what));
  }
};

// A desired volume of plugin "p" named `name`.
struct Want {
  std::string name;
  bool attach = false;
  bool device = false;
  std::string content;
  int64_t grow_to = 0;  // the claim asks for a node expansion to this size
};

struct PodWant {
  std::string uid;
  std::vector<Want> volumes;
  std::map<std::string, std::string> unresolved;
  bool missing_plugin = false;
};

DesiredPods Desired(const std::vector<PodWant>& pods) {
  DesiredPods out;
  for (const PodWant& pw : pods) {
    DesiredPod& dp = out[pw.uid];
    auto pod = std::make_shared<api::Pod>();
    pod->metadata.uid = pw.uid;
    dp.pod = pod;
    dp.unresolved = pw.unresolved;
    dp.missing_plugin = pw.missing_plugin;
    for (const Want& w : pw.volumes) {
      DesiredVolume v;
      v.outer_name = w.name;
      v.unique_name = UniqueVolumeName("p", w.name);
      v.attach = w.attach;
      v.device_mount = w.device;
      v.content_version = w.content;
      if (w.grow_to > 0) {
        v.fs_resize.emplace().new_size = api::Quantity::FromUnits(w.grow_to);
        v.fs_resize->old_size = 1024;
      }
      dp.volumes[VolumeKey(pw.uid, "p", w.name)] = std::move(v);
    }
  }
  return out;
}

ActualVolume Mounted(const std::string& uid, const std::string& name, std::string content = "") {
  ActualVolume v;
  v.pod_uid = uid;
  v.plugin_name = "p";
  v.dir_name = name;
  v.content_version = std::move(content);
  v.path = "/pods/" + uid + "/" + name;
  v.mount_point = true;
  return v;
}

TEST(Reconciler, StartsWhatBringsTheActualStateToTheDesiredOne) {
  struct Row {
    std::string name;
    std::vector<PodWant> desired;
    std::function<void(ActualStateOfWorld&)> actual = [](auto&) {};
    std::set<std::string> pending;
    std::set<std::string> alive;  // pods whose containers still run
    std::vector<std::string> want;
    // What the pass marked itself, if anything.
    std::function<void(const ActualStateOfWorld&)> then = [](const auto&) {};
    // Set on a node whose attachments the controller makes: its status.
    std::optional<ControllerAttachments> controller = std::nullopt;
  };
  const Row rows[] = {
      {.name = "nothing wanted, nothing there", .want = {}},
      {.name = "a new volume is set up",
       .desired = {{.uid = "a", .volumes = {{.name = "x"}}}},
       .want = {"set-up a/p/x"}},
      {.name = "a volume set up as asked needs nothing",
       .desired = {{.uid = "a", .volumes = {{.name = "x", .content = "5"}}}},
       .actual = [](auto& w) { w.MarkVolumeMounted("a/p/x", Mounted("a", "x", "5")); },
       .want = {}},
      {.name = "changed contents are set up again",
       .desired = {{.uid = "a", .volumes = {{.name = "x", .content = "6"}}}},
       .actual = [](auto& w) { w.MarkVolumeMounted("a/p/x", Mounted("a", "x", "5")); },
       .want = {"set-up a/p/x"}},
      {.name = "an uncertain volume is set up again",
       .desired = {{.uid = "a", .volumes = {{.name = "x"}}}},
       .actual = [](auto& w) { w.MarkVolumeUncertain("a/p/x", Mounted("a", "x")); },
       .want = {"set-up a/p/x"}},
      {.name = "an uncertain volume no pod wants is torn down",
       .actual = [](auto& w) { w.MarkVolumeUncertain("a/p/x", Mounted("a", "x")); },
       .want = {"tear-down a/p/x"}},
      {.name = "unmounts come before mounts",
       .desired = {{.uid = "b", .volumes = {{.name = "y"}}}},
       .actual = [](auto& w) { w.MarkVolumeMounted("a/p/x", Mounted("a", "x")); },
       .want = {"tear-down a/p/x", "set-up b/p/y"}},
      {.name = "a set-up in flight is not started twice",
       .desired = {{.uid = "a", .volumes = {{.name = "x"}}}},
       .pending = {"a/p/x"},
       .want = {}},
      {.name = "a pod with a volume not resolved keeps what it has",
       .desired = {{.uid = "a",
                    .volumes = {{.name = "x"}},
                    .unresolved = {{"data", "error processing PVC default/c: PVC is not bound"}}}},
       .actual = [](auto& w) { w.MarkVolumeMounted("a/p/old", Mounted("a", "old")); },
       .want = {"set-up a/p/x"}},
      {.name = "a volume whose plugin is missing waits, and the pod's others are set up",
       .desired = {{.uid = "a",
                    .volumes = {{.name = "x"}},
                    .unresolved = {{"flex", "no volume plugin matched"}},
                    .missing_plugin = true}},
       .actual = [](auto& w) { w.MarkVolumeMounted("a/p/flex", Mounted("a", "flex")); },
       .want = {"set-up a/p/x"}},
      {.name = "a volume found on disk whose plugin is gone is torn down all the same",
       .actual =
           [](auto& w) {
             ActualVolume v = Mounted("a", "x");
             v.plugin_name = "gone";
             v.reconstructed = true;
             w.MarkVolumeUncertain("a/gone/x", v);
           },
       .want = {"tear-down a/gone/x"}},
      {.name = "a gone pod whose containers still run keeps its volumes",
       .actual = [](auto& w) { w.MarkVolumeMounted("a/p/x", Mounted("a", "x")); },
       .alive = {"a"},
       .want = {}},
      {.name = "an attachable volume is attached first",
       .desired = {{.uid = "a", .volumes = {{.name = "x", .attach = true, .device = true}}}},
       .want = {"attach p/x"}},
      {.name = "an uncertain attachment is attached again",
       .desired = {{.uid = "a", .volumes = {{.name = "x", .attach = true, .device = true}}}},
       .actual = [](auto& w) { w.MarkAttachUncertain("p/x", "p", "x", "/dev/sdb"); },
       .want = {"attach p/x"}},
      {.name = "an attach in flight holds back the device mount",
       .desired = {{.uid = "a", .volumes = {{.name = "x", .attach = true, .device = true}}}},
       .actual = [](auto& w) { w.MarkAttached("p/x", "p", "x", "/dev/sdb"); },
       .pending = {"attach/p/x"},
       .want = {}},
      {.name = "the device is mounted, from the attached device, before set-up",
       .desired = {{.uid = "a", .volumes = {{.name = "x", .attach = true, .device = true}}}},
       .actual = [](auto& w) { w.MarkAttached("p/x", "p", "x", "/dev/sdb"); },
       .want = {"mount-device p/x /dev/sdb"}},
      {.name = "an uncertain device is mounted again",
       .desired = {{.uid = "a", .volumes = {{.name = "x", .device = true}}}},
       .actual = [](auto& w) { w.MarkDeviceUncertain("p/x", "p", "/g/x"); },
       .want = {"mount-device p/x "}},
      {.name = "set-up once the device is mounted",
       .desired = {{.uid = "a", .volumes = {{.name = "x", .attach = true, .device = true}}}},
       .actual =
           [](auto& w) {
             w.MarkAttached("p/x", "p", "x", "/dev/sdb");
             w.MarkDeviceMounted("p/x", "p", "/g/x");
           },
       .want = {"set-up a/p/x"}},
      {.name = "a device still used by a pod volume stays",
       .actual =
           [](auto& w) {
             w.MarkDeviceMounted("p/x", "p", "/g/x");
             w.MarkVolumeMounted("a/p/x", Mounted("a", "x"));
           },
       .want = {"tear-down a/p/x"}},
      {.name = "a device no pod volume uses is unmounted, and goes uncertain at once",
       .actual = [](auto& w) { w.MarkDeviceMounted("p/x", "p", "/g/x"); },
       .want = {"unmount-device p/x at /g/x"},
       .then =
           [](const auto& w) {
             EXPECT_FALSE(w.DeviceMounted("p/x"));
             EXPECT_TRUE(w.Device("p/x").has_value());
           }},
      {.name = "an attachment is detached only once its device is unmounted",
       .actual =
           [](auto& w) {
             w.MarkAttached("p/x", "p", "x", "/dev/sdb");
             w.MarkDeviceMounted("p/x", "p", "/g/x");
           },
       .want = {"unmount-device p/x at /g/x"}},
      {.name = "an attachment is not detached while its device unmount runs",
       .actual = [](auto& w) { w.MarkAttached("p/x", "p", "x", "/dev/sdb"); },
       .pending = {"device/p/x"},
       .want = {}},
      {.name = "an attachment nothing uses is detached, and goes uncertain at once",
       .actual = [](auto& w) { w.MarkAttached("p/x", "p", "x", "/dev/sdb"); },
       .want = {"detach p/x x"},
       .then =
           [](const auto& w) {
             EXPECT_FALSE(w.Attached("p/x"));
             EXPECT_TRUE(w.Attachment("p/x").has_value());
           }},
      {.name = "a grown volume is expanded once set up",
       .desired = {{.uid = "a", .volumes = {{.name = "x", .grow_to = 2048}}}},
       .actual = [](auto& w) { w.MarkVolumeMounted("a/p/x", Mounted("a", "x")); },
       .want = {"expand p/x to 2048 from 1024 device  at /pods/a/x"}},
      {.name = "expansion waits for set-up",
       .desired = {{.uid = "a", .volumes = {{.name = "x", .grow_to = 2048}}}},
       .want = {"set-up a/p/x"}},
      {.name = "expansion of a device-mounted volume names its device and mount",
       .desired = {{.uid = "a",
                    .volumes = {{.name = "x", .attach = true, .device = true, .grow_to = 2048}}}},
       .actual =
           [](auto& w) {
             w.MarkAttached("p/x", "p", "x", "/dev/sdb");
             w.MarkDeviceMounted("p/x", "p", "/g/x");
             w.MarkVolumeMounted("a/p/x", Mounted("a", "x"));
           },
       .want = {"expand p/x to 2048 from 1024 device /dev/sdb at /g/x"}},
      {.name = "controller-managed: the agent waits for the controller to attach",
       .desired = {{.uid = "a", .volumes = {{.name = "x", .attach = true, .device = true}}}},
       .want = {},
       .controller = ControllerAttachments{}},
      {.name = "controller-managed: a volume the node status lists is verified attached",
       .desired = {{.uid = "a", .volumes = {{.name = "x", .attach = true, .device = true}}}},
       .want = {"verify-attached p/x /dev/sdc"},
       .controller = ControllerAttachments{.attached = {{"p/x", "/dev/sdc"}}}},
      {.name = "controller-managed: no device mount before the node reports the volume in use",
       .desired = {{.uid = "a", .volumes = {{.name = "x", .attach = true, .device = true}}}},
       .actual = [](auto& w) { w.MarkAttached("p/x", "p", "x", "/dev/sdc"); },
       .want = {},
       .controller = ControllerAttachments{.attached = {{"p/x", "/dev/sdc"}}}},
      {.name = "controller-managed: the device is mounted once reported in use",
       .desired = {{.uid = "a", .volumes = {{.name = "x", .attach = true, .device = true}}}},
       .actual = [](auto& w) { w.MarkAttached("p/x", "p", "x", "/dev/sdc"); },
       .want = {"mount-device p/x /dev/sdc"},
       .controller = ControllerAttachments{.attached = {{"p/x", "/dev/sdc"}}, .in_use = {"p/x"}}},
      {.name = "controller-managed: an attachment nothing uses is forgotten, not detached",
       .actual = [](auto& w) { w.MarkAttached("p/x", "p", "x", "/dev/sdb"); },
       .want = {"forget-attachment p/x"},
       .controller = ControllerAttachments{}},
      {.name = "a volume grown already is not expanded again",
       .desired = {{.uid = "a", .volumes = {{.name = "x", .grow_to = 2048}}}},
       .actual =
           [](auto& w) {
             w.MarkVolumeMounted("a/p/x", Mounted("a", "x"));
             w.MarkResized("p/x", 2048);
           },
       .want = {}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    ActualStateOfWorld actual;
    row.actual(actual);
    RecordedOperations ops;
    ops.pending = row.pending;
    std::function<ControllerAttachments()> controller;
    if (row.controller) controller = [&] { return *row.controller; };
    Reconciler r(
        actual, ops, [&](const std::string& uid) { return row.alive.count(uid) > 0; }, controller);
    r.Reconcile(Desired(row.desired));
    EXPECT_EQ(ops.started, row.want);
    row.then(actual);
  }
}

TEST(Reconciler, BackoffIsKeptOnlyForWhatMayStillRun) {
  ActualStateOfWorld actual;
  actual.MarkVolumeMounted("gone/p/old", Mounted("gone", "old"));
  actual.MarkDeviceMounted("p/d", "p", "/g/d");
  actual.MarkAttached("p/d", "p", "d", "/dev/d");
  actual.MarkResized("p/shrunk", 10);
  RecordedOperations ops;
  Reconciler r(actual, ops, nullptr);
  r.Reconcile(Desired({{.uid = "a", .volumes = {{.name = "x", .attach = true, .grow_to = 20}}}}));
  EXPECT_EQ(ops.kept, (std::set<std::string>{"a/p/x", "gone/p/old", "device/p/d", "attach/p/d",
                                             "attach/p/x", "resize/p/x"}));
  EXPECT_FALSE(actual.ResizedTo("p/shrunk").has_value()) << "no claim asks for it any more";
}

TEST(Reconciler, WhatDriftedBecomesUncertain) {
  volume::testing::TempDir tmp;
  const std::string dir = tmp.path() + "/plain";
  std::filesystem::create_directories(dir);
  ActualStateOfWorld actual;
  actual.MarkVolumeMounted("a/p/mounted", Mounted("a", "mounted"));
  actual.MarkVolumeMounted("a/p/unmounted", Mounted("a", "unmounted"));
  ActualVolume plain = Mounted("a", "plain");
  plain.mount_point = false;
  plain.path = dir;
  actual.MarkVolumeMounted("a/p/plain", plain);
  plain.path = tmp.path() + "/removed";
  actual.MarkVolumeMounted("a/p/removed", plain);
  actual.MarkDeviceMounted("p/d1", "p", "/g/d1");
  actual.MarkDeviceMounted("p/d2", "p", "/g/d2");
  actual.MarkDeviceMounted("p/staged", "p", "/g/staged", /*mount_point=*/false);
  RecordedOperations ops;
  Reconciler r(actual, ops, nullptr);
  r.MarkDrifted({"/pods/a/mounted", "/g/d1"});
  EXPECT_TRUE(actual.VolumeMountedAs("a/p/mounted", ""));
  EXPECT_FALSE(actual.VolumeMountedAs("a/p/unmounted", ""));
  EXPECT_TRUE(actual.VolumeMountedAs("a/p/plain", "")) << "a directory that is still there";
  EXPECT_FALSE(actual.VolumeMountedAs("a/p/removed", ""));
  EXPECT_TRUE(actual.DeviceMounted("p/d1"));
  EXPECT_FALSE(actual.DeviceMounted("p/d2"));
  EXPECT_TRUE(actual.DeviceMounted("p/staged")) << "staged without a mount: nothing to lose";
  EXPECT_TRUE(ops.started.empty()) << "the next pass sets them up";
}

}  // namespace
}  // namespace kvol::node::volumemanager
