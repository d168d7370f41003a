// The kinds kvol serves: API group, version, resource names and scope, and the generic
// operations (decode, default, validate) the API server and `kvol validate` apply to each.
#pragma once

#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "api/codec.h"
#include "api/core.h"
#include "api/generic.h"
#include "api/snapshot.h"
#include "api/storage.h"

namespace kvol::api {

struct KindInfo {
  std::string_view group;     // "" for the core group
  std::string_view version;   // "v1"
  std::string_view kind;      // "PersistentVolume"
  std::string_view resource;  // "persistentvolumes"
  std::string_view singular;  // "persistentvolume"
  std::vector<std::string_view> short_names;  // {"pv"}
  bool namespaced = false;
  // Field selector labels besides metadata.name and metadata.namespace.
  std::vector<std::string_view> selectable_fields;
  bool in_category_all = false;  // listed by `kubectl get all`

  std::string ApiVersion() const;  // "v1", "storage.k8s.io/v1"
  // The first short name, else the singular: "pv", "volumeattachment".
  std::string_view ShortName() const;
};

using AllKinds = std::tuple<Namespace, Node, Pod, PersistentVolume, PersistentVolumeClaim,
                            ConfigMap, Secret, Event, StorageClass, VolumeAttachment, CSIDriver,
                            CSINode, CSIStorageCapacity, Lease, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job,
                            Service, ServiceAccount, ReplicationController, ClusterRole, ClusterRoleBinding, Role,
                            RoleBinding, VolumeSnapshotClass, VolumeSnapshot,
                            VolumeSnapshotContent, ResourceQuota>;

template <class T>
const KindInfo& KindInfoOf();

// Calls f(std::type_identity<T>{}) for every kind in AllKinds.
template <class F>
void ForEachKind(F&& f) {
  [&]<class... T>(std::tuple<T...>*) {
    (f(std::type_identity<T>{}), ...);
  }(static_cast<AllKinds*>(nullptr));
}

// Looks a kind up by apiVersion and kind; nullptr when kvol does not serve it.
const KindInfo* FindKind(std::string_view api_version, std::string_view kind);

// The values of a kind's selectable fields other than metadata.name and metadata.namespace,
// which every kind has.
StringMap KindFields(const Pod& pod);
StringMap KindFields(const Node& node);
StringMap KindFields(const Namespace& ns);
StringMap KindFields(const Secret& s);
StringMap KindFields(const Event& e);
template <class T>
StringMap KindFields(const T&) {
  return {};
}

// The values of all of a kind's selectable fields, for field selectors.
template <class T>
StringMap SelectableFields(const T& obj) {
  StringMap m = KindFields(obj);
  m.emplace("metadata.name", obj.metadata.name);
  m.emplace("metadata.namespace", obj.metadata.namespace_);
  return m;
}

// The stored-but-not-modelled kinds have a status subresource when Kubernetes gives them one.
template <class T>
constexpr bool kGenericStatus = false;
template <>
inline constexpr bool kGenericStatus<Deployment> = true;
template <>
inline constexpr bool kGenericStatus<StatefulSet> = true;
template <>
inline constexpr bool kGenericStatus<DaemonSet> = true;
template <>
inline constexpr bool kGenericStatus<ReplicaSet> = true;
template <>
inline constexpr bool kGenericStatus<Job> = true;
template <>
inline constexpr bool kGenericStatus<Service> = true;
template <>
inline constexpr bool kGenericStatus<ReplicationController> = true;

// The outcome of checking one manifest document.
struct DocumentReport {
  std::string kind;
  std::string name;     // or generateName
  FieldErrors errors;   // decoding and validation problems
  bool modelled = true;  // false: kvol does not model this kind and checked its metadata only
};

// Decodes one object (a JSON object as kubectl would send it), applies defaults and validates
// it as the API server would on create. Namespaced objects without a namespace are checked as if
// in "default", as kubectl would place them. Workload kinds (apps/v1 Deployment, StatefulSet,
// DaemonSet, ReplicaSet; batch/v1 Job) have their pod template and claim templates checked.
DocumentReport CheckDocument(const Json& doc);

}  // namespace kvol::api
