// The JSON codec: every kind decodes and re-encodes as Kubernetes writes it, unknown fields
// survive anywhere, absent optional fields stay absent, and wrong types are field errors.
#include "api/codec.h"

#include <gtest/gtest.h>

#include "api/core.h"
#include "api/scheme.h"
#include "api/storage.h"

namespace kvol::api {
namespace {

Json J(const char* text) { return Json::parse(text); }

template <class T>
Json RoundTrip(const Json& in, FieldErrors* errors) {
  return EncodeStruct(DecodeStruct<T>(in, errors));
}

template <class T>
void ExpectRoundTrip(const char* text) {
  Json in = J(text);
  FieldErrors errors;
  Json out = RoundTrip<T>(in, &errors);
  EXPECT_TRUE(errors.empty()) << AggregateMessage(errors);
  EXPECT_EQ(out, in) << "in:  " << in.dump() << "\nout: " << out.dump();
}

TEST(CodecTest, PersistentVolumeRoundTrip) {
  ExpectRoundTrip<PersistentVolume>(R"({
    "apiVersion": "v1", "kind": "PersistentVolume",
    "metadata": {"name": "nfs-pv", "labels": {"app": "nfs"}, "uid": "u-1",
                 "resourceVersion": "42", "generation": 3,
                 "creationTimestamp": "2022-02-18T13:51:25Z",
                 "finalizers": ["kubernetes.io/pv-protection"],
                 "annotations": {"pv.kubernetes.io/bound-by-controller": "yes"}},
    "spec": {"capacity": {"storage": "5Gi"}, "volumeMode": "Filesystem",
             "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
             "persistentVolumeReclaimPolicy": "Recycle", "storageClassName": "slow",
             "mountOptions": ["hard", "nfsvers=4.2"],
             "nfs": {"path": "/mnt/nfs_share", "server": "192.168.3.103", "readOnly": true},
             "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "default",
                          "name": "nfs-pvc", "uid": "c-1", "apiVersion": "v1",
                          "resourceVersion": "7"},
             "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                 {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}}},
    "status": {"phase": "Bound", "lastPhaseTransitionTime": "2022-02-18T13:51:26Z"}})");
}

TEST(CodecTest, PersistentVolumeSourcesRoundTrip) {
  ExpectRoundTrip<PersistentVolume>(R"({"apiVersion": "v1", "kind": "PersistentVolume",
    "metadata": {"name": "csi"},
    "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOncePod"],
      "csi": {"driver": "hostpath.csi.k8s.io", "volumeHandle": "vol-1", "readOnly": true,
              "fsType": "ext4", "volumeAttributes": {"a": "b"},
              "controllerPublishSecretRef": {"name": "s", "namespace": "ns"},
              "nodeStageSecretRef": {"name": "s2", "namespace": "ns"},
              "nodePublishSecretRef": {"name": "s3", "namespace": "ns"},
              "controllerExpandSecretRef": {"name": "s4", "namespace": "ns"},
              "nodeExpandSecretRef": {"name": "s5", "namespace": "ns"}}}})");
  ExpectRoundTrip<PersistentVolume>(R"({"metadata": {"name": "l"},
    "spec": {"local": {"path": "/data/nginx", "fsType": "xfs"}, "volumeMode": "Block"}})");
  ExpectRoundTrip<PersistentVolume>(R"({"metadata": {"name": "f"},
    "spec": {"flexVolume": {"driver": "alicloud/disk", "fsType": "ext4",
             "secretRef": {"name": "x", "namespace": "y"}, "readOnly": true,
             "options": {"volumeId": "d-8vb4fflsonz21h31cmss"}}}})");
  ExpectRoundTrip<PersistentVolume>(R"({"metadata": {"name": "h"},
    "spec": {"hostPath": {"path": "/data", "type": "DirectoryOrCreate"}}})");
  // Sources kvol does not model survive unchanged.
  ExpectRoundTrip<PersistentVolume>(R"({"metadata": {"name": "other"},
    "spec": {"iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": "iqn.2001-04.com.example:t",
                       "lun": 0, "chapAuthSession": true},
             "rbd": {"monitors": ["a", "b"], "image": "foo"},
             "cephfs": {"monitors": ["m"]}, "fc": {"wwids": ["w"]},
             "volumeAttributesClassName": "gold"}})");
}

