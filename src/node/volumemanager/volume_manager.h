// The node agent's volume manager: makes every volume the pods on this node need exist under
// <root>/pods/<uid>/volumes/<plugin>/<name>, and tears down what no pod needs.
//
// One reconciler thread compares the desired state (populated from the agent's caches) with
// the actual state and starts operations through the OperationExecutor: unmounts first, then
// set-ups. It runs when something changes (Kick: a pod, claim, volume, ConfigMap or Secret
// event, or a finished operation), when a backoff or mount deadline passes, and at a slow
// resync, which also checks with one read of the mount table that what was set up is still
// there (and sets up again what drifted) and removes any pod directory no pod needs; with
// nothing changing it does no other work. Block volumes (volumeMode Block) are mapped for the
// pod instead of mounted. Attachable volumes are attached to the node first (as kubelet does
// when no controller manages the node's attachments) and detached after; devices a plugin
// mounts once per node are mounted before, and unmounted after, the pods that use them. On
// start it reconstructs the actual state from the pod directories, the device mounts and the
// attachment records, so a restart remounts nothing that is already right and removes only
// what no pod needs.
//
// A claim whose volume has grown (FileSystemResizePending) has its filesystem grown once the
// volume is set up (NodeExpandableVolumePlugin), and then the new capacity.
//
// Pods it serves get status: phase Pending and containers waiting with ContainerCreating
// while volumes are not ready, and condition kvol.io/VolumesReady (True once every volume is
// set up and every volumeMount's subPath resolves inside its volume), which tells the pod
// runtime it may start containers. Failures are events on the pod
// in kubelet's words.
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
#include "client/client.h"
#include "client/event_recorder.h"
#include "node/volumemanager/operation_executor.h"
#include "node/volumemanager/populator.h"
#include "node/volumemanager/state.h"
#include "os/clock.h"
#include "volume/plugin.h"

