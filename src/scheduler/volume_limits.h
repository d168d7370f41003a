// NodeVolumeLimits for CSI drivers (Kubernetes' CSILimits filter): a node whose CSINode gives a
// driver an allocatable count takes no pod that would bring that driver's volumes on the node
// past the count. A volume counts once however many pods use it; the volumes of a claim not yet
// bound count against its class's provisioner (one per claim); pods that finished do not count.
#pragma once

#include <string>
#include <string_view>

#include "api/core.h"
#include "scheduler/cache.h"

namespace kvol::scheduler {

inline constexpr std::string_view kReasonMaxVolumeCount = "node(s) exceed max volume count";

// The reason `node` cannot take `pod`'s CSI volumes; empty when it can.
std::string FilterVolumeLimits(const api::Pod& pod, const api::Node& node, const Cache& cache);

}  // namespace kvol::scheduler
