// The PersistentVolume controller's metrics, with kube-controller-manager's names, read from
// its caches when scraped:
//   pv_collector_bound_pv_count{storage_class}, pv_collector_unbound_pv_count{storage_class}
//   pv_collector_bound_pvc_count{namespace,storage_class},
//   pv_collector_unbound_pvc_count{namespace,storage_class}
//   pv_collector_total_pv_count{plugin_name,volume_mode}
// A volume or claim counts as bound when its phase is Bound.
#pragma once

#include <memory>
#include <vector>

#include "api/core.h"
#include "metrics/metrics.h"

namespace kvol::controller::pv {

using VolumeList = std::vector<std::shared_ptr<const api::PersistentVolume>>;
using ClaimList = std::vector<std::shared_ptr<const api::PersistentVolumeClaim>>;

// The families for these volumes and claims.
std::vector<prometheus::MetricFamily> CollectPvMetrics(const VolumeList& volumes,
                                                       const ClaimList& claims);

}  // namespace kvol::controller::pv
