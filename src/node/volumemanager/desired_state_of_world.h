// The desired state of the world: every volume each pod on this node needs, as the populator
// resolved it from the agent's caches at the reconciler's last pass.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "api/core.h"
#include "node/volumemanager/volume_names.h"
#include "volume/plugin.h"

namespace kvol::node::volumemanager {

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

// By pod uid.
using DesiredPods = std::map<std::string, DesiredPod>;

// Written by the reconciler thread at each pass, read by anyone. Thread-safe.
class DesiredStateOfWorld {
 public:
  // Replaces what every pod needs with the populator's latest answer.
  void Set(DesiredPods pods);
  // The pod's volumes as last populated; nullopt when the pod is not there.
  std::optional<DesiredPod> Pod(const std::string& uid) const;
  DesiredPods Pods() const;
  // Whether some pod has a volume no plugin serves yet.
  bool AnyMissingPlugin() const;

 private:
  mutable std::mutex mu_;
  DesiredPods pods_;  // guarded by mu_
};

}  // namespace kvol::node::volumemanager
