// Validation with Kubernetes' exact field paths and messages. Each row starts from a valid object
// of its kind, applies a JSON merge patch, defaults it as the API server does, and expects exactly
// the listed errors.
#include "api/validation.h"

#include <gtest/gtest.h>

#include "api/defaults.h"
#include "api/scheme.h"

namespace kvol::api {
namespace {

const char* const kSubdomainMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const char* const kLabelMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const char* const kFileMode = "must be a number between 0 and 0777 (octal), both inclusive";

const char* BaseFor(std::string_view kind) {
  if (kind == "PersistentVolume") {
    return R"({"metadata": {"name": "pv1"},
      "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"],
               "hostPath": {"path": "/data"}}})";
  }
  if (kind == "PersistentVolumeClaim") {
    return R"({"metadata": {"name": "c1", "namespace": "default"},
      "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}})";
  }
  if (kind == "Pod") {
    return R"({"metadata": {"name": "p", "namespace": "default"},
      "spec": {"containers": [{"name": "c", "image": "busybox",
                               "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
               "volumes": [{"name": "data", "emptyDir": {}}]}})";
  }
  if (kind == "StorageClass") return R"({"metadata": {"name": "sc"}, "provisioner": "kvol.io/local-path"})";
  if (kind == "VolumeAttachment") {
    return R"({"metadata": {"name": "va"},
      "spec": {"attacher": "disk.csi.example.com", "nodeName": "n1",
               "source": {"persistentVolumeName": "pv1"}}})";
  }
  if (kind == "CSIDriver") return R"({"metadata": {"name": "disk.csi.example.com"}})";
  if (kind == "CSINode") {
    return R"({"metadata": {"name": "n1"},
      "spec": {"drivers": [{"name": "disk.csi.example.com", "nodeID": "n1"}]}})";
  }
  if (kind == "Namespace") return R"({"metadata": {"name": "team-a"}})";
  if (kind == "Node") return R"({"metadata": {"name": "n1"}})";
  if (kind == "ConfigMap") {
    return R"({"metadata": {"name": "cm", "namespace": "default"}, "data": {"k": "v"}})";
  }
  if (kind == "Secret") {
    return R"({"metadata": {"name": "s", "namespace": "default"}, "data": {"k": "dmFsdWU="}})";
  }
  if (kind == "Event") {
    return R"({"metadata": {"name": "e.1", "namespace": "default"},
      "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}})";
  }
  if (kind == "VolumeSnapshotClass") {
    return R"({"metadata": {"name": "snap"}, "driver": "loop.csi.kvol.io", "deletionPolicy": "Delete"})";
  }
  if (kind == "VolumeSnapshot") {
    return R"({"metadata": {"name": "s1", "namespace": "default"},
      "spec": {"source": {"persistentVolumeClaimName": "data"}}})";
  }
  if (kind == "VolumeSnapshotContent") {
    return R"({"metadata": {"name": "snapcontent-1"},
      "spec": {"deletionPolicy": "Delete", "driver": "loop.csi.kvol.io",
               "source": {"volumeHandle": "vol-1"},
               "volumeSnapshotRef": {"name": "s1", "namespace": "default"}}})";
  }
  if (kind == "ResourceQuota") {
    return R"({"metadata": {"name": "q", "namespace": "default"},
      "spec": {"hard": {"persistentvolumeclaims": "10", "requests.storage": "10Gi",
                        "gold.storageclass.storage.k8s.io/requests.storage": "5Gi",
                        "count/deployments.apps": "3"}}})";
  }
  if (kind == "Lease") {
    return R"({"metadata": {"name": "l", "namespace": "kube-system"},
      "spec": {"leaseDurationSeconds": 15}})";
  }
  return nullptr;
}

template <class T>
FieldErrors Check(const Json& obj) {
  FieldErrors errs;
  T t = DecodeStruct<T>(obj, &errs);
  if (!errs.empty()) return errs;
  SetDefaults(t);
  return Validate(t);
}

// As the API server: the stored object was defaulted when it was written, the update is that
// object with the client's changes, defaulted again.
template <class T>
FieldErrors CheckUpdate(const Json& old_json, const Json& patch) {
  FieldErrors errs;
  T was = DecodeStruct<T>(old_json, &errs);
  if (!errs.empty()) return errs;
  SetDefaults(was);
  Json now_json = EncodeStruct(was);
  now_json.merge_patch(patch);
  T now = DecodeStruct<T>(now_json, &errs);
  if (!errs.empty()) return errs;
  SetDefaults(now);
  return ValidateUpdate(now, was);
}

// Validates `obj` as a create, or as an update applying `patch` to `obj` when patch is given.
FieldErrors Dispatch(std::string_view kind, const Json& obj, const Json* patch = nullptr) {
  FieldErrors out;
  bool found = false;
  ForEachKind([&](auto t) {
    using T = typename decltype(t)::type;
    if (found || KindInfoOf<T>().kind != kind) return;
    found = true;
    out = patch ? CheckUpdate<T>(obj, *patch) : Check<T>(obj);
  });
  EXPECT_TRUE(found) << kind;
  return out;
}

std::vector<std::string> Strings(const FieldErrors& errs) {
  std::vector<std::string> out;
  for (const auto& e : errs) out.push_back(e.ToString());
  return out;
}

struct Row {
  const char* name;
  const char* kind;
  std::string patch;  // JSON merge patch over the kind's valid base
  std::vector<std::string> errors;
};

