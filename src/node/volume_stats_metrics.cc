// The node's volume metrics from the volume manager's counts and the monitor's figures.
#include "node/volume_stats_metrics.h"

#include <optional>

namespace kvol::node {

std::vector<prometheus::MetricFamily> VolumeStatsFamilies(
    const std::map<std::pair<std::string, std::string>, volume::VolumeStats>& stats) {
  using Field = std::optional<int64_t> volume::VolumeStats::*;
  struct Gauge {
    const char* name;
    const char* help;
    Field field;
  };
  static const Gauge kGauges[] = {
      {"kubelet_volume_stats_capacity_bytes", "Capacity in bytes of the volume",
       &volume::VolumeStats::capacity_bytes},
      {"kubelet_volume_stats_available_bytes", "Number of available bytes in the volume",
       &volume::VolumeStats::available_bytes},
      {"kubelet_volume_stats_used_bytes", "Number of used bytes in the volume",
       &volume::VolumeStats::used_bytes},
      {"kubelet_volume_stats_inodes", "Maximum number of inodes in the volume",
       &volume::VolumeStats::inodes},
      {"kubelet_volume_stats_inodes_free", "Number of free inodes in the volume",
       &volume::VolumeStats::inodes_free},
      {"kubelet_volume_stats_inodes_used", "Number of used inodes in the volume",
       &volume::VolumeStats::inodes_used},
  };
  auto labelled = [](const std::pair<std::string, std::string>& claim, double value) {
    prometheus::ClientMetric m;
    m.label = {{"namespace", claim.first}, {"persistentvolumeclaim", claim.second}};
    m.gauge.value = value;
    return m;
  };
  std::vector<prometheus::MetricFamily> out;
  for (const auto& g : kGauges) {
    prometheus::MetricFamily f{g.name, g.help, prometheus::MetricType::Gauge, {}};
    for (const auto& [claim, st] : stats) {
      if (const auto& v = st.*g.field) f.metric.push_back(labelled(claim, static_cast<double>(*v)));
    }
    if (!f.metric.empty()) out.push_back(std::move(f));
  }
  prometheus::MetricFamily health{"kubelet_volume_stats_health_status_abnormal",
                                  "Abnormal volume health status. The count is either 1 or 0. 1 "
                                  "indicates the volume is unhealthy, 0 indicates volume is "
                                  "healthy",
                                  prometheus::MetricType::Gauge,
                                  {}};
  for (const auto& [claim, st] : stats) {
    if (st.abnormal) health.metric.push_back(labelled(claim, *st.abnormal ? 1 : 0));
  }
  if (!health.metric.empty()) out.push_back(std::move(health));
  return out;
}

std::vector<prometheus::MetricFamily> VolumeManagerFamilies(
    const std::map<std::pair<std::string, std::string>, int>& counts) {
  prometheus::MetricFamily f{"volume_manager_total_volumes",
                             "Number of volumes in Volume Manager",
                             prometheus::MetricType::Gauge,
                             {}};
  for (const auto& [key, n] : counts) {
    prometheus::ClientMetric m;
    m.label = {{"plugin_name", key.first}, {"state", key.second}};
    m.gauge.value = n;
    f.metric.push_back(std::move(m));
  }
  return {f};
}

}  // namespace kvol::node