// The CSI and FlexVolume sources, and a claim's selector and data sources, are held on the heap
// (Boxed): copies are deep, equality looks at the contents, and both decoders fill them as they
// fill std::optional members.
TEST(CodecTest, BoxedSourcesCopyCompareAndDecode) {
  const char* text =
      R"({"metadata":{"name":"csi"},"spec":{"csi":{"driver":"d","volumeHandle":"h1"}}})";
  FieldErrors errors;
  PersistentVolume tree = DecodeStruct<PersistentVolume>(J(text), &errors);
  ASSERT_TRUE(errors.empty());
  PersistentVolume fast;
  ASSERT_TRUE(DecodeJsonText(text, fast));
  ASSERT_TRUE(fast.spec.csi.has_value());
  EXPECT_FALSE(fast.spec.flex_volume.has_value());
  EXPECT_TRUE(fast == tree);
  EXPECT_EQ(EncodeJsonText(fast), EncodeJsonText(tree));
  PersistentVolume copy = fast;
  copy.spec.csi->volume_handle = "h2";
  EXPECT_EQ(fast.spec.csi->volume_handle, "h1") << "a copy has its own source";
  EXPECT_FALSE(copy == fast);
  copy.spec.csi.reset();
  EXPECT_FALSE(copy.spec.csi);
  EXPECT_EQ(EncodeJsonText(copy), R"({"metadata":{"name":"csi"}})");

  // A claim's selector, dataSource and dataSourceRef are Boxed too.
  const char* claim_text =
      R"({"metadata":{"name":"c"},"spec":{"selector":{"matchLabels":{"app":"nfs"}},)"
      R"("dataSource":{"kind":"PersistentVolumeClaim","name":"src"}}})";
  PersistentVolumeClaim claim;
  ASSERT_TRUE(DecodeJsonText(claim_text, claim));
  ASSERT_TRUE(claim.spec.selector && claim.spec.data_source);
  EXPECT_FALSE(claim.spec.data_source_ref);
  EXPECT_TRUE(claim == DecodeStruct<PersistentVolumeClaim>(J(claim_text), &errors));
  PersistentVolumeClaim claim_copy = claim;
  claim_copy.spec.selector->match_labels["app"] = "db";
  EXPECT_EQ(claim.spec.selector->match_labels.at("app"), "nfs") << "a copy has its own selector";
  claim_copy.spec.selector.reset();
  claim_copy.spec.data_source.reset();
  EXPECT_EQ(EncodeJsonText(claim_copy), R"({"metadata":{"name":"c"}})");
}

TEST(CodecTest, ClaimStorageClassNameAbsentVersusEmpty) {
  FieldErrors errors;
  auto absent = DecodeStruct<PersistentVolumeClaim>(J(R"({"spec": {}})"), &errors);
  auto empty = DecodeStruct<PersistentVolumeClaim>(J(R"({"spec": {"storageClassName": ""}})"),
                                                   &errors);
  EXPECT_FALSE(absent.spec.storage_class_name.has_value());
  ASSERT_TRUE(empty.spec.storage_class_name.has_value());
  EXPECT_EQ(*empty.spec.storage_class_name, "");
  EXPECT_FALSE(EncodeStruct(absent)["spec"].is_object());
  EXPECT_EQ(EncodeStruct(empty)["spec"]["storageClassName"], "");
  ExpectRoundTrip<PersistentVolumeClaim>(R"({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
    "metadata": {"name": "c", "namespace": "default"},
    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
             "resources": {"requests": {"storage": "5Gi"}, "limits": {"storage": "10Gi"}},
             "selector": {"matchLabels": {"app": "nfs"},
                          "matchExpressions": [{"key": "tier", "operator": "NotIn",
                                                "values": ["db"]}]},
             "volumeMode": "Block", "volumeName": "pv-1",
             "dataSource": {"kind": "PersistentVolumeClaim", "name": "src"},
             "dataSourceRef": {"apiGroup": "snapshot.storage.k8s.io",
                               "kind": "VolumeSnapshot", "name": "snap", "namespace": "other"}},
    "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"],
               "capacity": {"storage": "5Gi"}, "allocatedResources": {"storage": "5Gi"},
               "allocatedResourceStatuses": {"storage": "ControllerResizeInProgress"},
               "conditions": [{"type": "Resizing", "status": "True",
                               "lastTransitionTime": "2022-02-18T13:51:25Z"}]}})");
}