const std::vector<Row>& Rows() {
  static const std::vector<Row> kRows = {
      // ---- valid bases ----
      {"valid pv", "PersistentVolume", "{}", {}},
      {"valid pvc", "PersistentVolumeClaim", "{}", {}},
      {"valid pod", "Pod", "{}", {}},
      {"valid storage class", "StorageClass", "{}", {}},
      {"valid attachment", "VolumeAttachment", "{}", {}},
      {"valid csidriver", "CSIDriver", "{}", {}},
      {"valid csinode", "CSINode", "{}", {}},
      {"valid namespace", "Namespace", "{}", {}},
      {"valid node", "Node", "{}", {}},
      {"valid configmap", "ConfigMap", "{}", {}},
      {"valid secret", "Secret", "{}", {}},
      {"valid event", "Event", "{}", {}},
      {"valid lease", "Lease", "{}", {}},

      // ---- PersistentVolume ----
      {"pv without capacity", "PersistentVolume", R"({"spec": {"capacity": null}})",
       {"spec.capacity: Required value",
        "spec.capacity: Unsupported value: null: supported values: \"storage\""}},
      {"pv negative capacity", "PersistentVolume", R"({"spec": {"capacity": {"storage": "-1Gi"}}})",
       {"spec.capacity[storage]: Invalid value: -1073741824: must be a valid resource quantity",
        "spec.capacity[storage]: Invalid value: \"-1Gi\": must be greater than zero"}},
      {"pv zero capacity", "PersistentVolume", R"({"spec": {"capacity": {"storage": "0"}}})",
       {"spec.capacity[storage]: Invalid value: \"0\": must be greater than zero"}},
      {"pv capacity other than storage", "PersistentVolume",
       R"({"spec": {"capacity": {"cpu": "1"}}})",
       {"spec.capacity: Unsupported value: {\"cpu\":\"1\",\"storage\":\"5Gi\"}: supported "
        "values: \"storage\""}},
      {"pv without access modes", "PersistentVolume", R"({"spec": {"accessModes": null}})",
       {"spec.accessModes: Required value"}},
      {"pv unknown access mode", "PersistentVolume",
       R"({"spec": {"accessModes": ["ReadWriteSometimes"]}})",
       {"spec.accessModes: Unsupported value: \"ReadWriteSometimes\": supported values: "
        "\"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\""}},
      {"pv RWOP with another mode", "PersistentVolume",
       R"({"spec": {"accessModes": ["ReadWriteOncePod", "ReadWriteOnce"]}})",
       {"spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"}},
      {"pv RWOP alone", "PersistentVolume", R"({"spec": {"accessModes": ["ReadWriteOncePod"]}})",
       {}},
      {"pv without source", "PersistentVolume", R"({"spec": {"hostPath": null}})",
       {"spec: Required value: must specify a volume type"}},
      {"pv with two sources", "PersistentVolume",
       R"({"spec": {"nfs": {"server": "s", "path": "/x"}}})",
       {"spec.nfs: Forbidden: may not specify more than 1 volume type"}},
      {"pv with an unmodelled second source", "PersistentVolume",
       R"({"spec": {"iscsi": {"targetPortal": "1.2.3.4", "iqn": "iqn.x", "lun": 0}}})",
       {"spec.iscsi: Forbidden: may not specify more than 1 volume type"}},
      {"pv with only an unmodelled source", "PersistentVolume",
       R"({"spec": {"hostPath": null, "rbd": {"monitors": ["m"], "image": "i"}}})", {}},
      {"pv hostPath type", "PersistentVolume",
       R"({"spec": {"hostPath": {"type": "Dir"}}})",
       {"spec.hostPath.type: Unsupported value: \"Dir\": supported values: \"\", "
        "\"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", \"File\", "
        "\"FileOrCreate\", \"Socket\""}},
      {"pv hostPath without path", "PersistentVolume", R"({"spec": {"hostPath": {"path": ""}}})",
       {"spec.hostPath.path: Required value"}},
      {"pv hostPath with backsteps", "PersistentVolume",
       R"({"spec": {"hostPath": {"path": "/a/../b"}}})",
       {"spec.hostPath.path: Invalid value: \"/a/../b\": must not contain '..'"}},
      {"pv recycle of /", "PersistentVolume",
       R"({"spec": {"hostPath": {"path": "/"}, "persistentVolumeReclaimPolicy": "Recycle"}})",
       {"spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath "
        "mount of '/'"}},
      {"pv reclaim policy", "PersistentVolume",
       R"({"spec": {"persistentVolumeReclaimPolicy": "Keep"}})",
       {"spec.persistentVolumeReclaimPolicy: Unsupported value: \"Keep\": supported values: "
        "\"Delete\", \"Recycle\", \"Retain\""}},
      {"pv local without node affinity", "PersistentVolume",
       R"({"spec": {"hostPath": null, "local": {"path": "/data/nginx"}}})",
       {"spec.nodeAffinity: Required value: Local volume requires node affinity"}},
      {"pv local with node affinity", "PersistentVolume",
       R"({"spec": {"hostPath": null, "local": {"path": "/data/nginx"},
           "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
             {"key": "kubernetes.io/hostname", "operator": "In", "values": ["k8s-node01"]}]}]}}}})",
       {}},
      {"pv node affinity without values", "PersistentVolume",
       R"({"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
             {"key": "zone", "operator": "In"}]}]}}}})",
       {"spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values: Required "
        "value: must be specified when `operator` is 'In' or 'NotIn'"}},
      {"pv node affinity operator", "PersistentVolume",
       R"({"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
             {"key": "zone", "operator": "Equals", "values": ["a"]}]}]}}}})",
       {"spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid "
        "value: \"Equals\": not a valid selector operator"}},
      {"pv node affinity without terms", "PersistentVolume",
       R"({"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": []}}}})",
       {"spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have at least one "
        "node selector term"}},
      {"pv nfs relative path", "PersistentVolume",
       R"({"spec": {"hostPath": null, "nfs": {"server": "10.0.0.1", "path": "mnt"}}})",
       {"spec.nfs.path: Invalid value: \"mnt\": must be an absolute path"}},
      {"pv nfs without server", "PersistentVolume",
       R"({"spec": {"hostPath": null, "nfs": {"path": "/mnt"}}})",
       {"spec.nfs.server: Required value"}},
      {"pv csi without handle", "PersistentVolume",
       R"({"spec": {"hostPath": null, "csi": {"driver": "disk.csi.example.com"}}})",
       {"spec.csi.volumeHandle: Required value"}},
      {"pv csi driver name", "PersistentVolume",
       R"({"spec": {"hostPath": null, "csi": {"driver": "my_driver", "volumeHandle": "v"}}})",
       {std::string("spec.csi.driver: Invalid value: \"my_driver\": ") + kSubdomainMsg}},
      {"pv csi secret without namespace", "PersistentVolume",
       R"({"spec": {"hostPath": null, "csi": {"driver": "d.example.com", "volumeHandle": "v",
           "nodeStageSecretRef": {"name": "s"}}}})",
       {"spec.csi.nodeStageSecretRef.namespace: Required value"}},
      {"pv volume mode", "PersistentVolume", R"({"spec": {"volumeMode": "Raw"}})",
       {"spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", "
        "\"Filesystem\""}},
      {"pv storage class name", "PersistentVolume", R"({"spec": {"storageClassName": "Slow"}})",
       {std::string("spec.storageClassName: Invalid value: \"Slow\": ") + kSubdomainMsg}},
      {"pv name", "PersistentVolume", R"({"metadata": {"name": "NFS_PV"}})",
       {std::string("metadata.name: Invalid value: \"NFS_PV\": ") + kSubdomainMsg}},
      {"pv name too long", "PersistentVolume",
       std::string(R"({"metadata": {"name": ")") + std::string(254, 'a') + "\"}}",
       {"metadata.name: Invalid value: \"" + std::string(254, 'a') +
        "\": must be no more than 253 characters"}},
      {"pv in a namespace", "PersistentVolume", R"({"metadata": {"namespace": "default"}})",
       {"metadata.namespace: Forbidden: not allowed on this type"}},
      {"pv flex reserved option", "PersistentVolume",
       R"({"spec": {"hostPath": null, "flexVolume": {"driver": "a/b",
           "options": {"kubernetes.io/secret": "x"}}}})",
       {"spec.flexVolume.options[kubernetes.io/secret]: Invalid value: \"kubernetes.io/secret\": "
        "kubernetes.io and k8s.io namespaces are reserved"}},
      {"pv flex reserved option without a slash", "PersistentVolume",
       R"({"spec": {"hostPath": null, "flexVolume": {"driver": "a/b",
           "options": {"Sub.K8S.io": "x", "example.com/ok": "y"}}}})",
       {"spec.flexVolume.options[Sub.K8S.io]: Invalid value: \"Sub.K8S.io\": kubernetes.io and "
        "k8s.io namespaces are reserved"}},

      // ---- PersistentVolumeClaim ----
      {"pvc without storage request", "PersistentVolumeClaim",
       R"({"spec": {"resources": {"requests": null}}})",
       {"spec.resources[storage]: Required value"}},
      {"pvc zero request", "PersistentVolumeClaim",
       R"({"spec": {"resources": {"requests": {"storage": "0Gi"}}}})",
       {"spec.resources[storage]: Invalid value: \"0\": must be greater than zero"}},
      {"pvc without access modes", "PersistentVolumeClaim", R"({"spec": {"accessModes": []}})",
       {"spec.accessModes: Required value: at least 1 access mode is required"}},
      {"pvc selector operator", "PersistentVolumeClaim",
       R"({"spec": {"selector": {"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["1"]}]}}})",
       {"spec.selector.matchExpressions[0].operator: Invalid value: \"Gt\": not a valid selector "
        "operator"}},
      {"pvc selector exists with values", "PersistentVolumeClaim",
       R"({"spec": {"selector": {"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["1"]}]}}})",
       {"spec.selector.matchExpressions[0].values: Forbidden: may not be specified when "
        "`operator` is 'Exists' or 'DoesNotExist'"}},
      {"pvc selector label value", "PersistentVolumeClaim",
       R"({"spec": {"selector": {"matchLabels": {"app": "a b"}}}})",
       {"spec.selector.matchLabels: Invalid value: \"a b\": a valid label must be an empty "
        "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end "
        "with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex "
        "used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"}},
      {"pvc without namespace", "PersistentVolumeClaim", R"({"metadata": {"namespace": null}})",
       {"metadata.namespace: Required value"}},
      {"pvc without name", "PersistentVolumeClaim", R"({"metadata": {"name": null}})",
       {"metadata.name: Required value: name or generateName is required"}},
      {"pvc generateName only", "PersistentVolumeClaim",
       R"({"metadata": {"name": null, "generateName": "data-"}})", {}},
      {"pvc data source kind", "PersistentVolumeClaim",
       R"({"spec": {"dataSource": {"kind": "Pod", "name": "p"}}})",
       {"spec.dataSource: Invalid value: \"Pod\": must be 'PersistentVolumeClaim' when "
        "referencing the default apiGroup"}},
      {"pvc empty class is allowed", "PersistentVolumeClaim",
       R"({"spec": {"storageClassName": ""}})", {}},
      {"pvc volume mode", "PersistentVolumeClaim", R"({"spec": {"volumeMode": "block"}})",
       {"spec.volumeMode: Unsupported value: \"block\": supported values: \"Block\", "
        "\"Filesystem\""}},

      // ---- Pod ----
      {"pod duplicate volume", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]}})",
       {"spec.volumes[1].name: Duplicate value: \"data\""}},
      {"pod volume with two sources", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "emptyDir": {}, "hostPath": {"path": "/x"}}]}})",
       {"spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod volume name", "Pod",
       R"({"spec": {"volumes": [{"name": "Data", "emptyDir": {}}],
           "containers": [{"name": "c", "image": "i"}]}})",
       {std::string("spec.volumes[0].name: Invalid value: \"Data\": ") + kLabelMsg}},
      {"pod hostPath type", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "hostPath": {"path": "/data", "type": "directory"}}]}})",
       {"spec.volumes[0].hostPath.type: Unsupported value: \"directory\": supported values: "
        "\"\", \"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", \"File\", "
        "\"FileOrCreate\", \"Socket\"",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod configMap item absolute path", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "configMap": {"name": "cm",
           "items": [{"key": "k", "path": "/etc/x"}]}}]}})",
       {"spec.volumes[0].configMap.items[0].path: Invalid value: \"/etc/x\": must be a relative "
        "path",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod configMap item backsteps", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "configMap": {"name": "cm",
           "items": [{"key": "k", "path": "a/../b"}]}}]}})",
       {"spec.volumes[0].configMap.items[0].path: Invalid value: \"a/../b\": must not contain "
        "'..'",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod configMap item reserved name", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "configMap": {"name": "cm",
           "items": [{"key": "k", "path": "..data"}]}}]}})",
       {"spec.volumes[0].configMap.items[0].path: Invalid value: \"..data\": must not start "
        "with '..'",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod configMap item without key", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "configMap": {"name": "cm",
           "items": [{"path": "p"}]}}]}})",
       {"spec.volumes[0].configMap.items[0].key: Required value",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod configMap default mode", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "configMap": {"name": "cm", "defaultMode": 512}}]}})",
       {std::string("spec.volumes[0].configMap.defaultMode: Invalid value: 512: ") + kFileMode,
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod secret item mode", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "secret": {"secretName": "s",
           "items": [{"key": "k", "path": "p", "mode": -1}]}}]}})",
       {std::string("spec.volumes[0].secret.items[0].mode: Invalid value: -1: ") + kFileMode,
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod secret without name", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "secret": {}}]}})",
       {"spec.volumes[0].secret.secretName: Required value",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod octal modes are fine", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "secret": {"secretName": "s", "defaultMode": 511,
           "items": [{"key": "k", "path": "p", "mode": 256}]}}]}})",
       {}},
      {"pod pvc without claim name", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "persistentVolumeClaim": {}}]}})",
       {"spec.volumes[0].persistentVolumeClaim.claimName: Required value",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod ephemeral volume without a template", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "ephemeral": {}}]}})",
       {"spec.volumes[0].ephemeral.volumeClaimTemplate: Required value",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod ephemeral volume template checked as a claim", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "ephemeral": {"volumeClaimTemplate": {
           "metadata": {"labels": {"-bad": "x"}},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {}}}}}}]}})",
       {"spec.volumes[0].ephemeral.volumeClaimTemplate.metadata.labels: Invalid value: \"-bad\": "
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
        "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
        "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        "spec.volumes[0].ephemeral.volumeClaimTemplate.spec.resources[storage]: Required value",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod ephemeral volume", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "ephemeral": {"volumeClaimTemplate": {
           "spec": {"accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}}}}}}]}})",
       {}},
      {"pod downwardAPI field path", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "downwardAPI": {"items": [
           {"path": "h", "fieldRef": {"fieldPath": "spec.hostname"}}]}}]}})",
       {"spec.volumes[0].downwardAPI.fieldRef.fieldPath: Unsupported value: \"spec.hostname\": "
        "supported values: \"metadata.annotations\", \"metadata.labels\", \"metadata.name\", "
        "\"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", "
        "\"spec.serviceAccountName\", \"status.hostIP\", \"status.podIP\"",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod downwardAPI item path", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "downwardAPI": {"items": [
           {"path": "../labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]}})",
       {"spec.volumes[0].downwardAPI.path: Invalid value: \"../labels\": must not contain '..'",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod downwardAPI item without ref", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "downwardAPI": {"items": [{"path": "x"}]}}]}})",
       {"spec.volumes[0].downwardAPI: Required value: one of fieldRef and resourceFieldRef is "
        "required",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod downwardAPI label subscript", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "downwardAPI": {"items": [
           {"path": "app", "fieldRef": {"fieldPath": "metadata.labels['app']"}},
           {"path": "cpu", "resourceFieldRef": {"containerName": "c", "resource": "limits.cpu",
                                                "divisor": "1m"}}]}}]}})",
       {}},
      {"pod projected source with two types", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "projected": {"sources": [
           {"configMap": {"name": "cm"}, "secret": {"name": "s"}}]}}]}})",
       {"spec.volumes[0].projected.sources[0]: Forbidden: may not specify more than 1 volume "
        "type per source",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod projected duplicate paths", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "projected": {"sources": [
           {"configMap": {"name": "cm", "items": [{"key": "a", "path": "x"}]}},
           {"secret": {"name": "s", "items": [{"key": "b", "path": "x"}]}}]}}]}})",
       {"spec.volumes[0].projected: Invalid value: \"s\": conflicting duplicate paths",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod nfs relative path", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "nfs": {"server": "s", "path": "share"}}]}})",
       {"spec.volumes[0].nfs.path: Invalid value: \"share\": must be an absolute path",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"pod mount of an unknown volume", "Pod",
       R"({"spec": {"containers": [{"name": "c", "image": "i",
           "volumeMounts": [{"name": "missing", "mountPath": "/m"}]}]}})",
       {"spec.containers[0].volumeMounts[0].name: Not found: \"missing\""}},
      {"pod relative mount path", "Pod",
       R"({"spec": {"containers": [{"name": "c", "image": "i",
           "volumeMounts": [{"name": "data", "mountPath": "data"}]}]}})",
       {"spec.containers[0].volumeMounts[0].mountPath: Invalid value: \"data\": must be an "
        "absolute path"}},
      {"pod duplicate mount path", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "emptyDir": {}}, {"name": "other", "emptyDir": {}}],
           "containers": [{"name": "c", "image": "i", "volumeMounts": [
             {"name": "data", "mountPath": "/data"}, {"name": "other", "mountPath": "/data"}]}]}})",
       {"spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/data\": must be unique"}},
      {"pod securityContext ids out of range", "Pod",
       R"({"spec": {"securityContext": {"runAsUser": -1, "fsGroup": 2147483648,
                                        "supplementalGroups": [5, -2]},
           "containers": [{"name": "c", "image": "i",
                           "securityContext": {"runAsUser": 2147483648, "runAsGroup": -1}}]}})",
       {"spec.containers[0].securityContext.runAsUser: Invalid value: 2147483648: must be "
        "between 0 and 2147483647, inclusive",
        "spec.containers[0].securityContext.runAsGroup: Invalid value: -1: must be between 0 and "
        "2147483647, inclusive",
        "spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, "
        "inclusive",
        "spec.securityContext.fsGroup: Invalid value: 2147483648: must be between 0 and "
        "2147483647, inclusive",
        "spec.securityContext.supplementalGroups[1]: Invalid value: -2: must be between 0 and "
        "2147483647, inclusive"}},
      {"pod privileged without privilege escalation", "Pod",
       R"({"spec": {"containers": [{"name": "c", "image": "i", "securityContext": {
           "privileged": true, "allowPrivilegeEscalation": false,
           "capabilities": {"add": ["CAP_SYS_ADMIN", "NET_ADMIN"]}}}]}})",
       {"spec.containers[0].securityContext: Invalid value: cannot set "
        "`allowPrivilegeEscalation` to false and `privileged` to true",
        "spec.containers[0].securityContext: Invalid value: cannot set "
        "`allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"}},
      {"pod seccomp profiles", "Pod",
       R"({"spec": {"securityContext": {"seccompProfile": {"type": "Localhost"}},
           "containers": [{"name": "c", "image": "i", "securityContext": {
             "seccompProfile": {"type": "RuntimeDefault", "localhostProfile": "x.json"}}},
                          {"name": "d", "image": "i", "securityContext": {
             "seccompProfile": {"type": "Localhost", "localhostProfile": "../x.json"}}},
                          {"name": "e", "image": "i", "securityContext": {
             "seccompProfile": {"type": "unconfined"}}}]}})",
       {"spec.containers[0].securityContext.seccompProfile.localhostProfile: Invalid value: "
        "\"x.json\": can only be set when seccomp type is Localhost",
        "spec.containers[1].securityContext.seccompProfile.localhostProfile: Invalid value: "
        "\"../x.json\": must be a relative path that does not contain '..'",
        "spec.containers[2].securityContext.seccompProfile.type: Unsupported value: "
        "\"unconfined\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"",
        "spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when "
        "seccomp type is Localhost"}},
      {"pod securityContext that is valid", "Pod",
       R"({"spec": {"securityContext": {"runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 2000,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
           "containers": [{"name": "c", "image": "i", "securityContext": {
             "runAsNonRoot": true, "readOnlyRootFilesystem": true,
             "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]},
             "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/a.json"}}}]}})",
       {}},
      {"pod mount without path", "Pod",
       R"({"spec": {"containers": [{"name": "c", "image": "i",
           "volumeMounts": [{"name": "data"}]}]}})",
       {"spec.containers[0].volumeMounts[0].mountPath: Required value"}},
      {"pod subPath escaping the volume", "Pod",
       R"({"spec": {"containers": [{"name": "c", "image": "i",
           "volumeMounts": [{"name": "data", "mountPath": "/d", "subPath": "../etc"}]}]}})",
       {"spec.containers[0].volumeMounts.subPath: Invalid value: \"../etc\": must not contain "
        "'..'"}},
      {"pod block device from emptyDir", "Pod",
       R"({"spec": {"containers": [{"name": "c", "image": "i",
           "volumeDevices": [{"name": "data", "devicePath": "/dev/xvda"}]}]}})",
       {"spec.containers[0].volumeDevices[0].name: Invalid value: \"data\": can only use volume "
        "source type of PersistentVolumeClaim or Ephemeral for block mode"}},
      {"pod without containers", "Pod", R"({"spec": {"containers": []}})",
       {"spec.containers: Required value"}},
      {"pod container without image", "Pod",
       R"({"spec": {"containers": [{"name": "c"}]}})",
       {"spec.containers[0].image: Required value"}},
      {"pod duplicate container names", "Pod",
       R"({"spec": {"containers": [{"name": "c", "image": "i"}, {"name": "c", "image": "i"}]}})",
       {"spec.containers[1].name: Duplicate value: \"c\""}},
      {"pod restart policy", "Pod", R"({"spec": {"restartPolicy": "Sometimes"}})",
       {"spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", "
        "\"OnFailure\", \"Never\""}},
      {"pod label key", "Pod", R"({"metadata": {"labels": {"bad key": "v"}}})",
       {"metadata.labels: Invalid value: \"bad key\": name part must consist of alphanumeric "
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"}},
      {"pod label key prefix", "Pod", R"({"metadata": {"labels": {"/x": "v"}}})",
       {"metadata.labels: Invalid value: \"/x\": prefix part must be non-empty"}},
      {"pod annotations too large", "Pod",
       std::string(R"({"metadata": {"annotations": {"a": ")") + std::string(262144, 'x') + "\"}}}",
       {"metadata.annotations: Too long: may not be more than 262144 bytes"}},
      {"pod node selector value", "Pod", R"({"spec": {"nodeSelector": {"disk": "-ssd"}}})",
       {"spec.nodeSelector: Invalid value: \"-ssd\": a valid label must be an empty string or "
        "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
        "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"}},
      {"pod toleration", "Pod",
       R"({"spec": {"tolerations": [{"operator": "Equal", "value": "x"}]}})",
       {"spec.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when "
        "`key` is empty, which means \"match all values and all keys\""}},
      {"pod finalizer", "Pod", R"({"metadata": {"finalizers": ["cleanup"]}})",
       {"metadata.finalizers[0]: Invalid value: \"cleanup\": name is neither a standard "
        "finalizer name nor is it fully qualified"}},

      // ---- storage.k8s.io ----
      {"class without provisioner", "StorageClass", R"({"provisioner": ""})",
       {"provisioner: Required value"}},
      {"class recycle", "StorageClass", R"({"reclaimPolicy": "Recycle"})",
       {"reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", "
        "\"Retain\""}},
      {"class binding mode", "StorageClass", R"({"volumeBindingMode": "Later"})",
       {"volumeBindingMode: Unsupported value: \"Later\": supported values: \"Immediate\", "
        "\"WaitForFirstConsumer\""}},
      {"class topology without values", "StorageClass",
       R"({"allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": []}]}]})",
       {"allowedTopologies[0].matchLabelExpressions[0].values: Required value"}},
      {"class empty parameter key", "StorageClass", R"({"parameters": {"": "x"}})",
       {"parameters: Invalid value: \"\": field can not be empty."}},
      {"attachment without source", "VolumeAttachment", R"({"spec": {"source": null}})",
       {"spec.source: Required value: must specify exactly one of inlineVolumeSpec and "
        "persistentVolumeName"}},
      {"attachment node name", "VolumeAttachment", R"({"spec": {"nodeName": ""}})",
       {std::string("spec.nodeName: Invalid value: \"\": ") + kSubdomainMsg}},
      {"csidriver fsGroupPolicy", "CSIDriver", R"({"spec": {"fsGroupPolicy": "Always"}})",
       {"spec.fsGroupPolicy: Unsupported value: \"Always\": supported values: \"File\", "
        "\"None\", \"ReadWriteOnceWithFSType\""}},
      {"csidriver lifecycle mode", "CSIDriver",
       R"({"spec": {"volumeLifecycleModes": ["Forever"]}})",
       {"spec.volumeLifecycleModes: Unsupported value: \"Forever\": supported values: "
        "\"Persistent\", \"Ephemeral\""}},
      {"csinode without node id", "CSINode",
       R"({"spec": {"drivers": [{"name": "disk.csi.example.com"}]}})",
       {"spec.drivers[0].nodeID: Required value"}},

      // ---- others ----
      {"namespace with dots", "Namespace", R"({"metadata": {"name": "team.a"}})",
       {"metadata.name: Invalid value: \"team.a\": must not contain dots"}},
      {"node taint effect", "Node",
       R"({"spec": {"taints": [{"key": "k", "effect": "NoRun"}]}})",
       {"spec.taints[0].effect: Unsupported value: \"NoRun\": supported values: \"NoSchedule\", "
        "\"PreferNoSchedule\", \"NoExecute\""}},
      {"configmap key", "ConfigMap", R"({"data": {"bad key": "v"}})",
       {"data[bad key]: Invalid value: \"bad key\": a valid config key must consist of "
        "alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or "
        "'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"}},
      {"secret base64", "Secret", R"({"data": {"k": "not base64!"}})",
       {"data[k]: Invalid value: illegal base64 data at input byte 3"}},
      {"secret base64 with line breaks", "Secret", R"({"data": {"k": "dmFs\ndWU=\n"}})", {}},
      {"secret of 900 KiB decoded", "Secret",
       std::string(R"({"data": {"big": ")") + std::string(1228800, 'A') + "\"}}", {}},
      {"secret over 1 MiB decoded", "Secret",
       std::string(R"({"data": {"big": ")") + std::string(1400000, 'A') + "\"}}",
       {"data: Too long: may not be more than 1048576 bytes"}},
      {"configmap over 1 MiB", "ConfigMap",
       std::string(R"({"data": {"big": ")") + std::string(1048577, 'x') + "\"}}",
       {": Too long: may not be more than 1048576 bytes"}},
      {"env from a configmap needs a valid name", "Pod",
       R"({"spec": {"containers": [{"name": "c", "image": "i", "volumeMounts": [{"name": "data", "mountPath": "/data"}],
           "env": [{"name": "E", "valueFrom": {"configMapKeyRef": {"name": "Bad_Name", "key": "k"}}}]}]}})",
       {std::string("spec.containers[0].env[0].valueFrom.configMapKeyRef.name: Invalid value: "
                    "\"Bad_Name\": ") + kSubdomainMsg}},
      {"env fieldRef of all labels", "Pod",
       R"({"spec": {"containers": [{"name": "c", "image": "i", "volumeMounts": [{"name": "data", "mountPath": "/data"}],
           "env": [{"name": "E", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels"}}}]}]}})",
       {"spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "
        "\"metadata.labels\": supported values: \"metadata.name\", \"metadata.namespace\", "
        "\"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", "
        "\"status.hostIPs\", \"status.podIP\", \"status.podIPs\""}},
      {"env valueFrom without a source", "Pod",
       R"({"spec": {"containers": [{"name": "c", "image": "i", "volumeMounts": [{"name": "data", "mountPath": "/data"}],
           "env": [{"name": "E", "valueFrom": {}}]}]}})",
       {"spec.containers[0].env[0].valueFrom: Invalid value: \"\": must specify one of: "
        "`fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"}},
      {"projected token with an absolute path", "Pod",
       R"({"spec": {"serviceAccountName": "sa", "volumes": [{"name": "data", "projected": {"sources": [
           {"serviceAccountToken": {"path": "/abs/token"}}]}}]}})",
       {"spec.volumes[0].projected.path: Invalid value: \"/abs/token\": must be a relative path",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"hostname and subdomain are DNS labels", "Pod",
       R"({"spec": {"hostname": "Bad_Host", "subdomain": "a.b", "containers": [{"name": "c", "image": "i"}]}})",
       {std::string("spec.hostname: Invalid value: \"Bad_Host\": ") + kLabelMsg,
        "spec.subdomain: Invalid value: \"a.b\": must not contain dots"}},
      {"one PID namespace cannot be the node's", "Pod",
       R"({"spec": {"hostPID": true, "shareProcessNamespace": true, "containers": [{"name": "c", "image": "i"}]}})",
       {"spec.securityContext.shareProcessNamespace: Invalid value: true: ShareProcessNamespace "
        "and HostPID cannot both be enabled"}},
      {"the node's namespaces and pull secrets", "Pod",
       R"({"spec": {"hostNetwork": true, "hostIPC": true, "hostname": "db-0", "subdomain": "db",
           "imagePullSecrets": [{"name": "regcred"}], "containers": [{"name": "c", "image": "i"}]}})",
       {}},
      {"preferred affinity values are not checked", "Pod",
       R"({"spec": {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
           {"weight": 1, "preference": {"matchExpressions": [{"key": "k", "operator": "In", "values": ["-x-"]}]}}]}}}})",
       {}},
      {"divisor error shows the resource", "Pod",
       R"({"spec": {"volumes": [{"name": "data", "downwardAPI": {"items": [
           {"path": "cpu", "resourceFieldRef": {"containerName": "c", "resource": "limits.cpu", "divisor": "2m"}}]}}]}})",
       {"spec.volumes[0].downwardAPI.resourceFieldRef.divisor: Invalid value: \"limits.cpu\": only "
        "divisor's values 1m and 1 are supported with the cpu resource",
        "spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"duplicate node taints", "Node",
       R"({"spec": {"taints": [{"key": "k", "value": "a", "effect": "NoSchedule"},
                               {"key": "k", "value": "b", "effect": "NoSchedule"}]}})",
       {"spec.taints[1]: Duplicate value: \"k=b:NoSchedule\": taints must be unique by key and effect pair"}},
      {"local pv with empty node affinity", "PersistentVolume",
       R"({"spec": {"hostPath": null, "local": {"path": "/data"}, "nodeAffinity": {}}})",
       {"spec.nodeAffinity.required: Required value: must specify required node constraints"}},
      {"generateName ending in a dash", "PersistentVolumeClaim",
       R"({"metadata": {"name": null, "generateName": "ab_-"}})", {}},
      {"secret tls keys", "Secret", R"({"type": "kubernetes.io/tls"})",
       {"data[tls.crt]: Required value", "data[tls.key]: Required value"}},
      {"event namespace", "Event", R"({"involvedObject": {"namespace": "other"}})",
       {"involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"}},
      {"lease duration", "Lease", R"({"spec": {"leaseDurationSeconds": 0}})",
       {"spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"}},
      {"snapshot class needs a driver and a policy", "VolumeSnapshotClass",
       R"({"driver": null, "deletionPolicy": null})",
       {"driver: Required value", "deletionPolicy: Required value"}},
      {"snapshot class deletion policy", "VolumeSnapshotClass", R"({"deletionPolicy": "Keep"})",
       {"deletionPolicy: Unsupported value: \"Keep\": supported values: \"Delete\", \"Retain\""}},
      {"snapshot of a claim and of a content at once", "VolumeSnapshot",
       R"({"spec": {"source": {"volumeSnapshotContentName": "c"}}})",
       {"spec.source: Invalid value: \"object\": exactly one of volumeSnapshotContentName and "
        "persistentVolumeClaimName must be set"}},
      {"snapshot of nothing", "VolumeSnapshot", R"({"spec": {"source": null}})",
       {"spec.source: Invalid value: \"object\": exactly one of volumeSnapshotContentName and "
        "persistentVolumeClaimName must be set"}},
      {"pre-provisioned snapshot", "VolumeSnapshot",
       R"({"spec": {"source": {"persistentVolumeClaimName": null, "volumeSnapshotContentName": "c"}}})",
       {}},
      {"snapshot class name may not be empty", "VolumeSnapshot",
       R"({"spec": {"volumeSnapshotClassName": ""}})",
       {"spec.volumeSnapshotClassName: Invalid value: \"string\": volumeSnapshotClassName must "
        "not be the empty string when set"}},
      {"snapshot in no namespace", "VolumeSnapshot", R"({"metadata": {"namespace": null}})",
       {"metadata.namespace: Required value"}},
      {"content without a snapshot", "VolumeSnapshotContent",
       R"({"spec": {"volumeSnapshotRef": null}})", {"spec.volumeSnapshotRef: Required value"}},
      {"content naming a snapshot in no namespace", "VolumeSnapshotContent",
       R"({"spec": {"volumeSnapshotRef": {"namespace": null}}})",
       {"spec.volumeSnapshotRef: Invalid value: \"object\": both spec.volumeSnapshotRef.name and "
        "spec.volumeSnapshotRef.namespace must be set"}},
      {"content with both handles", "VolumeSnapshotContent",
       R"({"spec": {"source": {"snapshotHandle": "snap-1"}}})",
       {"spec.source: Invalid value: \"object\": exactly one of volumeHandle and snapshotHandle "
        "must be set"}},
      {"content needs a driver and a policy", "VolumeSnapshotContent",
       R"({"spec": {"driver": null, "deletionPolicy": "Keep"}})",
       {"spec.deletionPolicy: Unsupported value: \"Keep\": supported values: \"Delete\", "
        "\"Retain\"",
        "spec.driver: Required value"}},
      {"a probe without a handler, and one with two", "Pod",
       R"({"spec": {"containers": [{"name": "c", "image": "busybox",
           "livenessProbe": {"periodSeconds": 5},
           "readinessProbe": {"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}}}]}})",
       {"spec.containers[0].livenessProbe: Required value: must specify a handler type",
        "spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 "
        "handler type"}},
      {"probe numbers", "Pod",
       R"({"spec": {"containers": [{"name": "c", "image": "busybox",
           "livenessProbe": {"httpGet": {"port": 70000}, "successThreshold": 2,
                             "periodSeconds": -1},
           "readinessProbe": {"exec": {"command": []}, "terminationGracePeriodSeconds": 5}}]}})",
       {"spec.containers[0].livenessProbe.httpGet.port: Invalid value: 70000: must be between 1 "
        "and 65535, inclusive",
        "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than "
        "or equal to 0",
        "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
        "spec.containers[0].readinessProbe.exec.command: Required value",
        "spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must "
        "not be set for readinessProbes"}},
      {"probes on an init container", "Pod",
       R"({"spec": {"initContainers": [{"name": "i", "image": "busybox",
           "startupProbe": {"exec": {"command": ["true"]}}}]}})",
       {"spec.initContainers[0].startupProbe: Forbidden: may not be set for init containers "
        "without restartPolicy=Always"}},
      {"quota of what is no quota resource", "ResourceQuota",
       R"({"spec": {"hard": {"storage": "1Gi"}}})",
       {"spec.hard[storage]: Invalid value: \"storage\": must be a standard resource for "
        "quota"}},
      {"quota below zero, and counting in halves", "ResourceQuota",
       R"({"spec": {"hard": {"requests.storage": "-1", "persistentvolumeclaims": "500m"}}})",
       {"spec.hard[persistentvolumeclaims]: Invalid value: \"500m\": must be an integer",
        "spec.hard[requests.storage]: Invalid value: \"-1\": must be greater than or equal "
        "to 0"}},
      {"quota scopes apply to pods only", "ResourceQuota",
       R"({"spec": {"hard": {"count/deployments.apps": null, "pods": "3",
                             "gold.storageclass.storage.k8s.io/requests.storage": null},
                    "scopes": ["BestEffort"]}})",
       {"spec.scopes: Invalid value: [BestEffort]: unsupported scope applied to resource",
        "spec.scopes: Invalid value: [BestEffort]: unsupported scope applied to resource"}},
      {"quota scopes that conflict or are unknown", "ResourceQuota",
       R"({"spec": {"hard": null, "scopes": ["Terminating", "NotTerminating", "Sometimes"]}})",
       {"spec.scopes: Invalid value: [Terminating NotTerminating Sometimes]: unsupported scope",
        "spec.scopes: Invalid value: [Terminating NotTerminating Sometimes]: conflicting "
        "scopes"}},
      {"quota scope selector operators", "ResourceQuota",
       R"({"spec": {"hard": {"pods": "3", "persistentvolumeclaims": null,
                             "requests.storage": null, "count/deployments.apps": null,
                             "gold.storageclass.storage.k8s.io/requests.storage": null},
                    "scopeSelector": {"matchExpressions": [
                      {"scopeName": "BestEffort", "operator": "In", "values": ["x"]},
                      {"scopeName": "PriorityClass", "operator": "In"}]}}})",
       {"spec.scopeSelector.matchExpressions[0].operator: Invalid value: \"In\": must be "
        "'Exist' only operator when scope is any of ResourceQuotaScopeTerminating, "
        "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort and "
        "ResourceQuotaScopeNotBestEffort",
        "spec.scopeSelector.matchExpressions[1].values: Required value: must be at least one "
        "value when `operator` is 'In' or 'NotIn' for scope selector"}},
      {"content restore size", "VolumeSnapshotContent", R"({"status": {"restoreSize": -1}})",
       {"status.restoreSize: Invalid value: -1: status.restoreSize in body should be greater "
        "than or equal to 0"}},
  };
  return kRows;
}

