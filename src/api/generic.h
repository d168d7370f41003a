// Kinds kvol stores and serves without modelling their contents: workloads (apps/v1
// Deployment, StatefulSet, DaemonSet, ReplicaSet; batch/v1 Job; core/v1 ReplicationController),
// Services and ServiceAccounts, and RBAC objects. Their metadata is typed and validated; spec and status are kept as JSON, with
// the pod template (and a StatefulSet's claim templates) of workloads validated as pods.
#pragma once

#include "api/codec.h"
#include "api/field_errors.h"
#include "api/meta.h"

namespace kvol::api {

template <class Tag>
struct GenericObject {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  Json spec;    // null when absent
  Json status;  // null when absent
  KVOL_FIELDS(GenericObject) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("spec", s.spec);
    v("status", s.status);
  }
};

struct DeploymentTag {};
struct StatefulSetTag {};
struct DaemonSetTag {};
struct ReplicaSetTag {};
struct JobTag {};
struct ServiceTag {};
struct ServiceAccountTag {};
struct ReplicationControllerTag {};
struct ClusterRoleTag {};
struct ClusterRoleBindingTag {};
struct RoleTag {};
struct RoleBindingTag {};

using Deployment = GenericObject<DeploymentTag>;
using StatefulSet = GenericObject<StatefulSetTag>;
using DaemonSet = GenericObject<DaemonSetTag>;
using ReplicaSet = GenericObject<ReplicaSetTag>;
using Job = GenericObject<JobTag>;
using Service = GenericObject<ServiceTag>;
using ServiceAccount = GenericObject<ServiceAccountTag>;
// core/v1 ReplicationController: stored, listed and watched; no controller runs it.
using ReplicationController = GenericObject<ReplicationControllerTag>;
using ClusterRole = GenericObject<ClusterRoleTag>;
using ClusterRoleBinding = GenericObject<ClusterRoleBindingTag>;
using Role = GenericObject<RoleTag>;
using RoleBinding = GenericObject<RoleBindingTag>;

// The pod template and claim templates of a workload's spec, checked as Kubernetes checks pods
// and claims (`kind`: Deployment, StatefulSet, DaemonSet, ReplicaSet or Job).
FieldErrors ValidateWorkloadSpec(std::string_view kind, const Json& spec);

template <class Tag>
void SetDefaults(GenericObject<Tag>&) {}

template <class Tag>
FieldErrors Validate(const GenericObject<Tag>& obj);
template <class Tag>
FieldErrors ValidateUpdate(const GenericObject<Tag>& obj, const GenericObject<Tag>& old);

}  // namespace kvol::api