TEST(CodecTest, PodRoundTrip) {
  ExpectRoundTrip<Pod>(R"({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default", "generateName": "p-",
                 "deletionTimestamp": "2022-02-18T13:51:25Z", "deletionGracePeriodSeconds": 30,
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                      "name": "rs", "uid": "u", "controller": true,
                                      "blockOwnerDeletion": true}]},
    "spec": {
      "volumes": [
        {"name": "a", "emptyDir": {}},
        {"name": "b", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
        {"name": "c", "hostPath": {"path": "/data", "type": ""}},
        {"name": "d", "persistentVolumeClaim": {"claimName": "pvc", "readOnly": true}},
        {"name": "e", "configMap": {"name": "cm", "defaultMode": 420, "optional": false,
                                    "items": [{"key": "k", "path": "p", "mode": 256}]}},
        {"name": "f", "secret": {"secretName": "s", "defaultMode": 256}},
        {"name": "g", "downwardAPI": {"items": [
            {"path": "labels", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}},
            {"path": "cpu", "resourceFieldRef": {"containerName": "c", "resource": "limits.cpu",
                                                 "divisor": "1m"}}]}},
        {"name": "h", "projected": {"defaultMode": 420, "sources": [
            {"configMap": {"name": "cm"}}, {"secret": {"name": "s", "optional": true}},
            {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}},
            {"serviceAccountToken": {"audience": "a", "expirationSeconds": 3600, "path": "t"}},
            {"clusterTrustBundle": {"name": "b", "path": "ca.pem"}}]}},
        {"name": "i", "nfs": {"server": "s", "path": "/x"}},
        {"name": "j", "csi": {"driver": "d", "readOnly": true, "fsType": "ext4",
                              "volumeAttributes": {"k": "v"},
                              "nodePublishSecretRef": {"name": "s"}}},
        {"name": "k", "flexVolume": {"driver": "x/y", "options": {"a": "b"}}},
        {"name": "l", "gitRepo": {"repository": "r"}},
        {"name": "m", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}}],
      "initContainers": [{"name": "init", "image": "busybox", "command": ["true"]}],
      "containers": [{"name": "c1", "image": "busybox", "command": ["sleep", "86400"],
                      "args": ["a"], "workingDir": "/w",
                      "env": [{"name": "A", "value": "1"},
                              {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                              {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
                              {"name": "D", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "optional": true}}}],
                      "resources": {"limits": {"cpu": "500m", "memory": "128Mi"},
                                    "requests": {"cpu": "250m"}},
                      "volumeMounts": [{"name": "a", "mountPath": "/path1", "readOnly": true,
                                        "subPath": "x", "mountPropagation": "None"}],
                      "volumeDevices": [{"name": "d", "devicePath": "/dev/xvda"}],
                      "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}],
                      "livenessProbe": {"exec": {"command": ["true"]}},
                      "imagePullPolicy": "IfNotPresent",
                      "terminationMessagePath": "/dev/termination-log",
                      "terminationMessagePolicy": "File"}],
      "restartPolicy": "OnFailure", "terminationGracePeriodSeconds": 1,
      "dnsPolicy": "ClusterFirst", "nodeSelector": {"disk": "ssd"},
      "serviceAccountName": "sa", "nodeName": "n1", "schedulerName": "default-scheduler",
      "affinity": {"nodeAffinity": {
          "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
              {"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["3"]}],
               "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]},
          "preferredDuringSchedulingIgnoredDuringExecution": [
              {"weight": 10, "preference": {"matchExpressions": [{"key": "z", "operator": "Exists"}]}}]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}},
      "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoExecute",
                       "tolerationSeconds": 30}],
      "hostNetwork": true, "priority": 0},
    "status": {"phase": "Running", "hostIP": "10.0.0.1", "podIP": "10.244.2.13",
               "startTime": "2022-02-18T13:51:25Z",
               "conditions": [{"type": "Ready", "status": "True"}],
               "containerStatuses": [{"name": "c1", "ready": true, "restartCount": 0,
                                      "image": "busybox", "imageID": "",
                                      "state": {"running": {"startedAt": "2022-02-18T13:51:25Z"}},
                                      "lastState": {"terminated": {"exitCode": 0, "reason": "Completed"}},
                                      "started": true}],
               "qosClass": "Burstable"}})");
}

