// The actual state of the world: what is set up on this node. Pod volumes mounted (or mapped)
// for their pods, devices mounted once for the node, volumes attached to it, and the size each
// volume's filesystem was grown to. It changes only through its transitions, the Mark*
// methods, as kubelet's actual_state_of_world does: the operations mark what they did, the
// reconstruction marks what it found on disk, and the resync marks what drifted.
//
// Thread-safe: the reconciler reads it while operations finishing on the executor's threads
// mark it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "node/volumemanager/volume_names.h"

namespace kvol::node::volumemanager {

enum class MountState {
  kMounted,    // SetUp (MountDevice) succeeded
  kUncertain,  // timed out, found on disk, or going away: may be half done; TearDown is safe
};

// A pod volume, by VolumeKey.
struct ActualVolume {
  std::string pod_uid;
  std::string plugin_name;
  std::string dir_name;
  MountState state = MountState::kMounted;
  std::string content_version;  // as of the last SetUp
  bool block = false;           // mapped (volumeDevices/), not mounted (volumes/)
  std::string path;             // where SetUp put it ("" when reconstructed)
  bool mount_point = false;     // whether `path` was a mount point after SetUp
  bool read_only = false;       // containers see it read-only (Mounter::ReadOnly)
  // Found on disk at start and not set up since: counted as there for the pod's status (a
  // restart does not flap VolumesReady) while its idempotent SetUp confirms it.
  bool reconstructed = false;
};

// A device mounted once for the node (DeviceMountableVolumePlugin), by unique name.
struct ActualDevice {
  std::string plugin_name;
  std::string mount_path;
  MountState state = MountState::kMounted;
  // Whether mount_path is a mount point once mounted: a CSI driver may stage a block volume
  // without mounting anything there. Only mount points are checked against the mount table.
  bool mount_point = true;
};

// A volume attached to this node (AttachableVolumePlugin), by unique name. Each is recorded
// in a file, <plugin dir>/attachments/<volume name> holding the device's path, written before
// Attach starts and removed once Detach succeeded: after a crash, the agent knows what it may
// have attached.
struct ActualAttachment {
  std::string plugin_name;
  std::string volume_name;  // Spec::Name(): what Detach is given
  std::string device_path;
  // False for an attachment found on disk at start, one that failed half-way, or one going
  // away: attached again if wanted (Attach is idempotent), detached otherwise.
  bool certain = true;
};

class ActualStateOfWorld {
 public:
  // ---- Transitions ---------------------------------------------------------------------------

  // Pod volumes. MarkVolumeMounted records `v` as set up (no longer reconstructed);
  // MarkVolumeUncertain(key, v) records it as possibly half set up.
  void MarkVolumeMounted(const std::string& key, ActualVolume v);
  void MarkVolumeUncertain(const std::string& key, ActualVolume v);
  // A recorded volume only: false when there is none.
  bool MarkVolumeUncertain(const std::string& key);
  void MarkVolumeUnmounted(const std::string& key);

  // Devices mounted for the node.
  void MarkDeviceMounted(const std::string& name, std::string plugin, std::string mount_path,
                         bool mount_point = true);
  void MarkDeviceUncertain(const std::string& name, std::string plugin, std::string mount_path);
  // A recorded device only: false when there is none.
  bool MarkDeviceUncertain(const std::string& name);
  void MarkDeviceUnmounted(const std::string& name);

  // Attachments. An uncertain one with no device path keeps the path known before.
  void MarkAttached(const std::string& name, std::string plugin, std::string volume_name,
                    std::string device_path);
  void MarkAttachUncertain(const std::string& name, std::string plugin, std::string volume_name,
                           std::string device_path = "");
  // A recorded attachment only: false when there is none.
  bool MarkAttachUncertain(const std::string& name);
  void MarkDetached(const std::string& name);

  // Node expansion: the volume's filesystem was grown to `bytes`.
  void MarkResized(const std::string& name, int64_t bytes);
  // What was grown is forgotten once no claim asks for it.
  void ForgetResizesExcept(const std::set<std::string>& names);

  // ---- Queries -------------------------------------------------------------------------------

  std::optional<ActualVolume> Volume(const std::string& key) const;
  std::optional<ActualDevice> Device(const std::string& name) const;
  std::optional<ActualAttachment> Attachment(const std::string& name) const;
  // The size the volume's filesystem was grown to; nullopt when it was not.
  std::optional<int64_t> ResizedTo(const std::string& name) const;

  // Set up as asked: mounted (not uncertain) from contents of `content_version`.
  bool VolumeMountedAs(const std::string& key, std::string_view content_version) const;
  // There for its pod: mounted, or found on disk after a restart while SetUp confirms it (so
  // that a restart does not flap the pod's status).
  bool VolumeThereForPod(const std::string& key) const;
  bool DeviceMounted(const std::string& name) const;
  // Attached for certain; the device path is then in Attachment(name).
  bool Attached(const std::string& name) const;
  // Whether some pod volume is the volume `unique_name`.
  bool VolumeInUse(const std::string& unique_name) const;
  // Whether some volume of the pod is recorded.
  bool PodHasVolumes(const std::string& pod_uid) const;

  // Each recorded item, under the state's lock: `f` must not call back into the state.
  void ForEachVolume(const std::function<void(const std::string&, const ActualVolume&)>& f) const;
  void ForEachDevice(const std::function<void(const std::string&, const ActualDevice&)>& f) const;
  void ForEachAttachment(
      const std::function<void(const std::string&, const ActualAttachment&)>& f) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, ActualVolume> volumes_;          // guarded by mu_, by VolumeKey
  std::map<std::string, ActualDevice> devices_;          // guarded by mu_, by unique name
  std::map<std::string, ActualAttachment> attachments_;  // guarded by mu_, by unique name
  std::map<std::string, int64_t> resized_;               // guarded by mu_, by unique name
};

}  // namespace kvol::node::volumemanager
