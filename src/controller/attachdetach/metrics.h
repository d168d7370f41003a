// The attach/detach controller's metrics, with kube-controller-manager's name, read when scraped:
//   attachdetach_controller_total_volumes{plugin_name,state}
// state "desired_state_of_world" counts each volume once per node that wants it attached,
// "actual_state_of_world" once per node it is (or may be) attached to.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "controller/attachdetach/actual_state.h"
#include "controller/attachdetach/desired_state.h"
#include "metrics/metrics.h"

namespace kvol::controller::attachdetach {

// Volumes per plugin.
using PluginCounts = std::map<std::string, int>;

PluginCounts CountDesired(const DesiredState& desired);
PluginCounts CountActual(const std::map<std::string, ActualVolume>& actual);

prometheus::MetricFamily TotalVolumes(const PluginCounts& desired, const PluginCounts& actual);

}  // namespace kvol::controller::attachdetach
