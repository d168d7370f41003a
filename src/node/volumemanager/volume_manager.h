// The node agent's volume manager: makes every volume the pods on this node need exist under
// <root>/pods/<uid>/volumes/<plugin>/<name>, and tears down what no pod needs. Laid out as
// kubelet's volume manager:
//
//   populator.h               pod volumes -> the desired state, from the agent's caches
//   desired_state_of_world.h  what each pod needs
//   actual_state_of_world.h   what is set up; changed only by its Mark* transitions
//   reconciler.h              compares the two and starts operations
//   operation_generator.h     the operations: attach, mount device, set up, expand, tear down
//   operation_executor.h      one operation per volume at a time, with backoff
//   reconstruct.cc            the actual state rebuilt from disk after a restart
//
// This class is the wiring: one thread runs populate-and-reconcile when something changes
// (Kick: a pod, claim, volume, ConfigMap or Secret event, or a finished operation), when a
// backoff or a status deadline passes, and at a slow resync, which also checks with one read of
// the mount table that what was set up is still there (and sets up again what drifted) and
// removes any pod directory no pod needs; with nothing changing it does no other work.
//
// What it serves is read through its queries (the pod runtime's volumes: PodVolumes) and its
// Options callbacks: each pod's volumes for the agent's status writer after each pass, and the
// node's volumesInUse and volumesAttached.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/core.h"
#include "client/event_recorder.h"
#include "node/volumemanager/actual_state_of_world.h"
#include "node/volumemanager/desired_state_of_world.h"
#include "node/volumemanager/operation_generator.h"
#include "node/volumemanager/populator.h"
#include "node/volumemanager/reconciler.h"
#include "os/clock.h"
#include "volume/plugin.h"
#include "volume/util/operation_executor.h"