TEST(CodecTest, StorageKindsRoundTrip) {
  ExpectRoundTrip<StorageClass>(R"({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
    "metadata": {"name": "nfs-storage",
                 "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
    "provisioner": "nfs-client", "mountOptions": ["hard", "nfsvers=4.2"],
    "parameters": {"archiveOnDelete": "true"}, "reclaimPolicy": "Retain",
    "allowVolumeExpansion": false, "volumeBindingMode": "WaitForFirstConsumer",
    "allowedTopologies": [{"matchLabelExpressions": [
        {"key": "topology.kubernetes.io/zone", "values": ["a", "b"]}]}]})");
  ExpectRoundTrip<VolumeAttachment>(R"({"apiVersion": "storage.k8s.io/v1",
    "kind": "VolumeAttachment", "metadata": {"name": "csi-123"},
    "spec": {"attacher": "ossplugin.csi.alibabacloud.com", "nodeName": "n1",
             "source": {"persistentVolumeName": "oss-csi-pv"}},
    "status": {"attached": false, "attachmentMetadata": {"devicePath": "/dev/vdb"},
               "attachError": {"time": "2022-02-18T13:51:25Z", "message": "boom",
                               "errorCode": 13}}})");
  ExpectRoundTrip<CSIDriver>(R"({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
    "metadata": {"name": "disk.csi"},
    "spec": {"attachRequired": true, "podInfoOnMount": false, "storageCapacity": true,
             "volumeLifecycleModes": ["Persistent", "Ephemeral"], "fsGroupPolicy": "File",
             "tokenRequests": [{"audience": "x", "expirationSeconds": 3600}],
             "requiresRepublish": false, "seLinuxMount": true}})");
  ExpectRoundTrip<CSINode>(R"({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
    "metadata": {"name": "n1"},
    "spec": {"drivers": [{"name": "disk.csi", "nodeID": "n1",
                          "topologyKeys": ["topology.kubernetes.io/zone"],
                          "allocatable": {"count": 16}}]}})");
  ExpectRoundTrip<Lease>(R"({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
    "metadata": {"name": "kvol-controller", "namespace": "kube-system"},
    "spec": {"holderIdentity": "host-1", "leaseDurationSeconds": 15,
             "acquireTime": "2022-02-18T13:51:25.123456Z",
             "renewTime": "2022-02-18T13:51:30.000001Z", "leaseTransitions": 2}})");
}

TEST(CodecTest, CoreKindsRoundTrip) {
  ExpectRoundTrip<Node>(R"({"apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
    "spec": {"podCIDR": "10.244.0.0/24", "providerID": "p", "unschedulable": true,
             "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
    "status": {"capacity": {"cpu": "2", "memory": "24Gi", "attachable-volumes-csi-x": "39"},
               "allocatable": {"cpu": "1900m"},
               "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                               "lastHeartbeatTime": "2022-02-18T13:51:25Z"}],
               "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
               "volumesInUse": ["kubernetes.io/csi/d^v"],
               "volumesAttached": [{"name": "kubernetes.io/csi/d^v", "devicePath": ""}],
               "nodeInfo": {"kubeletVersion": "v1.32.0"}}})");
  ExpectRoundTrip<Namespace>(R"({"apiVersion": "v1", "kind": "Namespace",
    "metadata": {"name": "default"}, "spec": {"finalizers": ["kubernetes"]},
    "status": {"phase": "Active"}})");
  ExpectRoundTrip<ConfigMap>(R"({"apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"name": "log-config"}, "immutable": true,
    "data": {"log_level": "INFO", "ui.properties": "color.good=purple\n"},
    "binaryData": {"b": "AAEC"}})");
  ExpectRoundTrip<Secret>(R"({"apiVersion": "v1", "kind": "Secret",
    "metadata": {"name": "s"}, "type": "Opaque", "data": {"password": "c2VjcmV0"},
    "stringData": {"user": "admin"}})");
  ExpectRoundTrip<Event>(R"({"apiVersion": "v1", "kind": "Event",
    "metadata": {"name": "nginx-pvc.17c5", "namespace": "default"},
    "involvedObject": {"kind": "PersistentVolumeClaim", "namespace": "default",
                       "name": "nginx-pvc", "uid": "u", "apiVersion": "v1",
                       "resourceVersion": "9"},
    "reason": "WaitForFirstConsumer",
    "message": "waiting for first consumer to be created before binding",
    "source": {"component": "persistentvolume-controller"},
    "firstTimestamp": "2022-02-18T13:51:25Z", "lastTimestamp": "2022-02-18T13:53:25Z",
    "count": 10, "type": "Normal", "eventTime": "2022-02-18T13:51:25.000000Z",
    "reportingComponent": "persistentvolume-controller", "reportingInstance": ""})");
}

