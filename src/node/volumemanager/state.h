// The volume manager's two views: the desired state of the world (every volume each pod on
// this node needs, from the populator) and the actual state (what is set up on disk, from
// finished operations and from reconstruction after a restart).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/core.h"
#include "os/clock.h"
#include "volume/plugin.h"

namespace kvol::node::volumemanager {

// "<pod uid>/<plugin name>/<volume dir name>": one volume of one pod, as both views name it.
std::string VolumeKey(std::string_view pod_uid, std::string_view plugin, std::string_view dir_name);
// "<plugin name>/<volume dir name>": the same volume in every pod (a device's name, and what
// the node reports in volumesInUse).
std::string UniqueVolumeName(std::string_view plugin, std::string_view dir_name);

struct DesiredVolume {
  std::string outer_name;   // the pod's name for it (spec.volumes[].name)
  std::string unique_name;  // "<plugin>/<spec.Name()>": the same volume in every pod
  volume::VolumePlugin* plugin = nullptr;
  volume::Spec spec;  // spec.Name() names its directory
  // For plugins that follow their sources (configMap, secret, downwardAPI, projected): what the
  // contents were computed from; a change means SetUp again. Empty for the others.
  std::string content_version;
  // Set when the volume must be attached to the node (AttachableVolumePlugin) first.
  bool attach = false;
  // Set when the plugin mounts this volume's device once per node before any pod's SetUp.
  bool device_mount = false;
  // Set for volumeMode Block: the device is mapped for the pod (BlockVolumePlugin), not
  // mounted.
  bool block = false;
  // Set when the claim's volume has grown and its filesystem is to grow on this node
  // (condition FileSystemResizePending, a NodeExpandableVolumePlugin): done once it is set up.
  struct FsResize {
    std::string claim_namespace, claim_name, claim_uid;
    api::Quantity new_size;  // the PersistentVolume's capacity
    int64_t old_size = 0;    // the claim's capacity, bytes
  };
  std::optional<FsResize> fs_resize;
};

struct DesiredPod {
  std::shared_ptr<const api::Pod> pod;
  std::map<std::string, DesiredVolume> volumes;  // by VolumeKey
  // Volumes that cannot be set up yet, with why ("error processing PVC default/c: PVC is not
  // bound", "no volume plugin matched"), by outer name.
  std::map<std::string, std::string> unresolved;
  // Some volume is of a kind no plugin serves (yet: a FlexVolume driver may be installed).
  bool missing_plugin = false;
};

enum class MountState {
  kMounted,    // SetUp succeeded
  kUncertain,  // SetUp timed out or was found on disk: may be half done; TearDown is safe
};

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
};

// A volume attached to this node (AttachableVolumePlugin), by unique name. Each is recorded
// in a file, <plugin dir>/attachments/<volume name> holding the device's path, written before
// Attach starts and removed once Detach succeeded: after a crash, the agent knows what it may
// have attached.
struct ActualAttachment {
  std::string plugin_name;
  std::string volume_name;  // Spec::Name(): what Detach is given
  std::string device_path;
  // False for an attachment found on disk at start or one that failed half-way: attached
  // again if wanted (Attach is idempotent), detached otherwise.
  bool certain = true;
};

}  // namespace kvol::node::volumemanager
