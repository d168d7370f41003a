// The node's volume metrics, as kubelet's:
// - volume_manager_total_volumes{plugin_name,state}: the pod volumes of each plugin in the
//   desired and the actual state of the world;
// - the volume stats metrics, per claim mounted on the node, labelled namespace and
// persistentvolumeclaim, from the latest figures the volume health monitor gathered:
//   kubelet_volume_stats_capacity_bytes, _available_bytes, _used_bytes, _inodes, _inodes_free,
//   _inodes_used, and kubelet_volume_stats_health_status_abnormal (1 when the volume's
//   condition is abnormal).
// A figure the volume's plugin does not report is left out.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "metrics/metrics.h"
#include "node/volume_health.h"

namespace kvol::node {

class VolumeManagerMetrics final : public prometheus::Collectable {
 public:
  using Counts = std::function<std::map<std::pair<std::string, std::string>, int>()>;
  explicit VolumeManagerMetrics(Counts counts) : counts_(std::move(counts)) {}
  std::vector<prometheus::MetricFamily> Collect() const override;
  // The volume manager is going: nothing more is read from it.
  void Detach();

 private:
  mutable std::mutex mu_;
  Counts counts_;  // guarded by mu_
};

class VolumeStatsMetrics final : public prometheus::Collectable {
 public:
  explicit VolumeStatsMetrics(const VolumeHealthMonitor& monitor) : monitor_(&monitor) {}
  std::vector<prometheus::MetricFamily> Collect() const override;
  // The monitor is going: nothing more is read from it.
  void Detach();

 private:
  mutable std::mutex mu_;
  const VolumeHealthMonitor* monitor_;  // guarded by mu_
};

}  // namespace kvol::node
