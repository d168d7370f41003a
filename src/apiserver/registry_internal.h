// What the files of Registry<T> share: the kinds it is instantiated for, and the helpers more
// than one of them uses. Not for use outside src/apiserver/registry*.cc.
#pragma once

#include <optional>
#include <string_view>
#include <tuple>

#include "api/scheme.h"
#include "apiserver/watch_cache.h"
#include "base/strings.h"
#include "store/store.h"

// X(kind) for every kind of api::AllKinds: each registry*.cc instantiates its own members of
// Registry<T> for them.
#define KVOL_REGISTRY_KINDS(X)  \
  X(api::Namespace)             \
  X(api::Node)                  \
  X(api::Pod)                   \
  X(api::PersistentVolume)      \
  X(api::PersistentVolumeClaim) \
  X(api::ConfigMap)             \
  X(api::Secret)                \
  X(api::Event)                 \
  X(api::StorageClass)          \
  X(api::VolumeAttachment)      \
  X(api::CSIDriver)             \
  X(api::CSINode)               \
  X(api::CSIStorageCapacity)    \
  X(api::Lease)                 \
  X(api::Deployment)            \
  X(api::StatefulSet)           \
  X(api::DaemonSet)             \
  X(api::ReplicaSet)            \
  X(api::Job)                   \
  X(api::Service)               \
  X(api::ServiceAccount)        \
  X(api::ReplicationController) \
  X(api::ClusterRole)           \
  X(api::ClusterRoleBinding)    \
  X(api::Role)                  \
  X(api::RoleBinding)           \
  X(api::VolumeSnapshotClass)   \
  X(api::VolumeSnapshot)        \
  X(api::VolumeSnapshotContent)  \
  X(api::ResourceQuota)

namespace kvol::apiserver::registry_internal {

// How often an update without a resourceVersion (or a patch) is tried against a newer version
// before it gives up with a conflict.
inline constexpr int kConflictRetries = 16;

#define KVOL_COUNT_KIND(T) +1
static_assert(std::tuple_size_v<api::AllKinds> == 0 KVOL_REGISTRY_KINDS(KVOL_COUNT_KIND),
              "KVOL_REGISTRY_KINDS must list every kind of api::AllKinds");
#undef KVOL_COUNT_KIND

inline std::optional<store::Revision> ParseRevision(std::string_view s) {
  int64_t v;
  if (!ParseInt64(s, &v) || v < 0) return std::nullopt;
  return v;
}

// What the watch cache keeps of a stored object.
template <class T>
StatusOr<CachedObject> IndexObject(const store::KeyValue& kv) {
  auto j = api::ParseJson(*kv.value);
  if (!j.ok()) return j.status();
  api::FieldErrors errs;
  T obj = api::DecodeStruct<T>(*j, &errs);
  CachedObject c;
  c.ns = obj.metadata.namespace_;
  c.name = obj.metadata.name;
  c.json = kv.value;
  c.rev = kv.mod_revision;
  c.labels = std::move(obj.metadata.labels);
  c.fields = api::KindFields(obj);
  return c;
}

}  // namespace kvol::apiserver::registry_internal
