// The node's volume metrics, as kubelet's:
// - volume_manager_total_volumes{plugin_name,state}: the pod volumes of each plugin in the
//   desired and the actual state of the world;
// - the volume stats metrics, per claim mounted on the node, labelled namespace and
//   persistentvolumeclaim, from the latest figures the volume health monitor gathered:
//   kubelet_volume_stats_capacity_bytes, _available_bytes, _used_bytes, _inodes, _inodes_free,
//   _inodes_used, and kubelet_volume_stats_health_status_abnormal (1 when the volume's
//   condition is abnormal).
// A figure the volume's plugin does not report is left out.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "metrics/metrics.h"
#include "volume/plugin.h"

namespace kvol::node {

// volume_manager_total_volumes from {{plugin, state}, count}.
std::vector<prometheus::MetricFamily> VolumeManagerFamilies(
    const std::map<std::pair<std::string, std::string>, int>& counts);

// kubelet_volume_stats_* from each claim's figures, by {namespace, claim}.
std::vector<prometheus::MetricFamily> VolumeStatsFamilies(
    const std::map<std::pair<std::string, std::string>, volume::VolumeStats>& stats);

}  // namespace kvol::node
