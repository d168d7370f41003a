// Defaulting as Kubernetes' v1 SetDefaults functions apply it.
#include "api/defaults.h"

#include <gtest/gtest.h>

#include "api/codec.h"

namespace kvol::api {
namespace {

template <class T>
Json Defaulted(const char* json) {
  FieldErrors errors;
  T obj = DecodeStruct<T>(Json::parse(json), &errors);
  EXPECT_TRUE(errors.empty()) << AggregateMessage(errors);
  SetDefaults(obj);
  Json once = EncodeStruct(obj);
  SetDefaults(obj);
  EXPECT_EQ(EncodeStruct(obj), once) << "defaulting is not idempotent";
  return once;
}

TEST(DefaultsTest, PersistentVolume) {
  Json pv = Defaulted<PersistentVolume>(R"({"spec": {"hostPath": {"path": "/d"}}})");
  EXPECT_EQ(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
  EXPECT_EQ(pv["spec"]["volumeMode"], "Filesystem");
  EXPECT_EQ(pv["status"]["phase"], "Pending");
  EXPECT_EQ(pv["spec"]["hostPath"]["type"], "");
  Json kept = Defaulted<PersistentVolume>(
      R"({"spec": {"persistentVolumeReclaimPolicy": "Delete", "volumeMode": "Block"},
          "status": {"phase": "Bound"}})");
  EXPECT_EQ(kept["spec"]["persistentVolumeReclaimPolicy"], "Delete");
  EXPECT_EQ(kept["spec"]["volumeMode"], "Block");
  EXPECT_EQ(kept["status"]["phase"], "Bound");
}

TEST(DefaultsTest, PersistentVolumeClaim) {
  Json pvc = Defaulted<PersistentVolumeClaim>(R"({"spec": {}})");
  EXPECT_EQ(pvc["spec"]["volumeMode"], "Filesystem");
  EXPECT_EQ(pvc["status"]["phase"], "Pending");
  // The storage class is left to admission: absent stays absent.
  EXPECT_FALSE(pvc["spec"].contains("storageClassName"));
}

TEST(DefaultsTest, Pod) {
  Json pod = Defaulted<Pod>(R"({"spec": {
      "containers": [{"name": "a", "image": "busybox"}, {"name": "b", "image": "nginx:1.25",
                      "resources": {"limits": {"cpu": "1"}, "requests": {"memory": "1Gi"}}},
                     {"name": "c", "image": "nginx:latest"}, {"name": "d", "image": "r/x@sha256:ab"},
                     {"name": "e", "image": "localhost:5000/x"}],
      "volumes": [{"name": "none"}, {"name": "cm", "configMap": {"name": "x"}},
                  {"name": "s", "secret": {"secretName": "x", "defaultMode": 256}},
                  {"name": "d", "downwardAPI": {"items": [{"path": "l", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                  {"name": "p", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
                  {"name": "h", "hostPath": {"path": "/data"}},
                  {"name": "g", "gitRepo": {"repository": "r"}}]}})");
  const Json& spec = pod["spec"];
  EXPECT_EQ(spec["restartPolicy"], "Always");
  EXPECT_EQ(spec["dnsPolicy"], "ClusterFirst");
  EXPECT_EQ(spec["terminationGracePeriodSeconds"], 30);
  EXPECT_EQ(spec["schedulerName"], "default-scheduler");
  EXPECT_EQ(spec["securityContext"], Json::object());
  EXPECT_EQ(pod["status"]["phase"], "Pending");
  EXPECT_EQ(spec["containers"][0]["imagePullPolicy"], "Always");
  EXPECT_EQ(spec["containers"][1]["imagePullPolicy"], "IfNotPresent");
  EXPECT_EQ(spec["containers"][2]["imagePullPolicy"], "Always");
  EXPECT_EQ(spec["containers"][3]["imagePullPolicy"], "IfNotPresent");
  EXPECT_EQ(spec["containers"][4]["imagePullPolicy"], "Always");
  EXPECT_EQ(spec["containers"][0]["terminationMessagePath"], "/dev/termination-log");
  EXPECT_EQ(spec["containers"][0]["terminationMessagePolicy"], "File");
  EXPECT_EQ(spec["containers"][1]["resources"]["requests"],
            Json::parse(R"({"cpu": "1", "memory": "1Gi"})"));  // requests default to limits
  const Json& v = spec["volumes"];
  EXPECT_EQ(v[0]["emptyDir"], Json::object());  // a volume with no source is an emptyDir
  EXPECT_EQ(v[1]["configMap"]["defaultMode"], 420);
  EXPECT_EQ(v[2]["secret"]["defaultMode"], 256);
  EXPECT_EQ(v[3]["downwardAPI"]["defaultMode"], 420);
  EXPECT_EQ(v[3]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"], "v1");
  EXPECT_EQ(v[4]["projected"]["defaultMode"], 420);
  EXPECT_EQ(v[4]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"], 3600);
  EXPECT_EQ(v[5]["hostPath"]["type"], "");
  EXPECT_FALSE(v[6].contains("emptyDir"));  // gitRepo is a source, even unmodelled
}

TEST(DefaultsTest, Probes) {
  Json pod = Defaulted<Pod>(R"({"spec": {"containers": [{"name": "a", "image": "busybox",
      "livenessProbe": {"httpGet": {"port": 8080}},
      "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 2,
                         "failureThreshold": 1}}]}})");
  const Json& c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["livenessProbe"], Json::parse(R"({"httpGet": {"path": "/", "port": 8080,
      "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
      "failureThreshold": 3})"));
  EXPECT_EQ(c["readinessProbe"], Json::parse(R"({"exec": {"command": ["true"]},
      "timeoutSeconds": 1, "periodSeconds": 2, "successThreshold": 1, "failureThreshold": 1})"));
  EXPECT_FALSE(c.contains("startupProbe"));
}

TEST(DefaultsTest, StorageKinds) {
  Json sc = Defaulted<StorageClass>(R"({"provisioner": "p"})");
  EXPECT_EQ(sc["reclaimPolicy"], "Delete");
  EXPECT_EQ(sc["volumeBindingMode"], "Immediate");
  EXPECT_FALSE(sc.contains("allowVolumeExpansion"));
  Json wffc = Defaulted<StorageClass>(
      R"({"provisioner": "p", "reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer"})");
  EXPECT_EQ(wffc["reclaimPolicy"], "Retain");
  EXPECT_EQ(wffc["volumeBindingMode"], "WaitForFirstConsumer");
  Json driver = Defaulted<CSIDriver>(R"({"spec": {}})");
  EXPECT_EQ(driver["spec"], Json::parse(R"({"attachRequired": true, "podInfoOnMount": false,
      "storageCapacity": false, "fsGroupPolicy": "ReadWriteOnceWithFSType",
      "volumeLifecycleModes": ["Persistent"], "requiresRepublish": false, "seLinuxMount": false})"));
}

TEST(DefaultsTest, OtherKinds) {
  EXPECT_EQ(Defaulted<Secret>("{}")["type"], "Opaque");
  // stringData merged into data, its values winning, and gone.
  Json secret = Defaulted<Secret>(
      R"({"data": {"a": "b2xk", "b": "Yg=="}, "stringData": {"a": "new", "c": "see"}})");
  EXPECT_EQ(secret["data"], Json::parse(R"({"a": "bmV3", "b": "Yg==", "c": "c2Vl"})"));
  EXPECT_FALSE(secret.contains("stringData"));
  Json ns = Defaulted<Namespace>(R"({"metadata": {"name": "team-a"}})");
  EXPECT_EQ(ns["status"]["phase"], "Active");
  EXPECT_EQ(ns["metadata"]["labels"]["kubernetes.io/metadata.name"], "team-a");
  Json node = Defaulted<Node>(R"({"status": {"capacity": {"cpu": "2"}}})");
  EXPECT_EQ(node["status"]["allocatable"]["cpu"], "2");
}

}  // namespace
}  // namespace kvol::api