namespace kvol::node::volumemanager {

// A pod volume as set up: where it is, and whether it is a block device mapped for the pod.
struct PodVolume {
  std::string path;
  bool block = false;
  // Containers must see it read-only whatever their volumeMount says: the plugin's answer
  // (configMap, secret, downwardAPI and projected always; a claim or source marked readOnly).
  bool read_only = false;
};

// A volume set up for a pod: what the volume stats collector asks its plugin about.
struct MountedPodVolume {
  std::shared_ptr<const api::Pod> pod;
  std::string outer_name;  // its name in the pod's spec
  std::string plugin_name;
  std::string dir_name;  // Spec::Name(): the PV's name, or the pod's volume name
  bool block = false;
  std::string path;  // where it is set up ("" when reconstructed and not set up since)
};

// One pod's volumes as the status writer reports them. A volume found on disk after a restart
// counts as set up while its SetUp confirms it, so that a restart does not flap the pod's
// status.
struct PodVolumesState {
  std::shared_ptr<const api::Pod> pod;
  std::vector<std::string> unmounted;   // not set up, by name in the pod's spec, unresolved too
  std::vector<std::string> unattached;  // not attached yet, unresolved too
  std::map<std::string, std::string> unresolved;  // cannot be set up yet: name -> why
};

struct Options {
  std::string root_dir;  // <root>/pods/<uid>/volumes/...
  std::chrono::milliseconds resync{60'000};
  // While a pod has a volume no plugin serves, how often to look again (plugins appear when a
  // FlexVolume driver is installed).
  std::chrono::milliseconds missing_plugin_retry{1'000};
  ExecutorOptions executor;
  // Called (from the reconciler thread) after each pass with every pod it serves, by uid: the
  // agent's status writer. Returns when it wants the next pass with nothing changing.
  std::function<std::optional<os::MonoTime>(const std::vector<PodVolumesState>&)> on_reconciled;
  // Writes the claim's new capacity once its filesystem has grown on this node.
  std::function<Status(const DesiredVolume::FsResize&)> finish_resize;
  // Called (from the reconciler) with the sorted unique names of the volumes in use whose
  // devices this node mounts, whenever that list changes: the node's status.volumesInUse.
  std::function<void(std::vector<std::string>)> on_volumes_in_use;
  // Called (from the reconciler) with the volumes attached to the node, sorted by name, whenever
  // that list changes: the node's status.volumesAttached.
  std::function<void(std::vector<api::AttachedVolume>)> on_volumes_attached;
  // Set on a node whose attachments the attach/detach controller makes: the node's status as
  // the API server has it (reconciler.h). The agent then attaches and detaches nothing itself.
  std::function<ControllerAttachments()> controller_attachments;
  // Called (from the reconciler) once the last of a pod's volumes is torn down and its
  // directory removed: the pod runtime may now remove the pod.
  std::function<void()> on_pod_cleaned_up;
};

// Where the volume manager reads the cluster: the agent's caches.
struct Sources {
  // The pods bound to this node.
  std::function<std::vector<std::shared_ptr<const api::Pod>>()> pods;
  Lookups lookups;
  // Whether a container of the pod may still run (the pod runtime's answer; must not block).
  // Such a pod keeps its volumes even when it is being deleted, has finished or is gone.
  std::function<bool(const std::string& uid)> containers_alive;
};

class VolumeManager {
 public:
  // `host`: the agent's, which its plugins in `plugins` are bound to.
  VolumeManager(volume::Host& host, volume::PluginManager& plugins, Sources sources,
                client::EventSink events, const os::Clock& clock, Options options);
  ~VolumeManager();
  VolumeManager(const VolumeManager&) = delete;
  VolumeManager& operator=(const VolumeManager&) = delete;

  // Reconstructs the actual state from disk, then starts the reconciler. Call once the
  // sources are synced.
  Status Start();
  void Stop();
  // Something changed: reconcile soon. Thread-safe, cheap, never blocks on I/O.
  void Kick();

  // Mounted volumes' keys (VolumeKey). Thread-safe.
  std::set<std::string> MountedVolumeKeys() const;
  // Unique names of the devices mounted for the node. Thread-safe.
  std::set<std::string> MountedDevices() const;
  // Unique names of the volumes attached to the node, with their devices. Thread-safe.
  std::map<std::string, std::string> AttachedVolumes() const;
  // The pod's volumes that are set up, by their name in the pod's spec. Thread-safe.
  std::map<std::string, PodVolume> PodVolumes(const std::string& uid) const;
  // Every volume set up for a pod the node runs. Thread-safe.
  std::vector<MountedPodVolume> MountedPodVolumes() const;
  // How many pod volumes each plugin has in the desired state of the world and in the actual
  // one: {{plugin, "desired_state_of_world" | "actual_state_of_world"}, count}.
  std::map<std::pair<std::string, std::string>, int> VolumeCounts() const;
  // True when nothing of the pod's volumes is set up, recorded or in flight. Thread-safe.
  bool PodVolumesTornDown(const std::string& uid) const;

 private:
  void Loop();
  void ReconcileOnce();
  // At each resync: what drifted becomes uncertain, and every pod directory on disk becomes a
  // candidate for removal, so one that no event named (or whose removal was put off) still
  // goes once no pod needs it.
  void Resync();
  void AddPodDirsAsOrphanCandidates();
  void Reconstruct();
  void RemoveOrphanedPodDirs(const DesiredPods& desired);
  void ReportNodeVolumes(const DesiredPods& desired);
  std::vector<PodVolumesState> PodStates(const DesiredPods& desired) const;
  std::map<std::string, PodVolume> VolumesOf(const DesiredPod& dp) const;
  bool ContainersAlive(const std::string& uid) const;

  // Constant after construction.
  volume::Host& host_;
  volume::PluginManager& plugins_;
  const Sources sources_;
  const Options options_;
  const os::Clock& clock_;

  DesiredStateOfWorld desired_;
  ActualStateOfWorld actual_;
  std::unique_ptr<OperationExecutor> executor_;
  std::unique_ptr<OperationGenerator> generator_;
  std::unique_ptr<Reconciler> reconciler_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool kicked_ = false;    // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  // guarded by mu_: pod uids whose directory may go once no pod needs it; a uid stays until
  // its directory is removed (or found to have mounts still, until the next resync).
  std::set<std::string> orphan_candidates_;

  // Reconciler thread only.
  std::optional<os::MonoTime> status_due_;             // as on_reconciled last answered
  std::vector<std::string> volumes_in_use_;            // as last reported
  std::vector<api::AttachedVolume> volumes_attached_;  // as last reported
  uint64_t resyncs_ = 0;                               // resyncs so far

  std::thread thread_;
};

}  // namespace kvol::node::volumemanager
