// Table cells as kubectl shows them, and Kubernetes' HumanDuration.
#include "apiserver/tables.h"

#include <gtest/gtest.h>

namespace kvol::apiserver {
namespace {

using api::Json;
using std::chrono::seconds;

TEST(TablesTest, HumanDuration) {
  EXPECT_EQ(HumanDuration(seconds(-5)), "<invalid>");
  EXPECT_EQ(HumanDuration(seconds(-1)), "0s");
  EXPECT_EQ(HumanDuration(seconds(0)), "0s");
  EXPECT_EQ(HumanDuration(seconds(101)), "101s");
  EXPECT_EQ(HumanDuration(seconds(126)), "2m6s");
  EXPECT_EQ(HumanDuration(seconds(300)), "5m");
  EXPECT_EQ(HumanDuration(seconds(19 * 60)), "19m");
  EXPECT_EQ(HumanDuration(seconds(4 * 3600 + 5 * 60)), "4h5m");
  EXPECT_EQ(HumanDuration(seconds(30 * 3600)), "30h");
  EXPECT_EQ(HumanDuration(seconds(3 * 86400 + 3600)), "3d1h");
  EXPECT_EQ(HumanDuration(seconds(100 * 86400)), "100d");
  EXPECT_EQ(HumanDuration(seconds(3 * 365 * 86400 + 2 * 86400)), "3y2d");
  EXPECT_EQ(HumanDuration(seconds(10 * 365 * 86400)), "10y");
}

os::WallTime At(int64_t unix_seconds) {
  return os::WallTime(std::chrono::seconds(unix_seconds));
}

TEST(TablesTest, PersistentVolumesLikeTheSeed) {
  Json pv = Json::parse(R"({"metadata":{"name":"nginx-pv","creationTimestamp":"2022-02-18T13:00:00Z"},
      "spec":{"capacity":{"storage":"5Gi"},"accessModes":["ReadWriteOnce"],
              "persistentVolumeReclaimPolicy":"Delete","storageClassName":"local-storage",
              "volumeMode":"Filesystem"},
      "status":{"phase":"Available"}})");
  Json t = MakeTable("PersistentVolume", {pv}, "7", "", "Metadata", At(1645189200 + 101), true);
  std::vector<std::string> names;
  for (const auto& c : t["columnDefinitions"]) names.push_back(c["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"Name", "Capacity", "Access Modes", "Reclaim Policy",
                                             "Status", "Claim", "StorageClass", "Reason", "Age",
                                             "VolumeMode"}));
  EXPECT_EQ(t["rows"][0]["cells"], Json::parse(R"(["nginx-pv","5Gi","RWO","Delete","Available",
      "","local-storage","","101s","Filesystem"])"));
  EXPECT_EQ(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
  EXPECT_EQ(t["metadata"]["resourceVersion"], "7");
}

TEST(TablesTest, ClaimsClassesAndPods) {
  Json pvc = Json::parse(R"({"metadata":{"name":"nginx-pvc","creationTimestamp":"2022-02-18T13:00:00Z"},
      "spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"local-storage","volumeName":"nginx-pv"},
      "status":{"phase":"Bound","capacity":{"storage":"5Gi"},"accessModes":["ReadWriteOnce","ReadWriteMany"]}})");
  Json t = MakeTable("PersistentVolumeClaim", {pvc}, "1", "", "None", At(1645189200 + 19 * 60), true);
  EXPECT_EQ(t["rows"][0]["cells"], Json::parse(R"(["nginx-pvc","Bound","nginx-pv","5Gi","RWO,RWX",
      "local-storage","19m","<unset>"])"));
  EXPECT_FALSE(t["rows"][0].contains("object"));
  // The beta annotation names the class when present, as kubectl prints it.
  pvc["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"] = "old-style";
  t = MakeTable("PersistentVolumeClaim", {pvc}, "1", "", "None", At(1645189200 + 19 * 60), true);
  EXPECT_EQ(t["rows"][0]["cells"][5], "old-style");

  Json sc = Json::parse(R"({"metadata":{"name":"nfs-storage","creationTimestamp":"2022-02-18T13:00:00Z",
      "annotations":{"storageclass.kubernetes.io/is-default-class":"true"}},"provisioner":"nfs-client"})");
  t = MakeTable("StorageClass", {sc}, "1", "", "Metadata", At(1645189200 + 79), true);
  EXPECT_EQ(t["rows"][0]["cells"], Json::parse(R"x(["nfs-storage (default)","nfs-client","Delete",
      "Immediate","false","79s"])x"));

  Json pod = Json::parse(R"({"metadata":{"name":"hostpath-pod","creationTimestamp":"2022-02-18T13:00:00Z"},
      "spec":{"nodeName":"k8s-node02","containers":[{"name":"busybox"}]},
      "status":{"phase":"Running","podIP":"10.244.2.13","containerStatuses":[
        {"name":"busybox","ready":true,"restartCount":0,"state":{"running":{}}}]}})");
  t = MakeTable("Pod", {pod}, "1", "", "Metadata", At(1645189200 + 114), true);
  EXPECT_EQ(t["rows"][0]["cells"], Json::parse(R"(["hostpath-pod","1/1","Running","0","114s",
      "10.244.2.13","k8s-node02","<none>","<none>"])"));
  pod["metadata"]["deletionTimestamp"] = "2022-02-18T13:01:00Z";
  t = MakeTable("Pod", {pod}, "1", "", "Metadata", At(1645189200 + 114), false);
  EXPECT_EQ(t["rows"][0]["cells"][2], "Terminating");
  EXPECT_TRUE(t["columnDefinitions"].empty());
}

