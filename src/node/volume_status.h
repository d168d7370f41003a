// The agent's status writer for volumes: what the volume manager reports becomes the pods'
// status and events, and a node expansion's result becomes the claim's capacity.
//
// Pods with volumes being set up get phase Pending, containers waiting with ContainerCreating,
// and condition kvol.io/VolumesReady: True once every volume is set up, which tells the pod
// runtime it may start containers. (SubPaths are resolved by the runtime as each container
// starts, as kubelet does: an init container may create what an app container's subPath
// names.)
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
  VolumeStatusWriter(client::Client& client, client::EventSink events, const os::Clock& clock,
                     VolumeStatusOptions options);

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
    bool ready_written = false;
    bool status_written = false;
    bool awaiting_mounts = false;  // some volume is not set up: the timeout event is due
    std::optional<os::MonoTime> retry_status_at;  // after a failed status write
  };
  void ReportPod(const volumemanager::PodVolumesState& state, PodReport& r, os::MonoTime now);
  Status WritePodStatus(const api::Pod& pod, bool ready, const std::string& message);
  void PodEvent(const api::Pod& pod, std::string_view type, std::string_view reason,
                std::string message);

  client::Client& client_;
  const client::EventSink events_;
  const os::Clock& clock_;
  const VolumeStatusOptions options_;
  std::map<std::string, PodReport> reports_;  // by pod uid
};

}  // namespace kvol::node
