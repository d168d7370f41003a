// The in-tree volume plugin interface, as the node agent's volume manager uses it: a plugin
// recognises a volume source and makes a mounter (SetUp) or unmounter (TearDown) for one pod's
// volume. Capabilities some plugins add are separate interfaces: device mount, block volumes,
// attach, expand (here) and provision/delete (provisioner.h). Plugins reach the OS only through
// the Host's Mounter and Exec.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "api/authentication.h"
#include "api/core.h"
#include "api/storage.h"
#include "base/status.h"
#include "os/clock.h"
#include "os/exec.h"
#include "os/mounter.h"
#include "volume/provisioner.h"

namespace kvol::volume {

namespace plugins {
class CsiDrivers;
}

// One volume of one pod: an inline pod volume, or the PersistentVolume a claim is bound to.
// Owns copies, so an operation may outlive the objects it was made from.
struct Spec {
  api::Volume volume;                       // the pod's entry in spec.volumes
  std::optional<api::PersistentVolume> pv;  // set for persistentVolumeClaim volumes
  bool read_only = false;                   // the claim's readOnly, for PV volumes

  // The directory name under the plugin's folder: the PV's name for PV volumes (as kubelet
  // does), the pod's volume name otherwise.
  const std::string& Name() const { return pv ? pv->metadata.name : volume.name; }
};

// "<plugin name>/<spec.Name()>": the same volume in every pod of a node, as the node agent
// reports it in the node's status.volumesInUse and the attach/detach controller in
// status.volumesAttached.
std::string UniqueVolumeName(std::string_view plugin, std::string_view volume_name);

// What plugins need from the agent that runs them. Implementations are thread-safe.
class Host {
 public:
  virtual ~Host() = default;
  // <root>/pods/<uid>/volumes/<escaped plugin name>/<volume name>.
  virtual std::string PodVolumeDir(std::string_view pod_uid, std::string_view plugin_name,
                                   std::string_view volume_name) const = 0;
  // <root>/pods/<uid>/volumeDevices/<escaped plugin name>/<volume name>: where a block
  // volume's device is made available to the pod.
  virtual std::string PodDeviceDir(std::string_view pod_uid, std::string_view plugin_name,
                                   std::string_view volume_name) const = 0;
  // <root>/plugins/<plugin name>: where a plugin keeps node-wide state, such as the global
  // mounts of devices (".../kubernetes.io/local-volume/mounts/<volume>").
  virtual std::string PluginDir(std::string_view plugin_name) const = 0;
  virtual os::Mounter& mounter() = 0;
  virtual os::Exec& exec() = 0;
  virtual const os::Clock& clock() const = 0;
  virtual std::string NodeName() const = 0;
  // The current object; NotFound when it does not exist, Unavailable when it cannot be read.
  virtual StatusOr<api::ConfigMap> GetConfigMap(std::string_view ns, std::string_view name) = 0;
  virtual StatusOr<api::Secret> GetSecret(std::string_view ns, std::string_view name) = 0;
  // The node's allocatable resources: what downwardAPI reports for a limit a container does not
  // set.
  virtual api::ResourceList NodeAllocatable() const = 0;

  // A token of the pod's service account, bound to the pod, for `audience` (the API server's
  // own when empty), asked for `expiration_seconds` (the server's default when unset), with
  // when it expires: the one given before while it is fresh,
  // a new one once it is 80% through its life or a day old, as kubelet's token manager.
  virtual StatusOr<api::authentication::TokenRequestStatus> ServiceAccountToken(
      const api::Pod& pod, std::string_view audience, std::optional<int64_t> expiration_seconds) {
    return UnimplementedError("this host gets no service account tokens");
  }