TEST(CodecTest, AbsentFieldsStayAbsent) {
  for (const char* text : {R"({"metadata": {"name": "x"}})", R"({})",
                           R"({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}})"}) {
    ExpectRoundTrip<Pod>(text);
  }
  FieldErrors errors;
  Json out = EncodeStruct(DecodeStruct<PersistentVolume>(J(R"({"metadata": {"name": "x"}})"),
                                                          &errors));
  EXPECT_EQ(out, J(R"({"metadata": {"name": "x"}})"));
}

TEST(CodecTest, NullMeansAbsent) {
  FieldErrors errors;
  auto pv = DecodeStruct<PersistentVolume>(
      J(R"({"metadata": {"name": "x", "creationTimestamp": null, "labels": null},
            "spec": {"storageClassName": null, "volumeMode": null, "accessModes": [null]}})"),
      &errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_FALSE(pv.metadata.creation_timestamp.has_value());
  EXPECT_FALSE(pv.spec.volume_mode.has_value());
  ASSERT_EQ(pv.spec.access_modes.size(), 1u);
  EXPECT_EQ(pv.spec.access_modes[0], "");
}

TEST(CodecTest, UnknownFieldsAtEveryLevel) {
  ExpectRoundTrip<Pod>(R"({"apiVersion": "v1", "kind": "Pod", "futureTopLevel": {"a": [1, 2]},
    "metadata": {"name": "x", "managedFields": [{"manager": "kubectl"}], "selfLink": "/x"},
    "spec": {"containers": [{"name": "c", "image": "i", "futureContainerField": 1,
                             "volumeMounts": [{"name": "v", "mountPath": "/v",
                                               "recursiveReadOnly": "Enabled"}]}],
             "volumes": [{"name": "v", "emptyDir": {"futureEmptyDirField": true}}]},
    "status": {"futureStatus": "x", "containerStatuses": [{"name": "c", "ready": false,
               "restartCount": 1, "image": "i", "imageID": "x", "allocatedResources": {}}]}})");
}

TEST(CodecTest, QuantitiesAreWrittenCanonically) {
  FieldErrors errors;
  Json out = RoundTrip<PersistentVolume>(
      J(R"({"spec": {"capacity": {"storage": "1.5Gi"}}})"), &errors);
  EXPECT_EQ(out["spec"]["capacity"]["storage"], "1536Mi");
  // A bare number is read as the quantity it spells, as Kubernetes does.
  out = RoundTrip<PersistentVolume>(J(R"({"spec": {"capacity": {"storage": 5}}})"), &errors);
  EXPECT_EQ(out["spec"]["capacity"]["storage"], "5");
  out = RoundTrip<PersistentVolume>(J(R"({"spec": {"capacity": {"storage": 1.5}}})"), &errors);
  EXPECT_EQ(out["spec"]["capacity"]["storage"], "1500m");
  EXPECT_TRUE(errors.empty()) << AggregateMessage(errors);
}

TEST(CodecTest, TextEncodingWritesTheSameDocument) {
  const char* docs[] = {
      R"({"apiVersion": "v1", "kind": "PersistentVolume",
          "metadata": {"name": "pv1", "labels": {"b": "2", "a": "1"}, "x-unknown": [1, {"k": null}]},
          "spec": {"capacity": {"storage": "1.5Gi"}, "accessModes": ["ReadWriteOnce"],
                   "hostPath": {"path": "/d\"q\\\n\u0001\u007f\u00e9\u65e5"},
                   "iscsi": {"targetPortal": "10.0.0.1:3260", "lun": 0},
                   "claimRef": {}, "mountOptions": []},
          "status": {"phase": "Available"}, "extra": 1.5})",
      R"({"kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
          "spec": {"volumes": [{"name": "v", "emptyDir": {}}, {"name": "w", "configMap": {"name": "c",
                   "items": [{"key": "k", "path": "p", "mode": 420}]}}],
                   "containers": [{"name": "c", "image": "busybox", "volumeMounts":
                   [{"name": "v", "mountPath": "/v", "readOnly": true}]}]}})",
  };
  for (const char* text : docs) {
    Json in = J(text);
    FieldErrors errors;
    if (in["kind"] == "Pod") {
      Pod pod = DecodeStruct<Pod>(in, &errors);
      EXPECT_EQ(Json::parse(EncodeJsonText(pod)), EncodeStruct(pod));
    } else {
      PersistentVolume pv = DecodeStruct<PersistentVolume>(in, &errors);
      std::string text_out = EncodeJsonText(pv);
      EXPECT_EQ(Json::parse(text_out), EncodeStruct(pv)) << text_out;
      // Fields in the order Kubernetes writes them, unknown fields after.
      EXPECT_LT(text_out.find("\"apiVersion\""), text_out.find("\"kind\""));
      EXPECT_LT(text_out.find("\"spec\""), text_out.find("\"extra\""));
    }
    EXPECT_TRUE(errors.empty()) << AggregateMessage(errors);
  }
  for (std::string s : {std::string("plain"), std::string("q\"b\\n\n\t\x01\x1f"),
                        std::string("bad \xff utf8 \xe6\xa6"), std::string("\xe6\x97\xa5")}) {
    std::string out;
    AppendJsonString(s, out);
    EXPECT_EQ(out, DumpJson(Json(s))) << s;
  }
}

