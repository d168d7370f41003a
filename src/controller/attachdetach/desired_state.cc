#include "controller/attachdetach/desired_state.h"

#include <algorithm>

#include "api/volume_sources.h"
#include "controller/attachdetach/attacher.h"

namespace kvol::controller::attachdetach {
namespace {

// The pod's volume as a Spec: the PersistentVolume its claim is bound to, or the inline
// source; nullopt while the claim is not bound to a volume in the cache.
std::optional<volume::Spec> Resolve(const api::Pod& pod, const api::Volume& v,
                                    const PopulateSources& sources) {
  volume::Spec spec;
  spec.volume = v;
  const auto claim_name = api::ClaimNameOf(pod, v);
  if (!claim_name) return spec;
  auto claim = sources.claim(pod.metadata.namespace_, *claim_name);
  if (!claim || claim->status.phase != "Bound" || claim->spec.volume_name.empty()) {
    return std::nullopt;
  }
  if (v.ephemeral && api::EphemeralClaimNotForPod(pod, *claim)) return std::nullopt;
  auto pv = sources.volume(claim->spec.volume_name);
  if (!pv || !pv->spec.claim_ref || pv->spec.claim_ref->uid != claim->metadata.uid) {
    return std::nullopt;
  }
  spec.pv = *pv;
  spec.read_only = v.persistent_volume_claim && v.persistent_volume_claim->read_only;
  return spec;
}

}  // namespace

bool PodTerminated(const api::Pod& pod) {
  if (pod.status.phase == "Succeeded" || pod.status.phase == "Failed") return true;
  if (!pod.metadata.deletion_timestamp) return false;
  return std::none_of(pod.status.container_statuses.begin(), pod.status.container_statuses.end(),
                      [](const api::ContainerStatus& c) { return c.state.running.has_value(); });
}

bool MultiAttachAllowed(const volume::Spec& spec) {
  // Only a PersistentVolume says for certain; anything else is left to the attacher to refuse.
  if (!spec.pv) return true;
  const auto& modes = spec.pv->spec.access_modes;
  if (modes.empty()) return true;
  return std::any_of(modes.begin(), modes.end(), [](const std::string& m) {
    return m == "ReadWriteMany" || m == "ReadOnlyMany";
  });
}

DesiredState Populate(const PopulateSources& sources) {
  DesiredState out;
  for (const auto& pod : sources.pods) {
    const std::string& node = pod->spec.node_name;
    if (node.empty() || !sources.managed(node) || PodTerminated(*pod)) continue;
    const PodRef ref{pod->metadata.namespace_, pod->metadata.name, pod->metadata.uid};
    for (const auto& v : pod->spec.volumes) {
      auto spec = Resolve(*pod, v, sources);
      if (!spec) continue;
      Attacher* attacher = sources.attacher_for(*spec);
      if (!attacher) continue;
      const std::string unique = volume::UniqueVolumeName(attacher->PluginName(), spec->Name());
      auto& node_volumes = out[node].volumes;
      auto [it, added] = node_volumes.try_emplace(unique);
      VolumeToAttach& want = it->second;
      if (added) {
        want.unique_name = unique;
        want.attacher = attacher;
        want.multi_attach = MultiAttachAllowed(*spec);
        want.spec = std::move(*spec);
      }
      want.pods.push_back(ref);
    }
  }
  for (auto& [node, n] : out) {
    for (auto& [name, v] : n.volumes) std::sort(v.pods.begin(), v.pods.end());
  }
  return out;
}

}  // namespace kvol::controller::attachdetach
