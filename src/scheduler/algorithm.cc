#include "scheduler/algorithm.h"

#include <algorithm>
#include <map>
#include <set>

#include "api/node_selector.h"
#include "api/volume_sources.h"
#include "api/well_known.h"
#include "scheduler/volume_limits.h"

namespace kvol::scheduler {
namespace {

namespace binding = volume::binding;

bool IsDelayBinding(const api::PersistentVolumeClaim& claim, const Cache& cache) {
  const std::string cls = binding::ClaimClass(claim);
  if (cls.empty()) return false;
  ClassPtr c = cache.Class(cls);
  // A class that does not exist binds immediately (and so keeps the pod waiting), as in
  // Kubernetes.
  return c && c->volume_binding_mode.value_or("Immediate") == "WaitForFirstConsumer";
}

bool Tolerated(const api::Taint& taint, const std::vector<api::Toleration>& tolerations) {
  return std::any_of(tolerations.begin(), tolerations.end(),
                     [&](const api::Toleration& t) { return Tolerates(t, taint); });
}

// A pod whose containers ask for no CPU or memory and set no limit on them (QoS BestEffort).
bool BestEffort(const api::Pod& pod) {
  auto none = [](const api::Container& c) {
    for (const auto* list : {&c.resources.requests, &c.resources.limits}) {
      if (list->count("cpu") || list->count("memory")) return false;
    }
    return true;
  };
  return std::all_of(pod.spec.containers.begin(), pod.spec.containers.end(), none) &&
         std::all_of(pod.spec.init_containers.begin(), pod.spec.init_containers.end(), none);
}

// The node's taints, with the ones Kubernetes' node lifecycle controller adds for the conditions
// the node reports (TaintNodesByCondition): not ready or unreachable, and memory, disk or PID
// pressure. As Kubernetes' control plane gives every pod but a BestEffort one a toleration of
// memory pressure, such pods are not kept off for it.
std::vector<api::Taint> EffectiveTaints(const api::Node& node, const api::Pod& pod) {
  static const std::map<std::string, std::string, std::less<>> kPressureTaints = {
      {"MemoryPressure", "node.kubernetes.io/memory-pressure"},
      {"DiskPressure", "node.kubernetes.io/disk-pressure"},
      {"PIDPressure", "node.kubernetes.io/pid-pressure"}};
  std::vector<api::Taint> taints = node.spec.taints;
  auto add = [&](std::string key) {
    const bool present = std::any_of(taints.begin(), taints.end(), [&](const api::Taint& x) {
      return x.key == key && x.effect == "NoSchedule";
    });
    if (!present) taints.push_back({.key = std::move(key), .effect = "NoSchedule"});
  };
  for (const auto& c : node.status.conditions) {
    if (c.type == "Ready" && c.status != "True") {
      add(c.status == "False" ? "node.kubernetes.io/not-ready" : "node.kubernetes.io/unreachable");
    }
    auto pressure = kPressureTaints.find(c.type);
    if (pressure == kPressureTaints.end() || c.status != "True") continue;
    if (c.type == "MemoryPressure" && !BestEffort(pod)) continue;
    add(pressure->second);
  }
  return taints;
}

// The class's provisioner could make a volume for the claim on the node.
bool CanProvision(const api::PersistentVolumeClaim& claim, const api::Node& node,
                  const Cache& cache) {
  ClassPtr cls = cache.Class(binding::ClaimClass(claim));
  if (!cls || cls->provisioner.empty() || cls->provisioner == kNoProvisioner) return false;
  if (cls->allowed_topologies.empty()) return true;
  for (const auto& term : cls->allowed_topologies) {
    const bool all = std::all_of(
        term.match_label_expressions.begin(), term.match_label_expressions.end(),
        [&](const api::TopologySelectorLabelRequirement& r) {
          auto l = node.metadata.labels.find(r.key);
          return l != node.metadata.labels.end() &&
                 std::find(r.values.begin(), r.values.end(), l->second) != r.values.end();
        });
    if (all) return true;
  }
  return false;
}

// VolumeBinding's Filter.
std::vector<std::string> FilterVolumes(const PodClaims& claims, const api::Node& node, Cache& cache,
                                       VolumePlan* plan) {
  std::vector<std::string> reasons;
  bool bound_ok = true;
  for (const auto& claim : claims.bound) {
    VolumePtr v = cache.Volume(claim->spec.volume_name);
    if (!v) return {std::string(kReasonPVNotExist)};
    if (!api::PersistentVolumeFitsNode(v->spec, node)) bound_ok = false;
  }
  if (!bound_ok) reasons.emplace_back(kReasonVolumeNodeConflict);

  VolumePlan local;
  bool unbound_ok = true;
  bool enough_space = true;
  std::vector<std::string> reserved;
  for (const auto& claim : claims.delayed) {
    auto selected = claim->metadata.annotations.find(std::string(api::kAnnSelectedNode));
    if (selected != claim->metadata.annotations.end()) {
      // Already given to a node for provisioning: only that node will do.
      if (selected->second != node.metadata.name || !CanProvision(*claim, node, cache)) {
        unbound_ok = false;
        break;
      }
      local.provisions.push_back(claim);
      continue;
    }
    binding::MatchOptions mo{.delay_binding = true, .node = &node, .skip_reserved = true};
    auto match = cache.volumes().FindBestMatch(*claim, mo);
    if (match.ok() && *match) {
      // Another claim of this pod must not get the same volume.
      if (!(*match)->spec.claim_ref && cache.volumes().Reserve((*match)->metadata.name)) {
        reserved.push_back((*match)->metadata.name);
      }
      local.bindings.emplace_back(claim, *match);
      continue;
    }
    if (!match.ok() || !CanProvision(*claim, node, cache)) {
      unbound_ok = false;
      break;
    }
    ClassPtr cls = cache.Class(binding::ClaimClass(*claim));  // there: CanProvision
    if (!cache.capacities().HasEnoughCapacity(*claim, *cls, node)) {
      enough_space = false;
      break;
    }
    local.provisions.push_back(claim);
  }
  for (const auto& name : reserved) cache.volumes().Unreserve(name);
  if (!unbound_ok) reasons.emplace_back(kReasonBindConflict);
  if (!enough_space) reasons.emplace_back(kReasonNotEnoughSpace);
  if (reasons.empty() && plan) *plan = std::move(local);
  return reasons;
}

int PreferredWeight(const api::Pod& pod, const api::Node& node) {
  if (!pod.spec.affinity || !pod.spec.affinity->node_affinity) return 0;
  int sum = 0;
  for (const auto& t :
       pod.spec.affinity->node_affinity->preferred_during_scheduling_ignored_during_execution) {
    if (api::MatchNodeSelectorTerm(t.preference, node)) sum += t.weight;
  }
  return sum;
}

}  // namespace

bool Tolerates(const api::Toleration& t, const api::Taint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (!t.key.empty() && t.key != taint.key) return false;
  if (t.operator_.empty() || t.operator_ == "Equal") return t.value == taint.value;
  return t.operator_ == "Exists";
}

PodClaims ClassifyClaims(const api::Pod& pod, const Cache& cache) {
  PodClaims out;
  bool immediate = false;
  std::set<std::string> seen;  // a claim two volumes name counts once
  for (const auto& v : pod.spec.volumes) {
    const auto name = api::ClaimNameOf(pod, v);
    if (!name || !seen.insert(*name).second) continue;
    ClaimPtr claim = cache.Claim(pod.metadata.namespace_ + "/" + *name);
    if (!claim) {
      out.unresolvable = v.ephemeral ? "waiting for ephemeral volume controller to create the "
                                       "persistentvolumeclaim \"" + *name + "\""
                                     : "persistentvolumeclaim \"" + *name + "\" not found";
      return out;
    }
    if (v.ephemeral) {
      if (auto refused = api::EphemeralClaimNotForPod(pod, *claim)) {
        out.unresolvable = *refused;
        return out;
      }
    }
    if (claim->metadata.deletion_timestamp) {
      out.unresolvable = "persistentvolumeclaim \"" + *name + "\" is being deleted";
      return out;
    }
    if (!claim->spec.volume_name.empty()) {
      out.bound.push_back(claim);
    } else if (IsDelayBinding(*claim, cache)) {
      out.delayed.push_back(claim);
    } else {
      immediate = true;
    }
  }
  if (immediate) out.unresolvable = std::string(kUnboundImmediate);
  return out;
}

std::vector<std::string> FilterNode(const api::Pod& pod, const PodClaims& claims,
                                    const api::Node& node, Cache& cache, VolumePlan* plan) {
  // NodeUnschedulable.
  if (node.spec.unschedulable) {
    api::Taint t{.key = "node.kubernetes.io/unschedulable", .effect = "NoSchedule"};
    if (!Tolerated(t, pod.spec.tolerations)) return {std::string(kReasonUnschedulable)};
  }
  // TaintToleration.
  for (const auto& taint : EffectiveTaints(node, pod)) {
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
    if (!Tolerated(taint, pod.spec.tolerations)) {
      return {"node(s) had untolerated taint {" + taint.key + ": " + taint.value + "}"};
    }
  }
  // NodeAffinity.
  if (!api::PodSpecMatchesNode(pod.spec, node)) return {std::string(kReasonNodeAffinity)};
  // NodeVolumeLimits.
  if (std::string r = FilterVolumeLimits(pod, node, cache); !r.empty()) return {r};
  // VolumeBinding.
  return FilterVolumes(claims, node, cache, plan);
}

Decision Schedule(const api::Pod& pod, Cache& cache) {
  Decision d;
  const auto nodes = cache.Nodes();
  if (nodes.empty()) {
    d.message = std::string(kNoNodes);
    return d;
  }
  const std::string head = "0/" + std::to_string(nodes.size()) + " nodes are available:";
  PodClaims claims = ClassifyClaims(pod, cache);
  if (!claims.unresolvable.empty()) {
    d.message = head + " " + claims.unresolvable + ".";
    return d;
  }

  std::map<std::string, int> histogram;
  const api::Node* best = nullptr;
  int best_weight = 0, best_pods = 0;
  for (const auto& node : nodes) {
    VolumePlan plan;
    auto reasons = FilterNode(pod, claims, *node, cache, &plan);
    if (!reasons.empty()) {
      for (auto& r : reasons) ++histogram[r];
      continue;
    }
    const int weight = PreferredWeight(pod, *node);
    const int pods = cache.PodsOn(node->metadata.name);
    if (!best || weight > best_weight || (weight == best_weight && pods < best_pods)) {
      best = node.get();
      best_weight = weight;
      best_pods = pods;
      d.plan = std::move(plan);
    }
  }
  if (best) {
    d.node = best->metadata.name;
    return d;
  }
  // "N reason" strings, sorted as strings, as Kubernetes' FitError sorts them.
  std::vector<std::string> parts;
  for (const auto& [reason, count] : histogram)
    parts.push_back(std::to_string(count) + " " + reason);
  std::sort(parts.begin(), parts.end());
  d.message = head;
  for (size_t i = 0; i < parts.size(); ++i) d.message += (i ? ", " : " ") + parts[i];
  d.message += ".";
  return d;
}

}  // namespace kvol::scheduler
