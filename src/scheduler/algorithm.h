// Placing one pod, as Kubernetes' default scheduler profile does for what kvol models: the
// filters NodeUnschedulable, TaintToleration, NodeAffinity, NodeVolumeLimits (CSI drivers'
// per-node volume counts, volume_limits.h) and VolumeBinding run in that order
// on every node, the first that fails giving the node's reasons; among the nodes that pass,
// the one matching the most preferred node-affinity weight wins, then the one running the
// fewest pods, then the first by name.
//
// Volumes (VolumeBinding): a pod with an unbound claim of an Immediate class waits for the PV
// controller; a bound claim's volume must allow the node (its node affinity); an unbound
// WaitForFirstConsumer claim needs, on the node, either a free volume that matches it (the
// rules the PV controller binds by, from volume/binding/matching.h) or a class whose
// provisioner can make one there (not kubernetes.io/no-provisioner; allowedTopologies admit
// the node).
//
// A node that reports Ready=False or Ready=Unknown counts as tainted not-ready or unreachable
// (NoSchedule), as Kubernetes' node lifecycle controller taints it; a node that reports no
// Ready condition at all (an object with no agent yet) is schedulable.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/core.h"
#include "scheduler/cache.h"

namespace kvol::scheduler {

// The reasons, in Kubernetes' words.
inline constexpr std::string_view kReasonUnschedulable = "node(s) were unschedulable";
inline constexpr std::string_view kReasonNodeAffinity =
    "node(s) didn't match Pod's node affinity/selector";
inline constexpr std::string_view kReasonVolumeNodeConflict =
    "node(s) had volume node affinity conflict";
inline constexpr std::string_view kReasonBindConflict =
    "node(s) didn't find available persistent volumes to bind";
inline constexpr std::string_view kReasonPVNotExist =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
inline constexpr std::string_view kUnboundImmediate =
    "pod has unbound immediate PersistentVolumeClaims";
inline constexpr std::string_view kNoNodes = "no nodes available to schedule pods";
inline constexpr std::string_view kNoProvisioner = "kubernetes.io/no-provisioner";

// What must happen to a pod's volumes before it may run on the node chosen.
struct VolumePlan {
  // Unbound WaitForFirstConsumer claims and the free volumes chosen for them on the node: the
  // scheduler pre-binds each volume to its claim and the PV controller completes the binding.
  std::vector<std::pair<ClaimPtr, VolumePtr>> bindings;
  // Claims for their class's provisioner to make a volume for on the node.
  std::vector<ClaimPtr> provisions;
  bool empty() const { return bindings.empty() && provisions.empty(); }
};

// A pod's claims as VolumeBinding's PreFilter sorts them.
struct PodClaims {
  std::vector<ClaimPtr> bound;
  std::vector<ClaimPtr> delayed;  // unbound, of a WaitForFirstConsumer class
  // Why no node can run the pod at all (a missing or deleted claim, an unbound Immediate
  // claim); empty otherwise.
  std::string unresolvable;
};
PodClaims ClassifyClaims(const api::Pod& pod, const Cache& cache);

// A toleration admits a taint, as Kubernetes' ToleratesTaint decides.
bool Tolerates(const api::Toleration& toleration, const api::Taint& taint);

// The reasons `node` cannot run `pod`; empty when it can, and then `plan` (if given) says what
// its volumes need on that node. Volumes chosen are reserved in the cache's index only while
// the function runs.
std::vector<std::string> FilterNode(const api::Pod& pod, const PodClaims& claims,
                                    const api::Node& node, Cache& cache, VolumePlan* plan);

struct Decision {
  std::string node;  // empty when no node can run the pod
  VolumePlan plan;
  // When no node can: "0/3 nodes are available: 1 node(s) had volume node affinity conflict,
  // 2 node(s) didn't find available persistent volumes to bind."
  std::string message;
};

// Chooses a node for a pod that has none.
Decision Schedule(const api::Pod& pod, Cache& cache);

}  // namespace kvol::scheduler
