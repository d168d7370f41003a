// NodeVolumeLimits' table: a node with a CSINode limit for driver "d", the CSI volumes its pods
// use, and a new pod -> whether it fits.
#include "scheduler/volume_limits.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace kvol::scheduler {
namespace {

// A pod on the node (or the new pod when `node` is empty) with claims of the given names.
struct PodOn {
  std::string name;
  std::vector<std::string> claims;
  std::string phase = "Running";
};

struct Row {
  std::string name;
  std::optional<int> limit;  // CSINode allocatable.count for driver "d"; none: no CSINode
  std::vector<PodOn> on_node;
  std::vector<std::string> new_claims;
  std::string want;  // "" fits
};

// Claims "b-<handle>" are bound to a PV of driver "d" with that handle; "o-<handle>" to one of
// driver "other"; "u-<name>" are unbound claims of class "dc" (provisioner "d").
void AddClaim(Cache& cache, const std::string& name) {
  api::PersistentVolumeClaim pvc;
  pvc.metadata.namespace_ = "default";
  pvc.metadata.name = name;
  const std::string kind = name.substr(0, 2);
  if (kind == "u-") {
    pvc.spec.storage_class_name = "dc";
  } else {
    pvc.spec.volume_name = "pv-" + name;
    api::PersistentVolume pv;
    pv.metadata.name = pvc.spec.volume_name;
    pv.spec.csi.emplace();
    pv.spec.csi->driver = kind == "o-" ? "other" : "d";
    pv.spec.csi->volume_handle = name.substr(2);
    cache.UpsertVolume(pv);
  }
  cache.UpsertClaim(pvc);
}

api::Pod MakePod(const PodOn& p, const std::string& node) {
  api::Pod pod;
  pod.metadata.namespace_ = "default";
  pod.metadata.name = p.name;
  pod.spec.node_name = node;
  pod.status.phase = p.phase;
  for (const auto& c : p.claims) {
    api::Volume v;
    v.name = c;
    v.persistent_volume_claim.emplace();
    v.persistent_volume_claim->claim_name = c;
    pod.spec.volumes.push_back(v);
  }
  return pod;
}

const Row kRows[] = {
    {.name = "no CSINode: no limit",
     .on_node = {{.name = "a", .claims = {"b-1", "b-2", "b-3"}}},
     .new_claims = {"b-4"},
     .want = ""},
    {.name = "under the limit",
     .limit = 2,
     .on_node = {{.name = "a", .claims = {"b-1"}}},
     .new_claims = {"b-2"},
     .want = ""},
    {.name = "past the limit",
     .limit = 2,
     .on_node = {{.name = "a", .claims = {"b-1"}}, {.name = "b", .claims = {"b-2"}}},
     .new_claims = {"b-3"},
     .want = "node(s) exceed max volume count"},
    {.name = "a volume already on the node counts once",
     .limit = 2,
     .on_node = {{.name = "a", .claims = {"b-1"}}, {.name = "b", .claims = {"b-2"}}},
     .new_claims = {"b-2"},
     .want = ""},
    {.name = "an unbound claim counts against its class's provisioner",
     .limit = 1,
     .on_node = {{.name = "a", .claims = {"b-1"}}},
     .new_claims = {"u-data"},
     .want = "node(s) exceed max volume count"},
    {.name = "another driver's volumes do not count",
     .limit = 1,
     .on_node = {{.name = "a", .claims = {"o-1", "o-2"}}},
     .new_claims = {"b-1"},
     .want = ""},
    {.name = "finished pods do not count",
     .limit = 1,
     .on_node = {{.name = "a", .claims = {"b-1"}, .phase = "Succeeded"}},
     .new_claims = {"b-2"},
     .want = ""},
    {.name = "a pod without CSI volumes fits a full node",
     .limit = 1,
     .on_node = {{.name = "a", .claims = {"b-1"}}},
     .new_claims = {"o-9"},
     .want = ""},
};

class VolumeLimitsTable : public ::testing::TestWithParam<Row> {};

TEST_P(VolumeLimitsTable, Filter) {
  const Row& row = GetParam();
  Cache cache;
  api::StorageClass dc;
  dc.metadata.name = "dc";
  dc.provisioner = "d";
  cache.UpsertClass(dc);
  api::Node node;
  node.metadata.name = "n1";
  cache.UpsertNode(node);
  if (row.limit) {
    api::CSINode csinode;
    csinode.metadata.name = "n1";
    api::CSINodeDriver d;
    d.name = "d";
    d.allocatable = api::VolumeNodeResources{.count = *row.limit};
    csinode.spec.drivers.push_back(d);
    cache.UpsertCSINode(csinode);
  }
  for (const auto& p : row.on_node) {
    for (const auto& c : p.claims) AddClaim(cache, c);
    cache.UpsertPod(MakePod(p, "n1"));
  }
  for (const auto& c : row.new_claims) AddClaim(cache, c);
  const api::Pod pod = MakePod({.name = "new", .claims = row.new_claims}, "");
  EXPECT_EQ(FilterVolumeLimits(pod, node, cache), row.want) << row.name;
}

INSTANTIATE_TEST_SUITE_P(Rows, VolumeLimitsTable, ::testing::ValuesIn(kRows),
                         [](const auto& info) { return "row" + std::to_string(info.index + 1); });

}  // namespace
}  // namespace kvol::scheduler
