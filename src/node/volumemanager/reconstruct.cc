// Reconstruction, as kubelet's reconstruct.go: after a restart the actual state of the world is
// rebuilt from the pods' directories on disk, the device mounts and the attachment records
// (Reconstruct), each found item marked uncertain; and directories of pods this node no longer
// runs are removed once nothing of theirs is mounted or recorded (the orphan sweep).
#include <algorithm>
#include <filesystem>

#include "base/log.h"
#include "node/volumemanager/volume_manager.h"
#include "os/files.h"
#include "volume/util/cleanup.h"

namespace kvol::node::volumemanager {
namespace fs = std::filesystem;

void VolumeManager::RemoveOrphanedPodDirs(const DesiredPods& desired) {
  std::vector<std::string> gone;
  {
    std::lock_guard lock(mu_);
    for (const std::string& uid : orphan_candidates_) {
      // A pod that needs its directory keeps it, and stays a candidate: when it goes there
      // may be nothing left to tear down that would name it again.
      if (desired.count(uid)) continue;
      // Nothing of the pod's may still be recorded or in flight (a set-up still mounting).
      const bool busy =
          actual_.PodHasVolumes(uid) || executor_->AnyPending(uid + "/") || ContainersAlive(uid);
      if (!busy) gone.push_back(uid);
    }
  }
  for (const auto& uid : gone) {
    const std::string dir = volume::layout::PodDir(options_.root_dir, uid);
    auto mounted = volume::util::HasMountsBelow(host_.mounter(), dir);
    if (!mounted.ok() || *mounted) {
      // Looked at again at the next resync.
      log::Warn("orphaned pod directory " + dir + " still has mounts; left in place");
    } else if (Status s = volume::util::RemoveAllOnOneDevice(dir); !s.ok()) {
      log::Warn("removing orphaned pod directory " + dir + ": " + s.message());
    }
    std::lock_guard lock(mu_);
    orphan_candidates_.erase(uid);
  }
  if (!gone.empty() && options_.on_pod_cleaned_up) options_.on_pod_cleaned_up();
}

void VolumeManager::AddPodDirsAsOrphanCandidates() {
  std::error_code ec;
  std::vector<std::string> uids;
  const fs::path pods = fs::path(options_.root_dir) / "pods";
  for (fs::directory_iterator p(pods, ec), end; !ec && p != end; p.increment(ec)) {
    uids.push_back(p->path().filename().string());
  }
  std::lock_guard lock(mu_);
  orphan_candidates_.insert(uids.begin(), uids.end());
}

void VolumeManager::Reconstruct() {
  std::error_code ec;
  const fs::path pods = fs::path(options_.root_dir) / "pods";
  int found = 0;
  // <pod>/<subdir>/<escaped plugin>/<volume>: one uncertain volume each, set up again if
  // wanted (idempotent) or torn down.
  auto scan = [&](const std::string& uid, const fs::path& subdir, bool block) {
    std::error_code ec2;
    for (fs::directory_iterator d(subdir, ec2), end; !ec2 && d != end; d.increment(ec2)) {
      const std::string plugin_name = volume::UnescapePluginName(d->path().filename().string());
      volume::VolumePlugin* plugin = plugins_.FindByName(plugin_name);
      if (!plugin || (block && !plugin->AsBlock())) {
        log::Warn("pod " + uid + ": volumes of unknown plugin " + plugin_name + " left in place");
        continue;
      }
      std::error_code ec3;
      for (fs::directory_iterator v(d->path(), ec3); !ec3 && v != end; v.increment(ec3)) {
        ActualVolume a;
        a.pod_uid = uid;
        a.plugin_name = plugin_name;
        a.dir_name = v->path().filename().string();
        a.reconstructed = true;
        a.block = block;
        const std::string key = VolumeKey(uid, plugin_name, a.dir_name);
        actual_.MarkVolumeUncertain(key, std::move(a));
        ++found;
      }
    }
  };
  for (fs::directory_iterator p(pods, ec), end; !ec && p != end; p.increment(ec)) {
    // Each directory also becomes a removal candidate, at the loop's first pass (a resync).
    const std::string uid = p->path().filename().string();
    scan(uid, p->path() / "volumeDevices", true);
    scan(uid, p->path() / "volumes", false);
  }
  // Devices mounted for the node, as each device-mountable plugin finds them.
  for (const auto& name : plugins_.Names()) {
    auto* dm = plugins_.FindByName(name)->AsDeviceMountable();
    if (!dm) continue;
    for (auto& d : dm->FindDeviceMounts()) {
      // Mounted again if wanted (idempotent), else unmounted.
      actual_.MarkDeviceUncertain(UniqueVolumeName(name, d.volume_name), name,
                                  std::move(d.mount_path));
      ++found;
    }
  }
  // Volumes attached to the node, by their records.
  for (const auto& name : plugins_.Names()) {
    if (!plugins_.FindByName(name)->AsAttachable()) continue;
    const fs::path records = fs::path(host_.PluginDir(name)) / "attachments";
    for (fs::directory_iterator r(records, ec), end; !ec && r != end; r.increment(ec)) {
      if (r->path().extension() == ".tmp") continue;
      const std::string volume_name = r->path().filename().string();
      std::string device;
      (void)os::ReadFile(r->path(), &device);  // gone meanwhile: no device known
      // Attached again if wanted (idempotent), else detached.
      actual_.MarkAttachUncertain(UniqueVolumeName(name, volume_name), name, volume_name, device);
      ++found;
    }
    ec.clear();
  }
  if (found > 0) log::Info("volume manager: found " + std::to_string(found) + " volume(s) on disk");
}

}  // namespace kvol::node::volumemanager