  // What the csi plugin needs. The CSI drivers registered on this node; nullptr where none can
  // be.
  virtual plugins::CsiDrivers* CsiDrivers() { return nullptr; }
  // The CSIDriver object of that name: NotFound when there is none.
  virtual StatusOr<api::CSIDriver> GetCSIDriver(std::string_view name) {
    return NotFoundError("csidriver \"" + std::string(name) + "\" not found");
  }
  // VolumeAttachments: NotFound when there is none of that name; Create answers the stored
  // object, AlreadyExists when there is one.
  virtual StatusOr<api::VolumeAttachment> GetVolumeAttachment(std::string_view name) {
    return UnimplementedError("this host reads no VolumeAttachments");
  }
  virtual StatusOr<api::VolumeAttachment> CreateVolumeAttachment(const api::VolumeAttachment& va) {
    return UnimplementedError("this host writes no VolumeAttachments");
  }
  virtual Status DeleteVolumeAttachment(std::string_view name) {
    return UnimplementedError("this host writes no VolumeAttachments");
  }
};

// Sets one volume up for one pod.
class Mounter {
 public:
  virtual ~Mounter() = default;
  // Where the volume is for the pod's containers.
  virtual std::string GetPath() const = 0;
  // Makes the volume ready at GetPath(). Idempotent: a second call after success does nothing
  // more than bring changed contents up to date (configMap, secret, downwardAPI, projected).
  // The error's message is what follows "MountVolume.SetUp failed for volume \"X\" : ".
  virtual Status SetUp() = 0;
  // Whether containers must see the volume read-only.
  virtual bool ReadOnly() const { return false; }
};

// Tears one volume down for one pod; made from the pod's uid and the volume's directory name
// alone, so that volumes whose pod is gone (or which were found on disk after a restart) can
// still be torn down.
class Unmounter {
 public:
  virtual ~Unmounter() = default;
  virtual std::string GetPath() const = 0;
  // Unmounts (if mounted) and removes the volume's directory. Idempotent: nothing there is
  // success. The pod's data in emptyDir volumes goes with it; other volumes' data is never
  // removed (a directory still mounted is an error, not a recursive delete).
  virtual Status TearDown() = 0;
};

class DeviceMountableVolumePlugin;
class BlockVolumePlugin;
class AttachableVolumePlugin;
class ExpandableVolumePlugin;
class NodeExpandableVolumePlugin;
class StatsVolumePlugin;

class VolumePlugin {
 public:
  virtual ~VolumePlugin() = default;
  // "kubernetes.io/empty-dir", ...; its escaped form ("kubernetes.io~empty-dir") names the
  // pod's directory for the plugin's volumes.
  virtual std::string_view Name() const = 0;
  virtual bool CanSupport(const Spec& spec) const = 0;
  // Whether SetUp runs again while the pod lives: to follow changes of the source (configMap,
  // secret, downwardAPI, projected), or at each resync when the source has no version to follow
  // (a CSI driver whose CSIDriver says requiresRepublish).
  virtual bool RequiresRemount(const Spec& spec) { return false; }
  // Errors are InvalidArgument for a spec the plugin cannot use.
  virtual StatusOr<std::unique_ptr<Mounter>> NewMounter(const Spec& spec, const api::Pod& pod) = 0;
  virtual StatusOr<std::unique_ptr<Unmounter>> NewUnmounter(std::string_view volume_name,
                                                            std::string_view pod_uid) = 0;
  // Capabilities beyond set-up and tear-down; nullptr when the plugin lacks them.
  virtual DeviceMountableVolumePlugin* AsDeviceMountable() { return nullptr; }
  virtual BlockVolumePlugin* AsBlock() { return nullptr; }
  virtual AttachableVolumePlugin* AsAttachable() { return nullptr; }
  virtual ExpandableVolumePlugin* AsExpandable() { return nullptr; }
  virtual NodeExpandableVolumePlugin* AsNodeExpandable() { return nullptr; }
  virtual StatsVolumePlugin* AsStats() { return nullptr; }
};

// Plugins whose volumes may be a device mounted once per node at a global path (formatted
// first when it has no filesystem), and bind-mounted from there into each pod that uses it.
// The volume manager mounts the device before any pod's SetUp and unmounts it after the last
// pod's TearDown.
class DeviceMountableVolumePlugin {
 public:
  virtual ~DeviceMountableVolumePlugin() = default;
  // Whether this volume needs a device mount (a local volume does when its path is a block
  // device and its volumeMode is Filesystem).
  virtual bool NeedsDeviceMount(const Spec& spec) = 0;
  // The global mount point: PluginDir(name)/mounts/<volume name>.
  virtual std::string GetDeviceMountPath(const Spec& spec) = 0;
  // Formats the device if it carries no filesystem (spec's fsType, ext4 by default; a device
  // with another filesystem or a partition table is never formatted) and mounts it at
  // GetDeviceMountPath. `device_path` is where attaching put the device (AttachableVolumePlugin),
  // "" for volumes that are not attached. Idempotent.
  virtual Status MountDevice(const Spec& spec, const std::string& device_path) = 0;
  // Unmounts a global mount point and removes it; nothing there is success.
  virtual Status UnmountDevice(const std::string& device_mount_path) = 0;

