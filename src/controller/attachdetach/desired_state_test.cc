// The populator's table: pods, claims, volumes and managed nodes -> the desired state.
#include "controller/attachdetach/desired_state.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "controller/attachdetach/attacher.h"

namespace kvol::controller::attachdetach {
namespace {

// Attaches PersistentVolumes with a CSI source.
class CsiOnly final : public Attacher {
 public:
  std::string_view PluginName() const override { return "kubernetes.io/csi"; }
  bool NeedsAttach(const volume::Spec& spec) override { return spec.pv && spec.pv->spec.csi; }
  StatusOr<std::string> Attach(const volume::Spec&, const std::string&) override {
    return std::string();
  }
  Status Detach(const std::string&, const std::string&) override { return OkStatus(); }
};

struct PodSpec {
  std::string name, node;
  std::vector<std::string> claims;  // in namespace "default"
  std::string phase = "Running";
  bool deleting = false, running = true;
};

struct Row {
  std::string name;
  std::vector<PodSpec> pods;
  // Claims bound to the PV of the same name ("c1" -> "pv-c1"); "unbound:" prefix for Pending.
  std::vector<std::string> claims;
  std::map<std::string, std::vector<std::string>> pv_modes = {};  // default RWO
  std::vector<std::string> managed = {"n1", "n2"};
  // "<node> <unique> multi|single <pods...>"
  std::vector<std::string> expect;
};

std::shared_ptr<const api::Pod> MakePod(const PodSpec& p) {
  auto pod = std::make_shared<api::Pod>();
  pod->metadata.namespace_ = "default";
  pod->metadata.name = p.name;
  pod->metadata.uid = "uid-" + p.name;
  pod->spec.node_name = p.node;
  pod->status.phase = p.phase;
  if (p.deleting) pod->metadata.deletion_timestamp = api::Time::FromUnixSeconds(1);
  api::ContainerStatus cs;
  if (p.running) {
    cs.state.running.emplace();
  } else {
    cs.state.terminated.emplace();
  }
  pod->status.container_statuses.push_back(cs);
  for (const auto& c : p.claims) {
    api::Volume v;
    v.name = "vol-" + c;
    v.persistent_volume_claim.emplace();
    v.persistent_volume_claim->claim_name = c;
    pod->spec.volumes.push_back(v);
  }
  api::Volume scratch;  // never attachable
  scratch.name = "scratch";
  pod->spec.volumes.push_back(scratch);
  return pod;
}

const Row kRows[] = {
    {.name = "a bound claim's CSI volume on the pod's node",
     .pods = {{.name = "a", .node = "n1", .claims = {"c1"}}},
     .claims = {"c1"},
     .expect = {"n1 kubernetes.io/csi/pv-c1 single a"}},
    {.name = "two pods of one node share the volume",
     .pods = {{.name = "b", .node = "n1", .claims = {"c1"}},
              {.name = "a", .node = "n1", .claims = {"c1"}}},
     .claims = {"c1"},
     .pv_modes = {{"pv-c1", {"ReadWriteMany"}}},
     .expect = {"n1 kubernetes.io/csi/pv-c1 multi a b"}},
    {.name = "an unbound claim waits",
     .pods = {{.name = "a", .node = "n1", .claims = {"c1"}}},
     .claims = {"unbound:c1"},
     .expect = {}},
    {.name = "a missing claim waits",
     .pods = {{.name = "a", .node = "n1", .claims = {"nope"}}},
     .expect = {}},
    {.name = "a pod not yet scheduled wants nothing",
     .pods = {{.name = "a", .node = "", .claims = {"c1"}}},
     .claims = {"c1"},
     .expect = {}},
    {.name = "a node the controller does not manage",
     .pods = {{.name = "a", .node = "n3", .claims = {"c1"}}},
     .claims = {"c1"},
     .expect = {}},
    {.name = "a finished pod wants nothing",
     .pods = {{.name = "a", .node = "n1", .claims = {"c1"}, .phase = "Succeeded"}},
     .claims = {"c1"},
     .expect = {}},
    {.name = "a pod being deleted keeps its volume while a container runs",
     .pods = {{.name = "a", .node = "n1", .claims = {"c1"}, .deleting = true}},
     .claims = {"c1"},
     .expect = {"n1 kubernetes.io/csi/pv-c1 single a"}},
    {.name = "a pod being deleted with no container running wants nothing",
     .pods = {{.name = "a", .node = "n1", .claims = {"c1"}, .deleting = true, .running = false}},
     .claims = {"c1"},
     .expect = {}},
    {.name = "ReadOnlyMany may be attached to several nodes",
     .pods = {{.name = "a", .node = "n1", .claims = {"c1"}},
              {.name = "b", .node = "n2", .claims = {"c1"}}},
     .claims = {"c1"},
     .pv_modes = {{"pv-c1", {"ReadWriteOnce", "ReadOnlyMany"}}},
     .expect = {"n1 kubernetes.io/csi/pv-c1 multi a", "n2 kubernetes.io/csi/pv-c1 multi b"}},
    {.name = "ReadWriteOncePod to one node only",
     .pods = {{.name = "a", .node = "n1", .claims = {"c1"}}},
     .claims = {"c1"},
     .pv_modes = {{"pv-c1", {"ReadWriteOncePod"}}},
     .expect = {"n1 kubernetes.io/csi/pv-c1 single a"}},
};

class PopulateTable : public ::testing::TestWithParam<Row> {};

TEST_P(PopulateTable, Desired) {
  const Row& row = GetParam();
  std::map<std::string, std::shared_ptr<const api::PersistentVolumeClaim>> claims;
  std::map<std::string, std::shared_ptr<const api::PersistentVolume>> volumes;
  for (std::string c : row.claims) {
    const bool unbound = c.rfind("unbound:", 0) == 0;
    if (unbound) c = c.substr(8);
    auto claim = std::make_shared<api::PersistentVolumeClaim>();
    claim->metadata.namespace_ = "default";
    claim->metadata.name = c;
    claim->metadata.uid = "uid-" + c;
    if (!unbound) {
      claim->spec.volume_name = "pv-" + c;
      claim->status.phase = "Bound";
    }
    claims[c] = claim;
    auto pv = std::make_shared<api::PersistentVolume>();
    pv->metadata.name = "pv-" + c;
    pv->spec.csi.emplace();
    pv->spec.csi->driver = "d";
    pv->spec.csi->volume_handle = "h-" + c;
    auto modes = row.pv_modes.find(pv->metadata.name);
    pv->spec.access_modes =
        modes == row.pv_modes.end() ? std::vector<std::string>{"ReadWriteOnce"} : modes->second;
    pv->spec.claim_ref.emplace();
    pv->spec.claim_ref->uid = claim->metadata.uid;
    volumes[pv->metadata.name] = pv;
  }
  CsiOnly csi;
  PopulateSources s;
  for (const auto& p : row.pods) s.pods.push_back(MakePod(p));
  s.managed = [&](const std::string& n) {
    return std::find(row.managed.begin(), row.managed.end(), n) != row.managed.end();
  };
  s.claim = [&](const std::string&, const std::string& name) {
    auto it = claims.find(name);
    return it == claims.end() ? nullptr : it->second;
  };
  s.volume = [&](const std::string& name) {
    auto it = volumes.find(name);
    return it == volumes.end() ? nullptr : it->second;
  };
  s.attacher_for = [&](const volume::Spec& spec) -> Attacher* {
    return csi.NeedsAttach(spec) ? &csi : nullptr;
  };
  std::vector<std::string> got;
  for (const auto& [node, dn] : Populate(s)) {
    for (const auto& [unique, v] : dn.volumes) {
      std::string line = node + " " + unique + (v.multi_attach ? " multi" : " single");
      for (const auto& p : v.pods) line += " " + p.name;
      got.push_back(line);
    }
  }
  EXPECT_EQ(got, row.expect) << row.name;
}

INSTANTIATE_TEST_SUITE_P(Rows, PopulateTable, ::testing::ValuesIn(kRows),
                         [](const auto& info) { return "row" + std::to_string(info.index + 1); });

}  // namespace
}  // namespace kvol::controller::attachdetach