namespace kvol::node::volumemanager {

inline constexpr std::string_view kVolumesReady = "kvol.io/VolumesReady";

struct Options {
  std::string root_dir;  // <root>/pods/<uid>/volumes/...
  std::string host_ip;   // status.hostIP of the pods it serves
  std::chrono::milliseconds resync{60'000};
  // After this long without every volume ready, the pod gets kubelet's "Unable to attach or
  // mount volumes ... timed out waiting for the condition" event (again each period).
  std::chrono::milliseconds mount_timeout{123'000};
  // While a pod has a volume no plugin serves, how often to look again (plugins appear when a
  // FlexVolume driver is installed).
  std::chrono::milliseconds missing_plugin_retry{1'000};
  ExecutorOptions executor;
  // Called (from the reconciler) with the sorted unique names of the volumes in use whose
  // devices this node mounts, whenever that list changes: the node's status.volumesInUse.
  std::function<void(std::vector<std::string>)> on_volumes_in_use;
  // Called (from the reconciler) with the volumes attached to the node, sorted by name, whenever
  // that list changes: the node's status.volumesAttached.
  std::function<void(std::vector<api::AttachedVolume>)> on_volumes_attached;
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

// A pod volume as set up: where it is, and whether it is a block device mapped for the pod.
struct PodVolume {
  std::string path;
  bool block = false;
  // Containers must see it read-only whatever their volumeMount says: the plugin's answer
  // (configMap, secret, downwardAPI and projected always; a claim or source marked readOnly).
  bool read_only = false;
};

class VolumeManager {
 public:
  // `host`: the agent's, which its plugins in `plugins` are bound to.
  VolumeManager(client::Client& client, volume::Host& host, volume::PluginManager& plugins,
                Sources sources, client::EventSink events, const os::Clock& clock,
                Options options);
  ~VolumeManager();
  VolumeManager(const VolumeManager&) = delete;
  VolumeManager& operator=(const VolumeManager&) = delete;

  // Reconstructs the actual state from disk, then starts the reconciler. Call once the
  // sources are synced.
  Status Start();
  void Stop();
  // Something changed: reconcile soon. Thread-safe, cheap, never blocks on I/O.
  void Kick();

  // The desired volumes not yet set up, by pod key; for status and tests. Thread-safe.
  std::map<std::string, std::vector<std::string>> UnmountedVolumes() const;
  // Mounted volumes' keys (VolumeKey). Thread-safe.
  std::set<std::string> MountedVolumeKeys() const;
  // Unique names of the devices mounted for the node. Thread-safe.
  std::set<std::string> MountedDevices() const;
  // Unique names of the volumes attached to the node, with their devices. Thread-safe.
  std::map<std::string, std::string> AttachedVolumes() const;
  // The pod's volumes that are set up, by their name in the pod's spec. Thread-safe.
  std::map<std::string, PodVolume> PodVolumes(const std::string& uid) const;
  // True when nothing of the pod's volumes is set up, recorded or in flight. Thread-safe.
  bool PodVolumesTornDown(const std::string& uid) const;

 private:
  void Loop();
  void ReconcileOnce();
  // At each resync: volumes and devices that are no longer where SetUp put them (unmounted
  // behind the agent's back) become uncertain, so the reconciler sets them up again.
  void VerifyActualState();
  // At each resync too: every pod directory on disk is a candidate for removal, so one that
  // no event named (or whose removal was put off) still goes once no pod needs it.
  void AddPodDirsAsOrphanCandidates();
  void Reconstruct();
  // Starts set-ups and tear-downs; returns the pods' readiness to write.
  void StartOperations(const std::map<std::string, DesiredPod>& desired);
  void SetUp(const std::string& key, const DesiredPod& pod, const DesiredVolume& v);
  void TearDown(const std::string& key, const ActualVolume& v);
  void Attach(const DesiredPod& pod, const DesiredVolume& v);
  void Detach(const std::string& unique_name, const ActualAttachment& a);
  void MountDevice(const DesiredPod& pod, const DesiredVolume& v, const std::string& device_path);
  // Grows the filesystem of a set-up volume whose claim asks for it, then gives the claim its
  // new capacity.
  void NodeExpand(const DesiredPod& pod, const DesiredVolume& v, volume::NodeExpandOptions o);
  Status FinishClaimResize(const DesiredVolume::FsResize& r);
  void UnmountDevice(const std::string& unique_name, const ActualDevice& d);
  void RemoveOrphanedPodDirs(const std::map<std::string, DesiredPod>& desired);
  void ReportPods(const std::map<std::string, DesiredPod>& desired);
  Status WritePodStatus(const api::Pod& pod, bool ready, const std::string& message);
  // Resolves (and creates) every container's volumeMount subPath inside its volume; what is
  // wrong, in kubelet's words, or "" when all are fine.
  std::string PrepareSubPaths(const DesiredPod& pod);
  bool ContainersAlive(const std::string& uid) const;
  void PodEvent(const api::Pod& pod, std::string_view type, std::string_view reason,
                std::string message);

  // Constant after construction.
  client::Client& client_;
  volume::Host& host_;
  volume::PluginManager& plugins_;
  const Sources sources_;
  const client::EventSink events_;
  const os::Clock& clock_;
  const Options options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool kicked_ = false;                          // guarded by mu_
  bool stopping_ = false;                        // guarded by mu_
  std::map<std::string, ActualVolume> actual_;   // guarded by mu_, by VolumeKey
  std::map<std::string, ActualDevice> devices_;  // guarded by mu_, by unique name
  std::map<std::string, ActualAttachment> attachments_;  // guarded by mu_, by unique name
  // guarded by mu_, by unique name: the size each volume's filesystem was grown to
  std::map<std::string, int64_t> fs_resized_;
  std::map<std::string, DesiredPod> desired_;    // guarded by mu_, by pod uid (last populated)
  // guarded by mu_: pod uids whose directory may go once no pod needs it; a uid stays until
  // its directory is removed (or found to have mounts still, until the next resync).
  std::set<std::string> orphan_candidates_;

  // Reconciler thread only.
  struct PodReport {
    os::MonoTime next_timeout_event;
    std::string unresolved_reported;  // last "Unable to attach or mount" message for unresolved
    std::string subpath_reported;     // last subPath failure reported as an event
    bool ready_written = false;
    bool status_written = false;
    std::string message_written;   // the subPath failure in the written condition, if any
    bool awaiting_mounts = false;  // some volume is not set up: the timeout event is due
    std::optional<os::MonoTime> retry_status_at;  // after a failed status write
  };
  std::map<std::string, PodReport> reports_;  // by pod uid
  std::vector<std::string> volumes_in_use_;   // as last reported
  std::vector<api::AttachedVolume> volumes_attached_;  // as last reported

  std::unique_ptr<OperationExecutor> executor_;
  std::thread thread_;
};

}  // namespace kvol::node::volumemanager