  // A global mount point found on disk, by the volume's Spec::Name().
  struct FoundDevice {
    std::string volume_name;
    std::string mount_path;
  };
  // The global mount points this plugin's devices have (or may have, after a crash half-way),
  // found on disk: what a restarted agent mounts again or unmounts.
  virtual std::vector<FoundDevice> FindDeviceMounts() = 0;
};

// The entries of `dir` as found devices, named by their file names: for plugins whose global
// mount points are <dir>/<volume name>. Nothing when `dir` does not exist.
std::vector<DeviceMountableVolumePlugin::FoundDevice> FoundDevicesUnder(const std::string& dir);

// Where an agent keeps things under its root directory, as kubelet lays them out. Hosts answer
// Host::PodVolumeDir and friends with these.
namespace layout {
// <root>/pods/<uid>
std::string PodDir(std::string_view root, std::string_view pod_uid);
// <root>/pods/<uid>/volumes/<escaped plugin>/<volume>
std::string PodVolumeDir(std::string_view root, std::string_view pod_uid, std::string_view plugin,
                         std::string_view volume);
// <root>/pods/<uid>/volumeDevices/<escaped plugin>/<volume>
std::string PodDeviceDir(std::string_view root, std::string_view pod_uid, std::string_view plugin,
                         std::string_view volume);
// <root>/plugins/<plugin>
std::string PluginDir(std::string_view root, std::string_view plugin);
}  // namespace layout

// "kubernetes.io/empty-dir" -> "kubernetes.io~empty-dir".
std::string EscapePluginName(std::string_view name);
std::string UnescapePluginName(std::string_view dir);

// The volume plugins of one process, registered explicitly at start-up: the node agent's
// plugins (each bound to the agent's Host) and the provisioners the PV controller runs.
// `kvol server` has one, shared by its agent and its controllers; `kvol agent` and `kvol
// controller-manager` each have their own. Thread-safe: a controller may look a provisioner up
// while an agent starting beside it registers its plugins.
class PluginManager {
 public:
  // AlreadyExists when a plugin of that name is registered.
  Status Register(std::unique_ptr<VolumePlugin> plugin);
  // The one plugin that supports `spec`: NotFound when none does ("no volume plugin matched"),
  // InvalidArgument when the spec names more than one source.
  StatusOr<VolumePlugin*> FindBySpec(const Spec& spec);
  // nullptr when no plugin has that name.
  VolumePlugin* FindByName(std::string_view name) const;
  std::vector<std::string> Names() const;
  // Plugins that appear while the process runs (FlexVolume drivers installed later): when no
  // plugin supports a spec, FindBySpec asks `prober` for new plugins, registers those whose names
  // are new, and looks again. The prober decides how often it really looks.
  using Prober = std::function<std::vector<std::unique_ptr<VolumePlugin>>()>;
  void SetProber(Prober prober);

  // The provision/delete capability, by the StorageClass provisioner name served.
  // AlreadyExists when one of that name is registered.
  Status RegisterProvisioner(std::unique_ptr<Provisioner> provisioner);
  // nullptr when none serves that name.
  Provisioner* FindProvisioner(std::string_view name) const;
  std::vector<std::string> ProvisionerNames() const;

 private:
  VolumePlugin* FindOneBySpec(const Spec& spec, Status* error) const;  // mu_ held

