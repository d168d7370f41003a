// The kind table and the generic decode-default-validate pipeline.
#include "api/scheme.h"

#include "api/defaults.h"
#include "api/labels.h"
#include "api/validation.h"

namespace kvol::api {

std::string_view KindInfo::ShortName() const {
  return short_names.empty() ? singular : short_names.front();
}

std::string KindInfo::ApiVersion() const {
  if (group.empty()) return std::string(version);
  return std::string(group) + "/" + std::string(version);
}

#define KVOL_KIND_INFO(T, ...)              \
  template <>                               \
  const KindInfo& KindInfoOf<T>() {         \
    static const KindInfo kInfo{__VA_ARGS__}; \
    return kInfo;                           \
  }

KVOL_KIND_INFO(Namespace, "", "v1", "Namespace", "namespaces", "namespace", {"ns"}, false,
               {"status.phase"})
KVOL_KIND_INFO(Node, "", "v1", "Node", "nodes", "node", {"no"}, false, {"spec.unschedulable"})
KVOL_KIND_INFO(Pod, "", "v1", "Pod", "pods", "pod", {"po"}, true,
               {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
                "status.nominatedNodeName"},
               true)
KVOL_KIND_INFO(PersistentVolume, "", "v1", "PersistentVolume", "persistentvolumes",
               "persistentvolume", {"pv"}, false, {})
KVOL_KIND_INFO(PersistentVolumeClaim, "", "v1", "PersistentVolumeClaim", "persistentvolumeclaims",
               "persistentvolumeclaim", {"pvc"}, true, {})
KVOL_KIND_INFO(ConfigMap, "", "v1", "ConfigMap", "configmaps", "configmap", {"cm"}, true, {})
KVOL_KIND_INFO(Secret, "", "v1", "Secret", "secrets", "secret", {}, true, {"type"})
KVOL_KIND_INFO(Event, "", "v1", "Event", "events", "event", {"ev"}, true,
               {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                "involvedObject.uid", "involvedObject.apiVersion",
                "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                "reportingComponent", "source", "type"})
KVOL_KIND_INFO(StorageClass, "storage.k8s.io", "v1", "StorageClass", "storageclasses",
               "storageclass", {"sc"}, false, {})
KVOL_KIND_INFO(VolumeAttachment, "storage.k8s.io", "v1", "VolumeAttachment", "volumeattachments",
               "volumeattachment", {}, false, {})
KVOL_KIND_INFO(CSIDriver, "storage.k8s.io", "v1", "CSIDriver", "csidrivers", "csidriver", {},
               false, {})
KVOL_KIND_INFO(CSINode, "storage.k8s.io", "v1", "CSINode", "csinodes", "csinode", {}, false, {})
KVOL_KIND_INFO(CSIStorageCapacity, "storage.k8s.io", "v1", "CSIStorageCapacity",
               "csistoragecapacities", "csistoragecapacity", {}, true, {})
KVOL_KIND_INFO(Lease, "coordination.k8s.io", "v1", "Lease", "leases", "lease", {}, true, {})
KVOL_KIND_INFO(Deployment, "apps", "v1", "Deployment", "deployments", "deployment", {"deploy"}, true,
               {}, true)
KVOL_KIND_INFO(StatefulSet, "apps", "v1", "StatefulSet", "statefulsets", "statefulset", {"sts"},
               true, {}, true)
KVOL_KIND_INFO(DaemonSet, "apps", "v1", "DaemonSet", "daemonsets", "daemonset", {"ds"}, true, {},
               true)
KVOL_KIND_INFO(ReplicaSet, "apps", "v1", "ReplicaSet", "replicasets", "replicaset", {"rs"}, true,
               {}, true)
KVOL_KIND_INFO(Job, "batch", "v1", "Job", "jobs", "job", {}, true, {}, true)
KVOL_KIND_INFO(Service, "", "v1", "Service", "services", "service", {"svc"}, true,
               {"spec.clusterIP", "spec.type"}, true)
KVOL_KIND_INFO(ServiceAccount, "", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount",
               {"sa"}, true, {})
KVOL_KIND_INFO(ReplicationController, "", "v1", "ReplicationController", "replicationcontrollers",
               "replicationcontroller", {"rc"}, true, {}, true)
KVOL_KIND_INFO(ClusterRole, "rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles",
               "clusterrole", {}, false, {})
KVOL_KIND_INFO(ClusterRoleBinding, "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding",
               "clusterrolebindings", "clusterrolebinding", {}, false, {})
KVOL_KIND_INFO(Role, "rbac.authorization.k8s.io", "v1", "Role", "roles", "role", {}, true, {})
KVOL_KIND_INFO(RoleBinding, "rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings",
               "rolebinding", {}, true, {})
KVOL_KIND_INFO(VolumeSnapshotClass, "snapshot.storage.k8s.io", "v1", "VolumeSnapshotClass",
               "volumesnapshotclasses", "volumesnapshotclass", {"vsclass", "vsclasses"}, false, {})
KVOL_KIND_INFO(VolumeSnapshot, "snapshot.storage.k8s.io", "v1", "VolumeSnapshot", "volumesnapshots",
               "volumesnapshot", {"vs"}, true, {})
KVOL_KIND_INFO(VolumeSnapshotContent, "snapshot.storage.k8s.io", "v1", "VolumeSnapshotContent",
               "volumesnapshotcontents", "volumesnapshotcontent", {"vsc", "vscs"}, false, {})
KVOL_KIND_INFO(ResourceQuota, "", "v1", "ResourceQuota", "resourcequotas", "resourcequota",
               {"quota"}, true, {})

#undef KVOL_KIND_INFO

const KindInfo* FindKind(std::string_view api_version, std::string_view kind) {
  const KindInfo* found = nullptr;
  ForEachKind([&](auto t) {
    const KindInfo& info = KindInfoOf<typename decltype(t)::type>();
    if (!found && info.kind == kind && info.ApiVersion() == api_version) found = &info;
  });
  return found;
}

StringMap KindFields(const Pod& pod) {
  StringMap m = {{"spec.nodeName", pod.spec.node_name},
                 {"spec.restartPolicy", pod.spec.restart_policy},
                 {"spec.schedulerName", pod.spec.scheduler_name},
                 {"spec.serviceAccountName", pod.spec.service_account_name},
                 {"status.phase", pod.status.phase},
                 {"status.podIP", pod.status.pod_ip},
};
  bool host_network = pod.spec.unknown_fields.is_object() &&
                      pod.spec.unknown_fields.value("hostNetwork", Json(false)) == Json(true);
  m["spec.hostNetwork"] = host_network ? "true" : "false";
  return m;
}

StringMap KindFields(const Node& node) {
  return {{"spec.unschedulable", node.spec.unschedulable ? "true" : "false"}};
}

StringMap KindFields(const Namespace& ns) {
  return {{"status.phase", ns.status.phase}};
}

StringMap KindFields(const Secret& s) {
  return {{"type", s.type}};
}

StringMap KindFields(const Event& e) {
  const auto& o = e.involved_object;
  return {{"involvedObject.kind", o.kind},
          {"involvedObject.namespace", o.namespace_},
          {"involvedObject.name", o.name},
          {"involvedObject.uid", o.uid},
          {"involvedObject.apiVersion", o.api_version},
          {"involvedObject.resourceVersion", o.resource_version},
          {"involvedObject.fieldPath", o.field_path},
          {"reason", e.reason},
          {"reportingComponent", e.reporting_component},
          {"source", e.source.component},
          {"type", e.type}};
}

namespace {

std::string StringField(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const Json& Child(const Json& obj, std::string_view key) {
  static const Json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

// ObjectMeta is modelled completely, so an unknown field there is a typo (`label:` for
// `labels:`), which kubectl's strict field validation rejects too.
void CheckMetadataFields(const ObjectMeta& m, const Path& path, FieldErrors& errs) {
  if (!m.unknown_fields.is_object()) return;
  for (auto it = m.unknown_fields.begin(); it != m.unknown_fields.end(); ++it) {
    if (it.key() == "managedFields" || it.key() == "selfLink") continue;
    errs.push_back(Forbidden(path.Child(it.key()), "unknown field"));
  }
}

template <class T>
T DecodeAt(const Json& j, std::initializer_list<std::string_view> path, FieldErrors* errors) {
  T out;
  if (j.is_null()) return out;
  DecodeContext c(errors);
  for (auto p : path) c.PushField(p);
  Decode(j, out, c);
  return out;
}

template <class T>
void CheckTemplateMetadata(const T&, FieldErrors&) {}
template <class Tag>
void CheckTemplateMetadata(const GenericObject<Tag>& obj, FieldErrors& errs) {
  if (!obj.spec.is_object() || !obj.spec.contains("template")) return;
  FieldErrors decode;
  auto tmpl = DecodeAt<PodTemplateSpec>(obj.spec["template"], {"spec", "template"}, &decode);
  CheckMetadataFields(tmpl.metadata, Path("spec").Child("template").Child("metadata"), errs);
}

template <class T>
void CheckKind(const Json& doc, DocumentReport& r) {
  const KindInfo& info = KindInfoOf<T>();
  T obj = DecodeStruct<T>(doc, &r.errors);
  CheckMetadataFields(obj.metadata, Path("metadata"), r.errors);
  CheckTemplateMetadata(obj, r.errors);
  if (!r.errors.empty()) return;  // as the API server, stop at a body that does not decode
  // kubectl puts namespaced objects into the current namespace ("default") and the API server
  // ignores a namespace on cluster-scoped objects.
  if (info.namespaced) {
    if (obj.metadata.namespace_.empty()) obj.metadata.namespace_ = "default";
  } else {
    obj.metadata.namespace_.clear();
  }
  SetDefaults(obj);
  Append(r.errors, Validate(obj));
}


}  // namespace

DocumentReport CheckDocument(const Json& doc) {
  DocumentReport r;
  if (!doc.is_object()) {
    r.kind = "<unknown>";
    r.errors.push_back(Invalid(Path("<root>"), BadValue::Raw(JsonValueForError(doc)),
                               "an object must be a map of fields"));
    return r;
  }
  const std::string api_version = StringField(doc, "apiVersion");
  r.kind = StringField(doc, "kind");
  const Json& meta = Child(doc, "metadata");
  r.name = StringField(meta, "name");
  if (r.name.empty()) r.name = StringField(meta, "generateName");
  if (r.kind.empty()) {
    r.kind = "<unknown>";
    r.errors.push_back(Required(Path("kind"), "Object 'Kind' is missing"));
  }
  if (api_version.empty()) {
    r.errors.push_back(Required(Path("apiVersion"), "Object 'apiVersion' is missing"));
  }
  if (!r.errors.empty()) return r;

  bool found = false;
  ForEachKind([&](auto t) {
    using T = typename decltype(t)::type;
    const KindInfo& info = KindInfoOf<T>();
    if (found || info.kind != r.kind || info.ApiVersion() != api_version) return;
    found = true;
    CheckKind<T>(doc, r);
  });
  if (found) return r;
  // A kind kvol does not model: its name, labels and annotations are still checked.
  r.modelled = false;
  ObjectMeta m = DecodeAt<ObjectMeta>(meta, {"metadata"}, &r.errors);
  CheckMetadataFields(m, Path("metadata"), r.errors);
  if (!r.errors.empty()) return r;
  Path mp("metadata");
  if (m.name.empty() && m.generate_name.empty()) {
    r.errors.push_back(Required(mp.Child("name"), "name or generateName is required"));
  }
  Append(r.errors, ValidateLabels(m.labels, mp.Child("labels")));
  Append(r.errors, ValidateAnnotations(m.annotations, mp.Child("annotations")));
  return r;
}

}  // namespace kvol::api
