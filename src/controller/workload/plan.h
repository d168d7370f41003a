// The workload controllers' decisions as pure functions: from a Deployment or StatefulSet and
// the pods (and claims) it owns, what to create, what to delete and what its status says.
// Deployments own their pods directly (recreating them when the template changes, with the
// pod-template-hash label a ReplicaSet would carry); StatefulSets create `<name>-<ordinal>`
// pods in order with claims from volumeClaimTemplates named `<template>-<name>-<ordinal>`,
// which are kept when the set shrinks or goes, as Kubernetes does.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api/core.h"
#include "api/generic.h"
#include "base/status.h"

namespace kvol::controller::workload {

using PodPtr = std::shared_ptr<const api::Pod>;

inline constexpr std::string_view kPodTemplateHash = "pod-template-hash";
inline constexpr std::string_view kControllerRevisionHash = "controller-revision-hash";
inline constexpr std::string_view kStatefulSetPodName = "statefulset.kubernetes.io/pod-name";

// A short, stable, DNS-safe hash of a pod template (as the pod-template-hash label).
std::string TemplateHash(const api::Json& pod_template);

// Whether the pod counts as ready (condition Ready=True) and whether it is on its way out.
bool PodReady(const api::Pod& pod);
bool PodGone(const api::Pod& pod);

struct Plan {
  std::vector<api::PersistentVolumeClaim> create_claims;
  std::vector<api::Pod> create_pods;
  std::vector<std::string> delete_pods;  // names
  api::Json status;                      // the status to write
  // Events on the workload: {reason, message}.
  std::vector<std::pair<std::string, std::string>> events;
};

// InvalidArgument when the spec cannot be read (no template, a replicas that is not a number).
// `pending_creates` counts pods created by an earlier pass that `owned` (a cache) does not
// show yet: they are not created again.
StatusOr<Plan> PlanDeployment(const api::Deployment& d, const std::vector<PodPtr>& owned,
                              int64_t pending_creates = 0);

// `claim_exists` says whether a claim of that name exists in the set's namespace.
StatusOr<Plan> PlanStatefulSet(const api::StatefulSet& s, const std::vector<PodPtr>& owned,
                               const std::function<bool(const std::string&)>& claim_exists);

// The controller reference `pod` carries for `kind`, or nullptr.
const api::OwnerReference* ControllerOf(const api::Pod& pod);

}  // namespace kvol::controller::workload
