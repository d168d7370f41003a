// Volume usage and health on the node, as kubelet's volume stats calculator gathers them: each
// period, every volume set up for a pod is asked about, through its plugin when the plugin
// reports stats (the csi plugin, with NodeGetVolumeStats), else measured at its path
// (volume_usage.h). A volume whose condition turns
// abnormal gets a Warning event on its pod, VolumeConditionAbnormal "Volume <name>: <message>",
// once per change of message while it stays abnormal. The latest figures are kept for whoever
// reports them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/event_recorder.h"
#include "node/volumemanager/volume_manager.h"
#include "os/clock.h"
#include "volume/plugin.h"

namespace kvol::node {

class VolumeHealthMonitor {
 public:
  // `volumes`: the volumes set up for pods (VolumeManager::MountedPodVolumes).
  using Volumes = std::function<std::vector<volumemanager::MountedPodVolume>()>;
  // The usage of a filesystem volume at a path, for those whose plugin reports none; none are
  // measured when empty.
  using PathStats = std::function<StatusOr<volume::VolumeStats>(const std::string& path)>;
  VolumeHealthMonitor(volume::PluginManager& plugins, Volumes volumes, client::EventSink events,
                      const os::Clock& clock, std::chrono::milliseconds period,
                      PathStats path_stats = {});
  ~VolumeHealthMonitor();
  VolumeHealthMonitor(const VolumeHealthMonitor&) = delete;
  VolumeHealthMonitor& operator=(const VolumeHealthMonitor&) = delete;

  // Gathers every period until Stop.
  void Start();
  void Stop();
  // One pass: what each period does.
  void CollectOnce();
  // The latest figures of each volume, by "<pod uid>/<volume name in the pod>".
  std::map<std::string, volume::VolumeStats> Latest() const;
  // The latest figures of each claim mounted (once however many pods use it), by namespace and
  // claim name.
  std::map<std::pair<std::string, std::string>, volume::VolumeStats> LatestByClaim() const;

 private:
  void Loop();

  volume::PluginManager& plugins_;
  const Volumes volumes_;
  const client::EventSink events_;
  const os::Clock& clock_;
  const std::chrono::milliseconds period_;
  const PathStats path_stats_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                              // guarded by mu_
  std::map<std::string, volume::VolumeStats> latest_;  // guarded by mu_
  std::map<std::pair<std::string, std::string>, volume::VolumeStats> by_claim_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace kvol::node
