// The attach/detach controller's metrics.
#include "controller/attachdetach/metrics.h"

#include "controller/attachdetach/attacher.h"

namespace kvol::controller::attachdetach {

PluginCounts CountDesired(const DesiredState& desired) {
  PluginCounts counts;
  for (const auto& [node, n] : desired) {
    for (const auto& [unique, v] : n.volumes) counts[std::string(v.attacher->PluginName())]++;
  }
  return counts;
}

PluginCounts CountActual(const std::map<std::string, ActualVolume>& actual) {
  PluginCounts counts;
  for (const auto& [unique, v] : actual) counts[v.plugin] += static_cast<int>(v.nodes.size());
  return counts;
}

prometheus::MetricFamily TotalVolumes(const PluginCounts& desired, const PluginCounts& actual) {
  std::map<metrics::Labels, double> values;
  for (const auto& [plugin, n] : desired) {
    values[{{"plugin_name", plugin}, {"state", "desired_state_of_world"}}] = n;
  }
  for (const auto& [plugin, n] : actual) {
    values[{{"plugin_name", plugin}, {"state", "actual_state_of_world"}}] = n;
  }
  return metrics::GaugeFamily("attachdetach_controller_total_volumes",
                              "Number of volumes in A/D Controller", values);
}

}  // namespace kvol::controller::attachdetach