  mutable std::shared_mutex mu_;
  Prober prober_;
  std::vector<std::unique_ptr<VolumePlugin>> plugins_;
  std::vector<std::unique_ptr<Provisioner>> provisioners_;
};

// Plugins that can give a pod a raw block device (volumeMode Block) instead of a filesystem.
class BlockVolumePlugin {
 public:
  virtual ~BlockVolumePlugin() = default;
  // Makes the volume's device available at Host::PodDeviceDir (a symlink to the device, which
  // the pod runtime gives containers at their volumeDevices' devicePath). Idempotent. The error
  // says why the volume cannot be a block device.
  virtual Status MapPodDevice(const Spec& spec, std::string_view pod_uid) = 0;
  // Removes the pod's link; nothing there is success.
  virtual Status UnmapPodDevice(std::string_view volume_name, std::string_view pod_uid) = 0;
};

// Plugins whose volumes must be attached to the node (made to appear on it as a device) before
// the device is mounted (DeviceMountableVolumePlugin) and detached after it is unmounted. The
// node agent attaches the volumes of its own pods, as kubelet does when no controller manages
// the node's attachments.
class AttachableVolumePlugin {
 public:
  virtual ~AttachableVolumePlugin() = default;
  virtual bool NeedsAttach(const Spec& spec) = 0;
  // Attaches the volume to node `node_name`: the device's path on the node, "" when only
  // WaitForAttach can tell. Idempotent: attaching an attached volume succeeds.
  virtual StatusOr<std::string> Attach(const Spec& spec, const std::string& node_name) = 0;
  // Waits until the attached device is present on this node: its path.
  virtual StatusOr<std::string> WaitForAttach(const Spec& spec, const std::string& device_path) = 0;
  // Detaches the volume named `volume_name` (Spec::Name()) from the node. Idempotent.
  virtual Status Detach(const std::string& volume_name, const std::string& node_name) = 0;
};

// Plugins that can grow a PersistentVolume's storage: the expand controller's side.
class ExpandableVolumePlugin {
 public:
  virtual ~ExpandableVolumePlugin() = default;
  // Grows the volume from `old_size` to `new_size` bytes: the size it has now.
  virtual StatusOr<int64_t> ExpandVolumeDevice(const Spec& spec, int64_t new_size,
                                               int64_t old_size) = 0;
  // Whether the filesystem must then be grown on the node where the volume is mounted
  // (NodeExpandableVolumePlugin) before the claim has the new size.
  virtual bool RequiresFSResize(const Spec& spec) = 0;
};

struct NodeExpandOptions {
  std::string device_path;        // the attached device ("" when not attached)
  std::string device_mount_path;  // where the device is mounted for the node
  int64_t new_size = 0;           // bytes: the PersistentVolume's capacity now
  int64_t old_size = 0;           // bytes: the claim's capacity before
};

// Plugins that grow a volume's filesystem on the node once its storage has grown.
class NodeExpandableVolumePlugin {
 public:
  virtual ~NodeExpandableVolumePlugin() = default;
  // Grows the filesystem of a mounted volume. Idempotent: a filesystem already that size is
  // success.
  virtual Status NodeExpand(const Spec& spec, const NodeExpandOptions& options) = 0;
};

// A volume's usage and health, as its plugin reports them; each figure is absent when the
// plugin cannot tell.
struct VolumeStats {
  std::optional<int64_t> capacity_bytes;
  std::optional<int64_t> available_bytes;
  std::optional<int64_t> used_bytes;
  std::optional<int64_t> inodes;
  std::optional<int64_t> inodes_free;
  std::optional<int64_t> inodes_used;
  // The volume's condition (CSI's VOLUME_CONDITION), when the plugin reports one.
  std::optional<bool> abnormal;
  std::string message;
};

// Plugins that report the usage and health of a volume set up for a pod (kubelet's
// MetricsProvider).
class StatsVolumePlugin {
 public:
  virtual ~StatsVolumePlugin() = default;
  // Made from the pod's uid and the volume's directory name alone, as Unmounter is. Unimplemented
  // when this volume's driver reports nothing.
  virtual StatusOr<VolumeStats> GetVolumeStats(std::string_view volume_name,
                                               std::string_view pod_uid, bool block) = 0;
};

}  // namespace kvol::volume
