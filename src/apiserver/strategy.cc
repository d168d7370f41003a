// Create/update rules and admission.
#include "apiserver/strategy.h"

#include <algorithm>

#include "apiserver/objects.h"
#include "apiserver/service_account_admission.h"

namespace kvol::apiserver {

void PrepareForCreate(api::PersistentVolume& pv, const api::Time& now) {
  pv.status = {};
  pv.status.phase = "Pending";
  pv.status.last_phase_transition_time = now;
}

void PrepareForCreate(api::Namespace& ns, const api::Time&) {
  ns.status = {};
  if (ns.spec.finalizers.empty()) ns.spec.finalizers = {std::string(api::kNamespaceFinalizer)};
}

void PrepareForMainUpdate(api::Namespace& ns, const api::Namespace& old) {
  ns.spec.finalizers = old.spec.finalizers;
}

void MarkDeleting(api::Namespace& ns) { ns.status.phase = api::kNamespaceTerminating; }

std::optional<ApiError> AdmitDelete(const api::Namespace& ns) {
  const std::string& name = ns.metadata.name;
  if (std::find(api::kSystemNamespaces.begin(), api::kSystemNamespaces.end(), name) !=
      api::kSystemNamespaces.end()) {
    return Forbidden("namespaces \"" + name + "\" is forbidden: this namespace may not be deleted");
  }
  if (ns.metadata.deletion_timestamp && !ns.spec.finalizers.empty()) {
    return Conflict(api::KindInfoOf<api::Namespace>(), name,
                    "The system is ensuring all content is removed from this namespace.  Upon "
                    "completion, this namespace will automatically be purged by the system.");
  }
  return std::nullopt;
}

// A node may be created with its status (kubelets register that way).
void PrepareForCreate(api::Node&, const api::Time&) {}

void AfterUpdate(api::PersistentVolume& pv, const api::PersistentVolume& old, const api::Time& now) {
  // As Kubernetes' status strategy: a client may give the time of a phase change itself;
  // otherwise (none, or the old one) the server stamps it, and keeps the old time while the
  // phase stays.
  auto& time = pv.status.last_phase_transition_time;
  if (pv.status.phase == old.status.phase) {
    if (!time) time = old.status.last_phase_transition_time;
  } else if (!time || time == old.status.last_phase_transition_time) {
    time = now;
  }
}

void ResetObjectMetaForStatus(api::ObjectMeta& meta, const api::ObjectMeta& old) {
  meta.labels = old.labels;
  meta.annotations = old.annotations;
  meta.finalizers = old.finalizers;
  meta.owner_references = old.owner_references;
  meta.deletion_timestamp = old.deletion_timestamp;
  meta.generation = old.generation;
}

using api::AddFinalizer;

std::optional<ApiError> AdmitCreate(api::Pod& pod, Cluster& cluster) {
  auto& account_name = pod.spec.service_account_name;
  if (account_name.empty()) account_name = "default";
  auto account = cluster.FindServiceAccount(pod.metadata.namespace_, account_name);
  if (!account.ok()) {
    // Kubernetes' words: the account's own lookup error, or its NotFound in the singular.
    const std::string why = api::IsNotFound(account.error())
                                ? "serviceaccount \"" + account_name + "\" not found"
                                : account.error().message;
    const std::string& name =
        pod.metadata.name.empty() ? pod.metadata.generate_name : pod.metadata.name;
    return Forbidden("pods \"" + name + "\" is forbidden: error looking up service account " +
                     pod.metadata.namespace_ + "/" + account_name + ": " + why);
  }
  if (ShouldAutomount(**account, pod)) {
    MountServiceAccountToken(pod, std::string(kServiceAccountVolumePrefix) + RandomSuffix());
  }
  return std::nullopt;
}

std::optional<ApiError> AdmitCreate(api::PersistentVolumeClaim& pvc, Cluster& cluster) {
  // dataSource and dataSourceRef kept in step, as Kubernetes' claim strategy does: either one
  // alone fills the other (a dataSourceRef to another namespace has no dataSource).
  auto& spec = pvc.spec;
  if (spec.data_source && !spec.data_source_ref) {
    spec.data_source_ref = api::TypedObjectReference{.api_group = spec.data_source->api_group,
                                                     .kind = spec.data_source->kind,
                                                     .name = spec.data_source->name};
  } else if (spec.data_source_ref && !spec.data_source &&
             spec.data_source_ref->namespace_.value_or("").empty()) {
    spec.data_source = api::TypedLocalObjectReference{.api_group = spec.data_source_ref->api_group,
                                                      .kind = spec.data_source_ref->kind,
                                                      .name = spec.data_source_ref->name};
  }
  // DefaultStorageClass admission: only an absent class is defaulted; "" means "no class".
  if (!pvc.spec.storage_class_name &&
      !pvc.metadata.annotations.count("volume.beta.kubernetes.io/storage-class")) {
    if (auto def = cluster.DefaultStorageClass()) pvc.spec.storage_class_name = *def;
  }
  AddFinalizer(pvc.metadata, kPVCProtectionFinalizer);
  return std::nullopt;
}

std::optional<ApiError> AdmitUpdate(const api::PersistentVolumeClaim& pvc,
                                    const api::PersistentVolumeClaim& old, Cluster& cluster) {
  auto now = pvc.spec.resources.requests.find("storage");
  auto was = old.spec.resources.requests.find("storage");
  if (now == pvc.spec.resources.requests.end() || was == old.spec.resources.requests.end() ||
      !(was->second < now->second)) {
    return std::nullopt;
  }
  const std::string cls = pvc.spec.storage_class_name.value_or("");
  if (!cls.empty() && old.spec.storage_class_name.value_or("") == cls &&
      cluster.AllowsVolumeExpansion(cls)) {
    return std::nullopt;
  }
  return Forbidden("persistentvolumeclaims \"" + pvc.metadata.name +
                   "\" is forbidden: only dynamically provisioned pvc can be resized and the "
                   "storageclass that provisions the pvc must support resize");
}

std::optional<ApiError> AdmitCreate(api::PersistentVolume& pv, Cluster&) {
  AddFinalizer(pv.metadata, kPVProtectionFinalizer);
  return std::nullopt;
}

std::optional<int64_t> GracefulDeletion(const api::Pod& pod, const api::DeleteOptions& opts) {
  int64_t period = opts.grace_period_seconds.value_or(
      pod.spec.termination_grace_period_seconds.value_or(30));
  if (pod.spec.node_name.empty()) period = 0;
  if (pod.status.phase == "Succeeded" || pod.status.phase == "Failed") period = 0;
  if (period <= 0) return std::nullopt;
  return period;
}

}  // namespace kvol::apiserver