TEST(ValidationTest, Table) {
  int invalid = 0;
  for (const auto& row : Rows()) {
    Json obj = Json::parse(BaseFor(row.kind));
    obj.merge_patch(Json::parse(row.patch));
    EXPECT_EQ(Strings(Dispatch(row.kind, obj)), row.errors) << row.name;
    if (!row.errors.empty()) ++invalid;
  }
  EXPECT_GE(invalid, 40);
}

struct UpdateRow {
  const char* name;
  const char* kind;
  const char* old_patch;  // merge patch over the base for the old object
  const char* new_patch;  // merge patch over the old object for the new one
  std::vector<std::string> errors;
};

TEST(ValidationTest, UpdateTable) {
  const std::string kClaimImmutable =
      "spec: Forbidden: spec is immutable after creation except resources.requests and "
      "volumeAttributesClassName for bound claims";
  const std::vector<UpdateRow> kRows = {
      {"pv capacity may change", "PersistentVolume", "{}",
       R"({"spec": {"capacity": {"storage": "10Gi"}, "claimRef": {"name": "c", "namespace": "d"}}})",
       {}},
      {"pv source is immutable", "PersistentVolume", "{}",
       R"({"spec": {"hostPath": {"path": "/other"}}})",
       {"spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after "
        "creation"}},
      {"pv unmodelled source is immutable", "PersistentVolume",
       R"({"spec": {"hostPath": null, "rbd": {"image": "a"}}})", R"({"spec": {"rbd": {"image": "b"}}})",
       {"spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after "
        "creation"}},
      {"pv volume mode is immutable", "PersistentVolume", "{}",
       R"({"spec": {"volumeMode": "Block"}})",
       {"volumeMode: Invalid value: \"Block\": field is immutable"}},
      {"pv csi may gain an expand secret", "PersistentVolume",
       R"({"spec": {"hostPath": null, "csi": {"driver": "d.example.com", "volumeHandle": "v"}}})",
       R"({"spec": {"csi": {"controllerExpandSecretRef": {"name": "s", "namespace": "n"}}}})", {}},
      {"pv name is immutable", "PersistentVolume", "{}", R"({"metadata": {"name": "pv2"}})",
       {"metadata.name: Invalid value: \"pv2\": field is immutable"}},
      {"pvc volumeName may be filled once", "PersistentVolumeClaim", "{}",
       R"({"spec": {"volumeName": "pv1"}})", {}},
      {"pvc volumeName may not change", "PersistentVolumeClaim",
       R"({"spec": {"volumeName": "pv1"}})", R"({"spec": {"volumeName": "pv2"}})",
       {kClaimImmutable}},
      {"pvc class may be set once", "PersistentVolumeClaim", "{}",
       R"({"spec": {"storageClassName": "local-path"}})", {}},
      {"pvc class may not change", "PersistentVolumeClaim",
       R"({"spec": {"storageClassName": "a"}})", R"({"spec": {"storageClassName": "b"}})",
       {kClaimImmutable}},
      {"pvc access modes are immutable", "PersistentVolumeClaim", "{}",
       R"({"spec": {"accessModes": ["ReadWriteMany"]}})", {kClaimImmutable}},
      {"bound pvc may grow", "PersistentVolumeClaim", R"({"status": {"phase": "Bound"}})",
       R"({"spec": {"resources": {"requests": {"storage": "10Gi"}}}})", {}},
      {"bound pvc may not shrink below its capacity", "PersistentVolumeClaim",
       R"({"status": {"phase": "Bound", "capacity": {"storage": "2Gi"}}})",
       R"({"spec": {"resources": {"requests": {"storage": "1Gi"}}}})",
       {"spec.resources.requests.storage: Forbidden: field can not be less than "
        "status.capacity"}},
      {"bound pvc may retry a failed expansion smaller", "PersistentVolumeClaim",
       R"({"spec": {"resources": {"requests": {"storage": "9Gi"}}},
           "status": {"phase": "Bound", "capacity": {"storage": "5Gi"}}})",
       R"({"spec": {"resources": {"requests": {"storage": "7Gi"}}}})", {}},
      {"bound pvc limits are immutable", "PersistentVolumeClaim", R"({"status": {"phase": "Bound"}})",
       R"({"spec": {"resources": {"limits": {"storage": "10Gi"}}}})", {kClaimImmutable}},
      {"pvc selector is immutable", "PersistentVolumeClaim", "{}",
       R"({"spec": {"selector": {"matchLabels": {"release": "stable"}}}})", {kClaimImmutable}},
      {"pvc spec fields kvol does not model are immutable", "PersistentVolumeClaim", "{}",
       R"({"spec": {"futureField": 1}})", {kClaimImmutable}},
      {"pvc resources fields kvol does not model are immutable", "PersistentVolumeClaim", "{}",
       R"({"spec": {"resources": {"futureField": 2}}})", {kClaimImmutable}},
      {"bound pvc requests other than storage are immutable", "PersistentVolumeClaim",
       R"({"spec": {"resources": {"requests": {"a.example.com/x": "1"}}},
           "status": {"phase": "Bound"}})",
       R"({"spec": {"resources": {"requests": {"a.example.com/x": "2", "storage": "9Gi"}}}})",
       {kClaimImmutable}},
      {"bound pvc may not add a request other than storage", "PersistentVolumeClaim",
       R"({"status": {"phase": "Bound"}})",
       R"({"spec": {"resources": {"requests": {"z.example.com/x": "1"}}}})", {kClaimImmutable}},
      {"pvc data source is immutable", "PersistentVolumeClaim", "{}",
       R"({"spec": {"dataSource": {"kind": "PersistentVolumeClaim", "name": "src"}}})",
       {kClaimImmutable}},
      {"pv csi may not change its handle", "PersistentVolume",
       R"({"spec": {"hostPath": null, "csi": {"driver": "d.example.com", "volumeHandle": "v"}}})",
       R"({"spec": {"csi": {"volumeHandle": "w",
           "controllerExpandSecretRef": {"name": "s", "namespace": "n"}}}})",
       {"spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after "
        "creation"}},
      {"unbound pvc may not grow", "PersistentVolumeClaim", "{}",
       R"({"spec": {"resources": {"requests": {"storage": "10Gi"}}}})", {kClaimImmutable}},
      {"pvc volume mode is immutable", "PersistentVolumeClaim", "{}",
       R"({"spec": {"volumeMode": "Block"}})",
       {kClaimImmutable, "volumeMode: Invalid value: \"Block\": field is immutable"}},
      {"class parameters are immutable", "StorageClass", "{}",
       R"({"parameters": {"a": "b"}})",
       {"parameters: Forbidden: updates to parameters are forbidden."}},
      {"class binding mode is immutable", "StorageClass", "{}",
       R"({"volumeBindingMode": "WaitForFirstConsumer"})",
       {"volumeBindingMode: Invalid value: \"WaitForFirstConsumer\": field is immutable"}},
      {"class may allow expansion later", "StorageClass", "{}",
       R"({"allowVolumeExpansion": true})", {}},
      {"immutable configmap", "ConfigMap", R"({"immutable": true})", R"({"data": {"k": "w"}})",
       {"data: Forbidden: field is immutable when `immutable` is set"}},
      {"attachment spec is immutable", "VolumeAttachment", "{}", R"({"spec": {"nodeName": "n2"}})",
       {"spec: Invalid value: {\"attacher\":\"disk.csi.example.com\",\"nodeName\":\"n2\","
        "\"source\":{\"persistentVolumeName\":\"pv1\"}}: field is immutable"}},
      {"attachment status may change", "VolumeAttachment", "{}",
       R"({"status": {"attached": true}})", {}},
      {"pod image may change", "Pod", "{}",
       R"({"spec": {"containers": [{"name": "c", "image": "busybox:2", "imagePullPolicy": "Always",
           "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}})", {}},
      {"pod volumes are immutable", "Pod", "{}",
       R"({"spec": {"volumes": [{"name": "data", "emptyDir": {"medium": "Memory"}}]}})",
       {"spec: Forbidden: pod updates may not change fields other than "
        "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
        "`spec.tolerations` (only additions to existing tolerations),"
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
        "negative)"}},
      {"snapshot source claim is immutable", "VolumeSnapshot", "{}",
       R"({"spec": {"source": {"persistentVolumeClaimName": "other"}}})",
       {"spec.source.persistentVolumeClaimName: Invalid value: \"string\": "
        "persistentVolumeClaimName is immutable"}},
      {"snapshot source may not switch to a content", "VolumeSnapshot", "{}",
       R"({"spec": {"source": {"persistentVolumeClaimName": null, "volumeSnapshotContentName": "c"}}})",
       {"spec.source: Invalid value: \"object\": persistentVolumeClaimName is required once set"}},
      {"snapshot status may change", "VolumeSnapshot", "{}",
       R"({"status": {"readyToUse": true, "restoreSize": "1Gi"}})", {}},
      {"content handle is immutable", "VolumeSnapshotContent", "{}",
       R"({"spec": {"source": {"volumeHandle": "vol-2"}}})",
       {"spec.source.volumeHandle: Invalid value: \"string\": volumeHandle is immutable"}},
      {"content volume mode stays once set", "VolumeSnapshotContent",
       R"({"spec": {"sourceVolumeMode": "Filesystem"}})", R"({"spec": {"sourceVolumeMode": null}})",
       {"spec: Invalid value: \"object\": sourceVolumeMode is required once set"}},
      {"content status takes the handle", "VolumeSnapshotContent", "{}",
       R"({"status": {"snapshotHandle": "snap-1", "readyToUse": true, "restoreSize": 1048576,
           "creationTime": 1700000000000000000}})", {}},
      {"no finalizers added while deleting", "PersistentVolumeClaim",
       R"({"metadata": {"deletionTimestamp": "2022-02-18T13:51:25Z"}})",
       R"({"metadata": {"finalizers": ["example.com/x"]}})",
       {"metadata.finalizers: Forbidden: no new finalizers can be added if the object is being "
        "deleted, found new finalizers []string{\"example.com/x\"}"}},
  };
  for (const auto& row : kRows) {
    Json old = Json::parse(BaseFor(row.kind));
    old.merge_patch(Json::parse(row.old_patch));
    Json patch = Json::parse(row.new_patch);
    EXPECT_EQ(Strings(Dispatch(row.kind, old, &patch)), row.errors) << row.name;
  }
}

TEST(ValidationTest, ErrorFormatting) {
  EXPECT_EQ(AggregateMessage({Required(Path("spec").Child("capacity"))}),
            "spec.capacity: Required value");
  EXPECT_EQ(AggregateMessage({Required(Path("spec").Child("accessModes")),
                              Required(Path("spec").Child("capacity"))}),
            "[spec.accessModes: Required value, spec.capacity: Required value]");
  EXPECT_EQ(Invalid(Path("a"), "x\"y\n", "bad").ToString(), "a: Invalid value: \"x\\\"y\\n\": bad");
  EXPECT_EQ(TooMany(Path("a"), 5, 3).ToString(), "a: Too many: 5: must have at most 3 items");
  EXPECT_EQ(Path("spec").Child("volumes").Index(2).Child("name").str(), "spec.volumes[2].name");
  EXPECT_EQ(Path("spec").Child("capacity").Key("storage").str(), "spec.capacity[storage]");
}

}  // namespace
}  // namespace kvol::api