// DecodeJsonText either gives exactly what ParseJson + DecodeStruct give, or declines.
template <class T>
bool TextDecodeAgrees(std::string_view text) {
  T fast;
  const bool took = DecodeJsonText(text, fast);
  auto tree = ParseJson(text);
  FieldErrors errors;
  T slow;
  if (tree.ok()) slow = DecodeStruct<T>(*tree, &errors);
  if (!took) return false;
  EXPECT_TRUE(tree.ok()) << text;
  EXPECT_TRUE(errors.empty()) << text << ": " << AggregateMessage(errors);
  EXPECT_TRUE(fast == slow) << text;
  EXPECT_EQ(EncodeJsonText(fast), EncodeJsonText(slow)) << text;
  return true;
}

TEST(CodecTest, TextDecodingGivesWhatTheTreeDecoderGives) {
  // Taken on by the fast path.
  const char* taken[] = {
      R"({"apiVersion": "v1", "kind": "PersistentVolume",
          "metadata": {"name": "pv1", "labels": {"b": "2", "a": "1"}, "x-unknown": [1, {"k": null}],
                       "creationTimestamp": "2024-05-01T10:00:00Z", "generation": 3,
                       "annotations": {"e": "", "n": null}, "finalizers": null},
          "spec": {"capacity": {"storage": " 1.5Gi "}, "accessModes": ["ReadWriteOnce", null],
                   "hostPath": {"path": "/d\"q\\\n\u0001\u007f\u00e9\u65e5\ud83d\ude00\/"},
                   "iscsi": {"targetPortal": "10.0.0.1:3260", "lun": -7, "readOnly": true},
                   "claimRef": {}, "mountOptions": [], "nfs": null},
          "status": {"phase": "Available"}, "extra": 1.5, "nothing": null})",
      "  {\n\t\"kind\" :\"PersistentVolume\" , \"metadata\":{ } }\r\n",
      "{}",
      "{\"metadata\": {\"name\": \"\xc3\xa9t\xc3\xa9\", \"uid\": \"u\"}, \"spec\": {\"local\": {\"path\": \"/x\"}}}",
  };
  for (const char* text : taken) {
    SCOPED_TRACE(text);
    EXPECT_TRUE(TextDecodeAgrees<PersistentVolume>(text));
  }
  EXPECT_TRUE(TextDecodeAgrees<Pod>(
      R"({"kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
          "spec": {"volumes": [{"name": "v", "emptyDir": {}}, {"name": "w", "configMap": {"name": "c",
                   "items": [{"key": "k", "path": "p", "mode": 420}]}}],
                   "containers": [{"name": "c", "image": "busybox", "volumeMounts":
                   [{"name": "v", "mountPath": "/v", "readOnly": true}]}]}})"));
  // Left to the slow path: errors, repeated keys, numbers it does not write back itself,
  // escaped keys, anything malformed.
  const char* declined[] = {
      R"({"metadata": {"name": "a", "name": "b"}})",
      R"({"metadata": {"labels": {"a": "1", "a": "2"}}})",
      R"({"spec": {"capacity": {"storage": 1}}})",
      R"({"spec": {"capacity": {"storage": "1Q"}}})",
      R"({"metadata": {"generation": 1.0}})",
      R"({"metadata": {"generation": -0}})",
      R"({"metadata": {"generation": 01}})",
      R"({"metadata": {"generation": 99999999999999999999}})",
      R"({"metadata": {"name": 5}})",
      R"({"metadata": {"n\u0061me": "a"}})",
      R"({"metadata": {"name": "a\ud800"}})",
      R"({"metadata": {"name": "a\x"}})",
      "{\"metadata\": {\"name\": \"bad \xff\"}}",
      "{\"metadata\": {\"name\": \"tab\there\"}}",
      R"({"metadata": {"creationTimestamp": "yesterday"}})",
      R"({"metadata": {}} x)",
      R"({"metadata": {})",
      R"({"extra": [1, }})",
      R"([])",
      R"(null)",
      "",
  };
  for (const char* text : declined) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(TextDecodeAgrees<PersistentVolume>(text));
  }
  // More keys at one level than the fast path keeps on the stack: distinct ones are taken,
  // a repeat is declined wherever the first of the two was kept.
  auto many_keys = [](int n, std::string repeat) {
    std::string text = R"({"metadata": {"name": "a")";
    for (int i = 0; i < n; ++i) text += ",\"k" + std::to_string(i) + "\": " + std::to_string(i);
    if (!repeat.empty()) text += ",\"" + repeat + "\": 0";
    return text + "}}";
  };
  EXPECT_TRUE(TextDecodeAgrees<PersistentVolume>(many_keys(40, "")));
  for (const char* repeat : {"name", "k3", "k20", "k39"}) {
    SCOPED_TRACE(repeat);
    EXPECT_FALSE(TextDecodeAgrees<PersistentVolume>(many_keys(40, repeat)));
  }
  EXPECT_FALSE(TextDecodeAgrees<Pod>(
      R"({"spec": {"volumes": [{"name": "v", "configMap": {"defaultMode": 4294967296}}]}})"));
  // Nesting past the limit is refused by both, however it is reached.
  std::string deep = R"({"extra": )" + std::string(300, '[') + std::string(300, ']') + "}";
  EXPECT_FALSE(TextDecodeAgrees<PersistentVolume>(deep));
  EXPECT_FALSE(ParseJson(deep).ok());
}

