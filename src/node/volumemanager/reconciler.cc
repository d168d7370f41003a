#include "node/volumemanager/reconciler.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "base/log.h"

namespace kvol::node::volumemanager {

Reconciler::Reconciler(ActualStateOfWorld& actual, Operations& operations,
                       std::function<bool(const std::string& uid)> containers_alive,
                       std::function<ControllerAttachments()> controller)
    : actual_(actual),
      operations_(operations),
      containers_alive_(std::move(containers_alive)),
      controller_(std::move(controller)) {}

bool Reconciler::ContainersAlive(const std::string& uid) const {
  return containers_alive_ && containers_alive_(uid);
}

void Reconciler::Reconcile(const DesiredPods& desired) {
  Wanted wanted;
  for (const auto& [uid, dp] : desired) {
    for (const auto& [key, v] : dp.volumes) {
      wanted.volumes.insert(key);
      if (v.fs_resize) wanted.resizes.insert(v.unique_name);
      if (v.device_mount) wanted.devices.insert(v.unique_name);
      if (v.attach) wanted.attachments.insert(v.unique_name);
    }
  }
  std::optional<ControllerAttachments> ctl;
  if (controller_) ctl = controller_();
  UnmountVolumes(desired, wanted);
  UnmountDevices(wanted);
  DetachVolumes(wanted, ctl);
  ForgetBackoff(wanted);
  MountOrAttachVolumes(desired, ctl);
}

void Reconciler::UnmountVolumes(const DesiredPods& desired, const Wanted& wanted) {
  std::vector<std::pair<std::string, ActualVolume>> unwanted;
  actual_.ForEachVolume([&](const std::string& key, const ActualVolume& a) {
    if (wanted.volumes.count(key)) return;
    // A pod that still exists keeps what it has while one of its volumes cannot be resolved
    // for a moment (a claim or volume missing from a cache): a pod's volumes only change when
    // it goes.
    auto pod = desired.find(a.pod_uid);
    if (pod != desired.end() && !pod->second.unresolved.empty()) return;
    // Containers still running (of a pod already gone from the API) keep their volumes.
    if (ContainersAlive(a.pod_uid)) return;
    unwanted.emplace_back(key, a);
  });
  for (const auto& [key, a] : unwanted) operations_.TearDown(key, a);
}

void Reconciler::UnmountDevices(const Wanted& wanted) {
  std::vector<std::pair<std::string, ActualDevice>> unused;
  actual_.ForEachDevice([&](const std::string& name, const ActualDevice& d) {
    if (!wanted.devices.count(name)) unused.emplace_back(name, d);
  });
  for (auto& [name, d] : unused) {
    if (actual_.VolumeInUse(name)) continue;
    // Going away: no pod binds from it from now on (a new user waits for it to be mounted
    // again).
    actual_.MarkDeviceUncertain(name);
    d.state = MountState::kUncertain;
    operations_.UnmountDevice(name, d);
  }
}

void Reconciler::DetachVolumes(const Wanted& wanted,
                               const std::optional<ControllerAttachments>& ctl) {
  std::vector<std::pair<std::string, ActualAttachment>> unused;
  actual_.ForEachAttachment([&](const std::string& name, const ActualAttachment& a) {
    if (!wanted.attachments.count(name)) unused.emplace_back(name, a);
  });
  for (auto& [name, a] : unused) {
    if (actual_.Device(name) || operations_.IsPending(DeviceOperationKey(name)) ||
        actual_.VolumeInUse(name)) {
      continue;
    }
    if (ctl) {
      operations_.ForgetAttachment(name, a);
      continue;
    }
    actual_.MarkAttachUncertain(name);  // going away: a new user attaches it again
    a.certain = false;
    operations_.Detach(name, a);
  }
}

void Reconciler::ForgetBackoff(const Wanted& wanted) {
  // Backoff is kept only for operations that may still run.
  std::set<std::string> keep = wanted.volumes;
  actual_.ForEachVolume([&](const std::string& key, const ActualVolume&) { keep.insert(key); });
  actual_.ForEachDevice(
      [&](const std::string& name, const ActualDevice&) { keep.insert(DeviceOperationKey(name)); });
  actual_.ForEachAttachment([&](const std::string& name, const ActualAttachment&) {
    keep.insert(AttachOperationKey(name));
  });
  for (const auto& name : wanted.devices) keep.insert(DeviceOperationKey(name));
  for (const auto& name : wanted.attachments) keep.insert(AttachOperationKey(name));
  for (const auto& name : wanted.resizes) keep.insert(ResizeOperationKey(name));
  actual_.ForgetResizesExcept(wanted.resizes);
  operations_.ForgetBackoffExcept(keep);
}

void Reconciler::MountOrAttachVolumes(const DesiredPods& desired,
                                      const std::optional<ControllerAttachments>& ctl) {
  for (const auto& [uid, dp] : desired) {
    for (const auto& [key, v] : dp.volumes) MountOrAttach(key, dp, v, ctl);
  }
}

void Reconciler::MountOrAttach(const std::string& key, const DesiredPod& dp, const DesiredVolume& v,
                               const std::optional<ControllerAttachments>& ctl) {
  if (v.attach && (!actual_.Attached(v.unique_name) ||
                   operations_.IsPending(AttachOperationKey(v.unique_name)))) {
    if (!ctl) {
      operations_.Attach(dp, v);
    } else if (auto it = ctl->attached.find(v.unique_name); it != ctl->attached.end()) {
      operations_.VerifyAttached(dp, v, it->second);
    }
    // OBSERVATION: otherwise the controller has not attached it yet; a change of the node's
    // status brings the next pass.
    return;
  }
  if (v.device_mount && (!actual_.DeviceMounted(v.unique_name) ||
                         operations_.IsPending(DeviceOperationKey(v.unique_name)))) {
    if (ctl && v.attach && !ctl->in_use.count(v.unique_name)) return;  // not yet reported in use
    auto at = actual_.Attachment(v.unique_name);
    operations_.MountDevice(dp, v, at ? at->device_path : std::string());
    return;
  }
  if (!actual_.VolumeMountedAs(key, v.content_version)) {
    operations_.SetUp(key, dp, v);
  } else if (v.fs_resize) {
    ExpandVolume(key, dp, v);
  }
}

void Reconciler::ExpandVolume(const std::string& key, const DesiredPod& dp,
                              const DesiredVolume& v) {
  const int64_t new_size = v.fs_resize->new_size.Value();
  if (auto grown = actual_.ResizedTo(v.unique_name); grown && *grown >= new_size) return;
  volume::NodeExpandOptions o;
  if (auto at = actual_.Attachment(v.unique_name)) o.device_path = at->device_path;
  if (auto d = actual_.Device(v.unique_name)) {
    o.device_mount_path = d->mount_path;
  } else if (auto a = actual_.Volume(key)) {
    o.device_mount_path = a->path;
  }
  o.new_size = new_size;
  o.old_size = v.fs_resize->old_size;
  operations_.NodeExpand(dp, v, std::move(o));
}

void Reconciler::MarkDrifted(const std::set<std::string>& mount_points) {
  std::vector<std::pair<std::string, ActualVolume>> gone;
  actual_.ForEachVolume([&](const std::string& key, const ActualVolume& a) {
    if (a.state != MountState::kMounted || a.path.empty()) return;
    std::error_code ec;
    const bool there = a.mount_point
                           ? mount_points.count(a.path) > 0
                           : std::filesystem::exists(std::filesystem::symlink_status(a.path, ec));
    if (!there) gone.emplace_back(key, a);
  });
  for (const auto& [key, a] : gone) {
    log::Warn("volume " + a.dir_name + " of pod " + a.pod_uid + " is no longer " +
              (a.mount_point ? "mounted at " : "at ") + a.path + "; setting it up again");
    actual_.MarkVolumeUncertain(key);
  }
  std::vector<std::pair<std::string, ActualDevice>> lost;
  actual_.ForEachDevice([&](const std::string& name, const ActualDevice& d) {
    if (d.state == MountState::kMounted && d.mount_point && !mount_points.count(d.mount_path)) {
      lost.emplace_back(name, d);
    }
  });
  for (const auto& [name, d] : lost) {
    log::Warn("device of volume " + name + " is no longer mounted at " + d.mount_path +
              "; mounting it again");
    actual_.MarkDeviceUncertain(name);
  }
}

}  // namespace kvol::node::volumemanager