// The additionalPrinterColumns of external-snapshotter's CRDs: absent values are empty cells,
// date columns show how long ago.
TEST(TablesTest, SnapshotsAsTheirCRDsPrintThem) {
  const os::WallTime now = At(1645189200 + 300);
  Json vs = Json::parse(R"({"metadata":{"name":"s1","creationTimestamp":"2022-02-18T13:00:00Z"},
      "spec":{"source":{"persistentVolumeClaimName":"data"},"volumeSnapshotClassName":"loop"},
      "status":{"boundVolumeSnapshotContentName":"snapcontent-1","readyToUse":true,
                "restoreSize":"16Mi","creationTime":"2022-02-18T13:02:00Z"}})");
  Json t = MakeTable("VolumeSnapshot", {vs}, "1", "", "None", now, true);
  std::vector<std::string> names;
  for (const auto& c : t["columnDefinitions"]) names.push_back(c["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"Name", "ReadyToUse", "SourcePVC",
                                             "SourceSnapshotContent", "RestoreSize",
                                             "SnapshotClass", "SnapshotContent", "CreationTime",
                                             "Age"}));
  EXPECT_EQ(t["rows"][0]["cells"], Json::parse(R"(["s1",true,"data",null,"16Mi","loop",
      "snapcontent-1","3m","5m"])"));
  vs.erase("status");
  t = MakeTable("VolumeSnapshot", {vs}, "1", "", "None", now, false);
  EXPECT_EQ(t["rows"][0]["cells"], Json::parse(R"(["s1",null,"data",null,null,"loop",null,null,"5m"])"));

  Json vsc = Json::parse(R"({"metadata":{"name":"snapcontent-1","creationTimestamp":"2022-02-18T13:00:00Z"},
      "spec":{"deletionPolicy":"Retain","driver":"loop.csi.kvol.io","volumeSnapshotClassName":"loop",
              "source":{"volumeHandle":"vol-1"},"volumeSnapshotRef":{"name":"s1","namespace":"default"}},
      "status":{"readyToUse":false,"restoreSize":16777216}})");
  t = MakeTable("VolumeSnapshotContent", {vsc}, "1", "", "None", now, false);
  EXPECT_EQ(t["rows"][0]["cells"], Json::parse(R"(["snapcontent-1",false,16777216,"Retain",
      "loop.csi.kvol.io","loop","s1","default","5m"])"));

  Json cls = Json::parse(R"({"metadata":{"name":"loop","creationTimestamp":"2022-02-18T13:00:00Z"},
      "driver":"loop.csi.kvol.io","deletionPolicy":"Delete"})");
  t = MakeTable("VolumeSnapshotClass", {cls}, "1", "", "None", now, false);
  EXPECT_EQ(t["rows"][0]["cells"], Json::parse(R"(["loop","loop.csi.kvol.io","Delete","5m"])"));
}

TEST(TablesTest, DeploymentsAndStatefulSets) {
  Json d = Json::parse(R"({"metadata":{"name":"nginx","creationTimestamp":"2022-02-18T13:00:00Z"},
      "spec":{"replicas":3,"selector":{"matchLabels":{"app":"nginx"}},
        "template":{"spec":{"containers":[{"name":"nginx","image":"nginx"}]}}},
      "status":{"replicas":3,"updatedReplicas":3,"readyReplicas":2,"availableReplicas":2}})");
  Json t = MakeTable("Deployment", {d}, "1", "", "None", At(1645189200 + 247), true);
  EXPECT_EQ(t["rows"][0]["cells"], Json::parse(R"(["nginx","2/3",3,2,"4m7s","nginx","nginx","app=nginx"])"));
  EXPECT_EQ(t["columnDefinitions"][2]["name"], "Up-to-date");

  Json s = Json::parse(R"({"metadata":{"name":"web","creationTimestamp":"2022-02-18T13:00:00Z"},
      "spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:latest"}]}}}})");
  t = MakeTable("StatefulSet", {s}, "1", "", "None", At(1645189200 + 30), true);
  EXPECT_EQ(t["rows"][0]["cells"], Json::parse(R"(["web","0/1","30s","nginx","nginx:latest"])"));
}

}  // namespace
}  // namespace kvol::apiserver
