// The agent's status writer for volumes: what the volume manager reports becomes the pods'
// status and events, and a node expansion's result becomes the claim's capacity.
//
// Pods with volumes being set up get phase Pending, containers waiting with ContainerCreating,
// and condition kvol.io/VolumesReady: True once every volume is set up and every volumeMount's
// subPath resolves inside its volume, which tells the pod runtime it may start containers.
// What keeps a pod waiting is a FailedMount event in kubelet's words: a volume that cannot be
// resolved (once per reason), and "timed out waiting for the condition" after each mount
// timeout.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/event_recorder.h"
#include "node/volumemanager/volume_manager.h"
#include "os/clock.h"

namespace kvol::node {

struct VolumeStatusOptions {
  std::string host_ip;  // status.hostIP of the pods it writes
  // After this long without every volume ready, the pod gets kubelet's "Unable to attach or
  // mount volumes ... timed out waiting for the condition" event (again each period).
  std::chrono::milliseconds mount_timeout{123'000};
};

class VolumeStatusWriter {
 public:
  // `volumes(uid)`: the pod's volumes that are set up (VolumeManager::PodVolumes), read once
  // they all are, to resolve subPaths.
  using PodVolumes =
      std::function<std::map<std::string, volumemanager::PodVolume>(const std::string& uid)>;
  VolumeStatusWriter(client::Client& client, PodVolumes volumes, client::EventSink events,
                     const os::Clock& clock, VolumeStatusOptions options);

  // Writes what changed for `pods` (every pod the volume manager serves; a pod not among them
  // is forgotten) and gives their events. Returns when it is next due with nothing changing:
  // a mount timeout, or a status write to retry. Call from one thread.
  std::optional<os::MonoTime> Report(const std::vector<volumemanager::PodVolumesState>& pods);

  // The claim's capacity once its filesystem has grown on this node.
  Status FinishClaimResize(const volumemanager::DesiredVolume::FsResize& r);

 private:
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
  void ReportPod(const volumemanager::PodVolumesState& state, PodReport& r, os::MonoTime now);
  // Resolves (and creates) every container's volumeMount subPath inside its volume; what is
  // wrong, in kubelet's words, or "" when all are fine.
  std::string PrepareSubPaths(const api::Pod& pod);
  Status WritePodStatus(const api::Pod& pod, bool ready, const std::string& message);
  void PodEvent(const api::Pod& pod, std::string_view type, std::string_view reason,
                std::string message);

  client::Client& client_;
  const PodVolumes volumes_;
  const client::EventSink events_;
  const os::Clock& clock_;
  const VolumeStatusOptions options_;
  std::map<std::string, PodReport> reports_;  // by pod uid
};

}  // namespace kvol::node