TEST(CodecTest, TimesKeepTheirWirePrecision) {
  // Sub-second digits beyond what a field writes are dropped on read, so a decoded object equals
  // its own round trip (Time: seconds; MicroTime: microseconds).
  const Json in = J(R"({"metadata": {"name": "l", "creationTimestamp": "2022-02-18T13:51:25.9Z"},
                        "spec": {"renewTime": "2022-02-18T13:51:25.0006001Z"}})");
  FieldErrors errors;
  Lease once = DecodeStruct<Lease>(in, &errors);
  Json out = EncodeStruct(once);
  EXPECT_EQ(out["metadata"]["creationTimestamp"], "2022-02-18T13:51:25Z");
  EXPECT_EQ(out["spec"]["renewTime"], "2022-02-18T13:51:25.000600Z");
  Lease again = DecodeStruct<Lease>(out, &errors);
  EXPECT_TRUE(again == once);
  EXPECT_TRUE(errors.empty()) << AggregateMessage(errors);
}

TEST(CodecTest, WrongTypesAreFieldErrors) {
  struct Case {
    const char* json;
    const char* error;
  };
  const Case kCases[] = {
      {R"({"metadata": {"labels": {"version": 1.1}}})",
       "metadata.labels[version]: Invalid value: 1.1: must be a string, not a number"},
      {R"({"metadata": {"name": 7}})",
       "metadata.name: Invalid value: 7: must be a string, not a number"},
      {R"({"metadata": []})", "metadata: Invalid value: []: must be an object, not a list"},
      {R"({"spec": {"accessModes": "ReadWriteOnce"}})",
       "spec.accessModes: Invalid value: \"ReadWriteOnce\": must be a list, not a string"},
      {R"({"spec": {"capacity": {"storage": "5GB"}}})",
       "spec.capacity[storage]: Invalid value: \"5GB\": quantities must match the regular "
       "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
      {R"({"spec": {"capacity": {"storage": true}}})",
       "spec.capacity[storage]: Invalid value: true: must be a quantity string, not a boolean"},
      {R"({"spec": {"nfs": {"readOnly": "yes"}}})",
       "spec.nfs.readOnly: Invalid value: \"yes\": must be a boolean, not a string"},
      {R"({"metadata": {"generation": 1.5}})",
       "metadata.generation: Invalid value: 1.5: must be an integer within int64 range"},
      {R"({"metadata": {"creationTimestamp": "yesterday"}})",
       "metadata.creationTimestamp: Invalid value: \"yesterday\": parsing time \"yesterday\": "
       "not an RFC 3339 time (2006-01-02T15:04:05Z07:00)"},
      {R"({"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions":
           [{"key": "k", "operator": "In", "values": [1]}]}]}}}})",
       "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid "
       "value: 1: must be a string, not a number"},
  };
  for (const auto& c : kCases) {
    FieldErrors errors;
    DecodeStruct<PersistentVolume>(J(c.json), &errors);
    ASSERT_EQ(errors.size(), 1u) << c.json << " -> " << AggregateMessage(errors);
    EXPECT_EQ(errors[0].ToString(), c.error);
  }
  FieldErrors errors;
  DecodeStruct<Pod>(J(R"({"spec": {"volumes": [{"name": "v", "secret": {"defaultMode": 4294967296}}]}})"),
                    &errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].ToString(),
            "spec.volumes[0].secret.defaultMode: Invalid value: 4294967296: must be an integer "
            "within int32 range");
}

