#include "scheduler/volume_limits.h"

#include <map>
#include <set>

#include "client/pod_claims.h"
#include "volume/binding/matching.h"

namespace kvol::scheduler {
namespace {

// The CSI volumes of the claims, by driver: a bound claim's volume by its handle; an unbound
// claim by "<namespace>-<name>" under its class's provisioner, as Kubernetes counts it.
std::map<std::string, std::set<std::string>> CsiVolumes(const std::vector<std::string>& claims,
                                                        const Cache& cache) {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& key : claims) {
    ClaimPtr claim = cache.Claim(key);
    if (!claim) continue;
    if (!claim->spec.volume_name.empty()) {
      VolumePtr pv = cache.Volume(claim->spec.volume_name);
      if (pv && pv->spec.csi) out[pv->spec.csi->driver].insert(pv->spec.csi->volume_handle);
      continue;
    }
    ClassPtr cls = cache.Class(volume::binding::ClaimClass(*claim));
    if (!cls || cls->provisioner.empty()) continue;
    out[cls->provisioner].insert(claim->metadata.namespace_ + "-" + claim->metadata.name);
  }
  return out;
}

}  // namespace

std::string FilterVolumeLimits(const api::Pod& pod, const api::Node& node, const Cache& cache) {
  const auto limits = cache.VolumeLimits(node.metadata.name);
  if (limits.empty()) return "";
  const auto wanted = CsiVolumes(client::ClaimKeysOfPod(pod), cache);
  if (wanted.empty()) return "";
  const auto there = CsiVolumes(cache.ClaimsOn(node.metadata.name), cache);
  for (const auto& [driver, handles] : wanted) {
    auto limit = limits.find(driver);
    if (limit == limits.end()) continue;
    auto on_node = there.find(driver);
    size_t count = on_node == there.end() ? 0 : on_node->second.size();
    for (const auto& h : handles) {
      if (on_node == there.end() || !on_node->second.count(h)) ++count;
    }
    if (count > static_cast<size_t>(limit->second)) return std::string(kReasonMaxVolumeCount);
  }
  return "";
}

}  // namespace kvol::scheduler
