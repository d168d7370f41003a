// Per-kind rules the API server applies around writes, as Kubernetes' registry strategies do:
// which fields a create resets, which kinds have a status subresource, and what the main
// resource and the status subresource may each change on update.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "api/core.h"
#include "api/quota.h"
#include "api/request_options.h"
#include "api/scheme.h"
#include "api/storage.h"
#include "api/well_known.h"
#include "apiserver/errors.h"

namespace kvol::apiserver {

template <class T>
concept HasStatus = requires(T t) { t.status; };
template <class T>
concept HasSpec = requires(T t) { t.spec; };

// Kinds with a /status subresource.
template <class T>
constexpr bool kStatusSubresource =
    std::is_same_v<T, api::Pod> || std::is_same_v<T, api::PersistentVolume> ||
    std::is_same_v<T, api::PersistentVolumeClaim> || std::is_same_v<T, api::Node> ||
    std::is_same_v<T, api::Namespace> || std::is_same_v<T, api::VolumeAttachment> ||
    std::is_same_v<T, api::VolumeSnapshot> || std::is_same_v<T, api::VolumeSnapshotContent> ||
    std::is_same_v<T, api::ResourceQuota> || api::kGenericStatus<T>;

// Resets what clients may not set on create (status of kinds with a status subresource).
template <class T>
void PrepareForCreate(T& obj, const api::Time& now) {
  if constexpr (kStatusSubresource<T>) obj.status = {};
}
void PrepareForCreate(api::PersistentVolume& pv, const api::Time& now);
void PrepareForCreate(api::Namespace& ns, const api::Time& now);
void PrepareForCreate(api::Node& node, const api::Time& now);

// Carries over what an update of the main resource (status = false) or of the status
// subresource (status = true) may not change.
template <class T>
void PrepareForUpdate(T& obj, const T& old, bool status, const api::Time& now);

// What an update of the main resource may not change beyond PrepareForUpdate's rules: a
// Namespace's spec.finalizers change only through its finalize subresource.
template <class T>
void PrepareForMainUpdate(T&, const T&) {}
void PrepareForMainUpdate(api::Namespace& ns, const api::Namespace& old);

// Things the API server decides on its own on some updates (PV phase transition time).
void AfterUpdate(api::PersistentVolume& pv, const api::PersistentVolume& old, const api::Time& now);
template <class T>
void AfterUpdate(T&, const T&, const api::Time&) {}

// Graceful deletion: how many seconds an object being deleted stays (with deletionTimestamp
// that far ahead) for whoever must finish it, or nothing to delete it at once. Pods on a node
// stay for their node agent to stop the containers and remove them (grace period 0):
// DeleteOptions.gracePeriodSeconds, else spec.terminationGracePeriodSeconds; never for a pod
// that is on no node or has finished (as Kubernetes' pod strategy).
template <class T>
std::optional<int64_t> GracefulDeletion(const T&, const api::DeleteOptions&) {
  return std::nullopt;
}
std::optional<int64_t> GracefulDeletion(const api::Pod& pod, const api::DeleteOptions& opts);

// Whether what is left keeps an object marked for deletion in the store: its finalizers, and
// a Namespace's spec.finalizers.
template <class T>
bool HeldForDeletion(const T& obj) {
  return !obj.metadata.finalizers.empty();
}
inline bool HeldForDeletion(const api::Namespace& ns) {
  return !ns.metadata.finalizers.empty() || !ns.spec.finalizers.empty();
}

// Deletion in two steps, for a Namespace: the first delete only marks it (deletionTimestamp,
// phase Terminating) for the namespace controller to empty; a later one, once the controller
// has taken "kubernetes" out of spec.finalizers (the finalize subresource), removes it, while
// before that it is refused (Conflict) as Kubernetes refuses it.
template <class T>
bool DeletesInTwoSteps(const T&) {
  return false;
}
inline bool DeletesInTwoSteps(const api::Namespace&) { return true; }
// What marking an object for deletion changes besides its deletionTimestamp.
template <class T>
void MarkDeleting(T&) {}
void MarkDeleting(api::Namespace& ns);

// The garbage collector's finalizer a delete asks for: "orphan" for propagationPolicy Orphan,
// "foregroundDeletion" for Foreground, none for Background (the default).
inline std::string_view CollectorFinalizer(const api::DeleteOptions& opts) {
  if (opts.propagation_policy == "Orphan") return api::kOrphanFinalizer;
  if (opts.propagation_policy == "Foreground") return api::kForegroundFinalizer;
  return {};
}
using api::HasFinalizer;

// Validating admission on delete: an error refuses it. The namespaces the system needs
// (default, kube-system, kube-public, kube-node-lease) may not be deleted; a namespace the
// namespace controller is still emptying may not be deleted again.
template <class T>
std::optional<ApiError> AdmitDelete(const T&) {
  return std::nullopt;
}
std::optional<ApiError> AdmitDelete(const api::Namespace& ns);

// What the server needs from elsewhere to admit objects.
class Cluster {
 public:
  virtual ~Cluster() = default;
  // Nothing if objects may be created in `ns`; NotFound if it does not exist; Forbidden if it
  // is being deleted.
  virtual std::optional<ApiError> CheckNamespace(std::string_view ns) = 0;
  // The StorageClass annotated storageclass.kubernetes.io/is-default-class=true (the newest,
  // if several are).
  virtual std::optional<std::string> DefaultStorageClass() = 0;
  // Whether StorageClass `name` exists with allowVolumeExpansion true.
  virtual bool AllowsVolumeExpansion(std::string_view name) = 0;
  // Quota admission: refuses (403, in Kubernetes' words) object `name` of namespace `ns` when
  // what it adds (`item`, asked only if the namespace has quotas) would take the namespace
  // past one of its ResourceQuotas, and charges what it admits to their status.used. A dry
  // run is only checked.
  virtual std::optional<ApiError> AdmitQuota(std::string_view ns, std::string_view name,
                                             const std::function<api::QuotaItem()>& item,
                                             bool dry_run) = 0;
  // ServiceAccount `name` of namespace `ns`, read from the store. The "default" account, which
  // the service accounts controller makes just after its namespace, is looked for again for
  // up to about 1.5 s, as Kubernetes' admission does. NotFound when there is none.
  virtual ApiOr<std::shared_ptr<const api::ServiceAccount>> FindServiceAccount(
      std::string_view ns, std::string_view name) = 0;
};

// Admission on create, after defaults and before validation: it may change the object, or
// refuse it with an error.
template <class T>
std::optional<ApiError> AdmitCreate(T&, Cluster&) {
  return std::nullopt;
}
std::optional<ApiError> AdmitCreate(api::PersistentVolumeClaim& pvc, Cluster& cluster);
std::optional<ApiError> AdmitCreate(api::PersistentVolume& pv, Cluster& cluster);
// The ServiceAccount admission plugin (see service_account_admission.h): a pod that names no
// account runs as "default"; Forbidden when its account does not exist; its containers mount
// the account's token unless the pod or the account opts out.
std::optional<ApiError> AdmitCreate(api::Pod& pod, Cluster& cluster);

// Validating admission on update (not of status), after validation: an error refuses it.
template <class T>
std::optional<ApiError> AdmitUpdate(const T&, const T&, Cluster&) {
  return std::nullopt;
}
// A claim's storage request may grow only when its class allows volume expansion.
std::optional<ApiError> AdmitUpdate(const api::PersistentVolumeClaim& pvc,
                                    const api::PersistentVolumeClaim& old, Cluster& cluster);

using api::kDefaultClassAnnotation;
using api::kPVCProtectionFinalizer;
using api::kPVProtectionFinalizer;

// ---- implementation of the templates ----

void ResetObjectMetaForStatus(api::ObjectMeta& meta, const api::ObjectMeta& old);

template <class T>
void PrepareForUpdate(T& obj, const T& old, bool status, const api::Time& now) {
  auto& m = obj.metadata;
  const auto& o = old.metadata;
  m.uid = o.uid;
  m.creation_timestamp = o.creation_timestamp;
  m.deletion_timestamp = o.deletion_timestamp;
  m.deletion_grace_period_seconds = o.deletion_grace_period_seconds;
  m.generation = o.generation;
  obj.api_version = old.api_version;
  obj.kind = old.kind;
  if constexpr (kStatusSubresource<T>) {
    if (status) {
      if constexpr (HasSpec<T>) obj.spec = old.spec;
      ResetObjectMetaForStatus(m, o);
    } else {
      obj.status = old.status;
    }
  }
  if constexpr (HasSpec<T>) {
    if (!status && !(obj.spec == old.spec)) {
      m.generation = o.generation + 1;
    }
  }
}

}  // namespace kvol::apiserver
