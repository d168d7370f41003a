// The PersistentVolume controller's collector, with kube-controller-manager's names, read from
// its caches when scraped:
//   pv_collector_bound_pv_count{storage_class}, pv_collector_unbound_pv_count{storage_class}
//   pv_collector_bound_pvc_count{namespace,storage_class},
//   pv_collector_unbound_pvc_count{namespace,storage_class}
//   pv_collector_total_pv_count{plugin_name,volume_mode}
// A volume or claim counts as bound when its phase is Bound.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "api/core.h"
#include "metrics/metrics.h"

namespace kvol::controller::pv {

using VolumeList = std::vector<std::shared_ptr<const api::PersistentVolume>>;
using ClaimList = std::vector<std::shared_ptr<const api::PersistentVolumeClaim>>;

// The families for these volumes and claims.
std::vector<prometheus::MetricFamily> CollectPvMetrics(const VolumeList& volumes,
                                                       const ClaimList& claims);

class PvCollector final : public prometheus::Collectable {
 public:
  using Lister = std::function<std::pair<VolumeList, ClaimList>()>;
  explicit PvCollector(Lister list) : list_(std::move(list)) {}
  std::vector<prometheus::MetricFamily> Collect() const override;
  // The caches are going: nothing more is read.
  void Detach();

 private:
  mutable std::mutex mu_;
  Lister list_;  // guarded by mu_
};

}  // namespace kvol::controller::pv