TEST(CodecTest, JsonNumbersFormatAsGoDoes) {
  EXPECT_EQ(FormatJsonNumber(Json(5)), "5");
  EXPECT_EQ(FormatJsonNumber(Json(-5)), "-5");
  EXPECT_EQ(FormatJsonNumber(Json(1.5)), "1.5");
  EXPECT_EQ(FormatJsonNumber(Json(1000.0)), "1000");
  EXPECT_EQ(FormatJsonNumber(Json(1e21)), "1e+21");
  EXPECT_EQ(FormatJsonNumber(Json(1e-7)), "1e-7");
  EXPECT_EQ(FormatJsonNumber(Json(0.000001)), "0.000001");
  EXPECT_EQ(FormatJsonNumber(Json(18446744073709551615ull)), "18446744073709551615");
}

TEST(CodecTest, ParseJsonReportsPositionAndLimitsDepth) {
  auto ok = ParseJson(R"({"a": [1, 2]})");
  ASSERT_TRUE(ok.ok());
  auto bad = ParseJson("{\n  \"a\": [1, 2,\n}");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("line 3, column 1: syntax error", 0), 0u)
      << bad.status().message();
  std::string deep(kMaxJsonDepth + 1, '[');
  deep += std::string(kMaxJsonDepth + 1, ']');
  auto too_deep = ParseJson(deep);
  ASSERT_FALSE(too_deep.ok());
  EXPECT_NE(too_deep.status().message().find("nesting deeper than"), std::string::npos);
  std::string fine(kMaxJsonDepth, '[');
  fine += std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(ParseJson(fine).ok());
  // Brackets inside strings do not count.
  EXPECT_TRUE(ParseJson("{\"a\": \"" + std::string(1000, '[') + "\"}").ok());
}

TEST(CodecTest, KindTable) {
  const KindInfo* pv = FindKind("v1", "PersistentVolume");
  ASSERT_NE(pv, nullptr);
  EXPECT_EQ(pv->resource, "persistentvolumes");
  EXPECT_FALSE(pv->namespaced);
  EXPECT_EQ(pv->short_names, std::vector<std::string_view>{"pv"});
  const KindInfo* sc = FindKind("storage.k8s.io/v1", "StorageClass");
  ASSERT_NE(sc, nullptr);
  EXPECT_EQ(sc->ApiVersion(), "storage.k8s.io/v1");
  EXPECT_EQ(FindKind("v1", "StorageClass"), nullptr);
  EXPECT_NE(FindKind("apps/v1", "Deployment"), nullptr);
  EXPECT_EQ(FindKind("apps/v1", "Frobnicator"), nullptr);
  const KindInfo* capacity = FindKind("storage.k8s.io/v1", "CSIStorageCapacity");
  ASSERT_NE(capacity, nullptr);
  EXPECT_EQ(capacity->resource, "csistoragecapacities");
  EXPECT_TRUE(capacity->namespaced);
  const KindInfo* snapshot = FindKind("snapshot.storage.k8s.io/v1", "VolumeSnapshot");
  ASSERT_NE(snapshot, nullptr);
  EXPECT_EQ(snapshot->ShortName(), "vs");
  EXPECT_TRUE(snapshot->namespaced);
  const KindInfo* rc = FindKind("v1", "ReplicationController");
  ASSERT_NE(rc, nullptr);
  EXPECT_EQ(rc->resource, "replicationcontrollers");
  EXPECT_EQ(rc->ShortName(), "rc");
  const KindInfo* quota = FindKind("v1", "ResourceQuota");
  ASSERT_NE(quota, nullptr);
  EXPECT_EQ(quota->resource, "resourcequotas");
  EXPECT_EQ(quota->ShortName(), "quota");
  int kinds = 0;
  ForEachKind([&](auto) { ++kinds; });
  EXPECT_EQ(kinds, 30);
}

}  // namespace
}  // namespace kvol::api
