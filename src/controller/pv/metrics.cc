// The PV controller's metrics.
#include "controller/pv/metrics.h"

#include <map>
#include <string>

#include "metrics/storage_operations.h"

namespace kvol::controller::pv {
namespace {

// The volume plugin of a volume's source, as kube-controller-manager names it.
std::string PluginOf(const api::PersistentVolume& v) {
  const auto& s = v.spec;
  if (s.csi) return metrics::CsiPluginName(s.csi->driver);
  if (s.host_path) return "kubernetes.io/host-path";
  if (s.local) return "kubernetes.io/local-volume";
  if (s.nfs) return "kubernetes.io/nfs";
  if (s.flex_volume) return "flexvolume-" + s.flex_volume->driver;
  return "";
}

using metrics::Labels;

}  // namespace

std::vector<prometheus::MetricFamily> CollectPvMetrics(const VolumeList& volumes,
                                                       const ClaimList& claims) {
  std::map<Labels, double> bound_pv, unbound_pv, bound_pvc, unbound_pvc, total_pv;
  for (const auto& v : volumes) {
    const Labels cls = {{"storage_class", v->spec.storage_class_name}};
    (v->status.phase == "Bound" ? bound_pv : unbound_pv)[cls]++;
    total_pv[{{"plugin_name", PluginOf(*v)},
              {"volume_mode", v->spec.volume_mode.value_or("Filesystem")}}]++;
  }
  for (const auto& c : claims) {
    const Labels l = {{"namespace", c->metadata.namespace_},
                      {"storage_class", c->spec.storage_class_name.value_or("")}};
    (c->status.phase == "Bound" ? bound_pvc : unbound_pvc)[l]++;
  }
  return {
      metrics::GaugeFamily("pv_collector_bound_pv_count",
                           "Gauge measuring number of persistent volume currently bound", bound_pv),
      metrics::GaugeFamily("pv_collector_unbound_pv_count",
                           "Gauge measuring number of persistent volume currently unbound",
                           unbound_pv),
      metrics::GaugeFamily("pv_collector_bound_pvc_count",
                           "Gauge measuring number of persistent volume claim currently bound",
                           bound_pvc),
      metrics::GaugeFamily("pv_collector_unbound_pvc_count",
                           "Gauge measuring number of persistent volume claim currently unbound",
                           unbound_pvc),
      metrics::GaugeFamily("pv_collector_total_pv_count",
                           "Gauge measuring total number of persistent volumes", total_pv),
  };
}

}  // namespace kvol::controller::pv
