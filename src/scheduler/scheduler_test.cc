// The scheduler's table: each row is a cluster (nodes, volumes, claims, classes) and a pod, and
// says which node the pod gets, what must happen to its volumes first, or the message that says
// why it fits nowhere, in Kubernetes' words. Then the Scheduler's passes against an in-memory
// API: conditions, events, pre-binding, selected nodes, binding once the claims are Bound, and
// starting again when provisioning fails or takes too long.
#include <gtest/gtest.h>

#include <algorithm>

#include "api/well_known.h"
#include "client/testing/fake_client.h"
#include "os/testing/fake_clock.h"
#include "scheduler/scheduler.h"

namespace kvol::scheduler {
namespace {

// A node: name, extra labels, and how it reports itself.
struct N {
  std::string name;
  std::map<std::string, std::string> labels = {};
  std::string ready;  // "", "True", "False", "Unknown"
  bool unschedulable = false;
  std::vector<std::string> taints = {};  // "key=value:Effect"
  std::vector<std::string> pressure = {};  // conditions reported True: "DiskPressure"
};

// A volume: name, size, class, the nodes its node affinity names ("n1,n2"; "" none), the claim
// it is (pre-)bound to.
struct V {
  std::string name;
  std::string size = "1Gi";
  std::string cls = "local";
  std::string node;
  std::string claim;
  std::vector<std::string> modes = {"ReadWriteOnce"};
};

// A claim: name, size, class, the volume it is bound to, the node selected for it.
struct C {
  std::string name;
  std::string size = "1Gi";
  std::string cls = "local";
  std::string volume;
  std::string selected;
  bool deleting = false;
};

// A class: name, provisioner, WaitForFirstConsumer, allowed hostnames.
struct K {
  std::string name;
  std::string provisioner = "kubernetes.io/no-provisioner";
  bool wait = true;
  std::vector<std::string> allowed = {};
};

// The pod: claims, nodeSelector, required hostnames (node affinity), preferred hostnames,
// tolerations ("key:Effect" or "key" for Exists).
struct P {
  std::vector<std::string> claims = {};
  std::map<std::string, std::string> selector = {};
  std::vector<std::string> required = {};
  std::vector<std::string> preferred = {};
  std::vector<std::string> tolerations = {};
  std::string memory_request = {};  // "" for a BestEffort pod
};

api::NodeSelectorTerm HostnameTerm(const std::vector<std::string>& hosts) {
  api::NodeSelectorTerm t;
  t.match_expressions.push_back({.key = "kubernetes.io/hostname", .operator_ = "In", .values = hosts});
  return t;
}

api::Node MakeNode(const N& n) {
  api::Node node;
  node.metadata.name = n.name;
  node.metadata.labels = n.labels;
  node.metadata.labels["kubernetes.io/hostname"] = n.name;
  for (const auto& c : n.pressure) node.status.conditions.push_back({.type = c, .status = "True"});
  if (!n.ready.empty()) node.status.conditions.push_back({.type = "Ready", .status = n.ready});
  node.spec.unschedulable = n.unschedulable;
  for (const auto& t : n.taints) {
    auto eq = t.find('='), colon = t.find(':');
    node.spec.taints.push_back({.key = t.substr(0, eq), .value = t.substr(eq + 1, colon - eq - 1),
                                .effect = t.substr(colon + 1)});
  }
  return node;
}

api::PersistentVolume MakeVolume(const V& v) {
  api::PersistentVolume pv;
  pv.metadata.name = v.name;
  pv.metadata.resource_version = "1";
  pv.spec.capacity["storage"] = *api::Quantity::Parse(v.size);
  pv.spec.access_modes = v.modes;
  pv.spec.storage_class_name = v.cls;
  pv.spec.local = api::LocalVolumeSource{.path = "/data/" + v.name};
  if (!v.node.empty()) {
    pv.spec.node_affinity = api::VolumeNodeAffinity{};
    std::vector<std::string> hosts;
    for (size_t start = 0;;) {
      size_t comma = v.node.find(',', start);
      hosts.push_back(v.node.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    pv.spec.node_affinity->required = api::NodeSelector{{HostnameTerm(hosts)}};
  }
  if (!v.claim.empty()) {
    pv.spec.claim_ref = api::ObjectReference{.kind = "PersistentVolumeClaim", .namespace_ = "default",
                                             .name = v.claim, .uid = "uid-" + v.claim};
    pv.status.phase = "Bound";
  } else {
    pv.status.phase = "Available";
  }
  return pv;
}

api::PersistentVolumeClaim MakeClaim(const C& c) {
  api::PersistentVolumeClaim pvc;
  pvc.metadata.name = c.name;
  pvc.metadata.namespace_ = "default";
  pvc.metadata.uid = "uid-" + c.name;
  pvc.metadata.resource_version = "1";
  pvc.spec.access_modes = {"ReadWriteOnce"};
  pvc.spec.resources.requests["storage"] = *api::Quantity::Parse(c.size);
  pvc.spec.storage_class_name = c.cls;
  pvc.spec.volume_name = c.volume;
  pvc.status.phase = c.volume.empty() ? "Pending" : "Bound";
  if (!c.selected.empty()) {
    pvc.metadata.annotations[std::string(api::kAnnSelectedNode)] = c.selected;
  }
  if (c.deleting) pvc.metadata.deletion_timestamp = api::Time::FromUnixSeconds(1);
  return pvc;
}

api::StorageClass MakeClass(const K& k) {
  api::StorageClass sc;
  sc.metadata.name = k.name;
  sc.provisioner = k.provisioner;
  sc.volume_binding_mode = k.wait ? "WaitForFirstConsumer" : "Immediate";
  if (!k.allowed.empty()) {
    sc.allowed_topologies.push_back(
        {.match_label_expressions = {{.key = "kubernetes.io/hostname", .values = k.allowed}}});
  }
  return sc;
}

api::Pod MakePod(const P& p, const std::string& name = "web") {
  api::Pod pod;
  pod.metadata.name = name;
  pod.metadata.namespace_ = "default";
  pod.metadata.uid = "uid-pod-" + name;
  pod.metadata.resource_version = "1";
  pod.spec.containers.push_back({.name = "c", .image = "busybox"});
  if (!p.memory_request.empty()) {
    pod.spec.containers[0].resources.requests["memory"] = *api::Quantity::Parse(p.memory_request);
  }
  for (const auto& c : p.claims) {
    api::Volume v;
    v.name = c;
    v.persistent_volume_claim = api::PersistentVolumeClaimVolumeSource{.claim_name = c};
    pod.spec.volumes.push_back(v);
  }
  pod.spec.node_selector = p.selector;
  if (!p.required.empty() || !p.preferred.empty()) {
    pod.spec.affinity = api::Affinity{.node_affinity = api::NodeAffinity{}};
    auto& na = *pod.spec.affinity->node_affinity;
    if (!p.required.empty()) {
      na.required_during_scheduling_ignored_during_execution = api::NodeSelector{{HostnameTerm(p.required)}};
    }
    for (const auto& h : p.preferred) {
      na.preferred_during_scheduling_ignored_during_execution.push_back(
          {.weight = 10, .preference = HostnameTerm({h})});
    }
  }
  for (const auto& t : p.tolerations) {
    auto colon = t.find(':');
    if (colon == std::string::npos) {
      pod.spec.tolerations.push_back({.key = t, .operator_ = "Exists"});
    } else {
      pod.spec.tolerations.push_back({.key = t.substr(0, colon), .operator_ = "Exists",
                                      .effect = t.substr(colon + 1)});
    }
  }
  return pod;
}

struct Row {
  std::string name;
  std::vector<N> nodes;
  P pod;
  std::string want_node;                   // "" when unschedulable
  std::string want_message = {};           // when unschedulable
  std::vector<std::string> want_bind = {}; // "claim->volume"
  std::vector<std::string> want_provision = {};
  std::vector<V> volumes = {};
  std::vector<C> claims = {};
  std::vector<K> classes = {{.name = "local"}};
  std::map<std::string, int> pods_on = {};  // pods already running per node
};

// The answer to the scheduler's own write (the claim it annotated with the selected node) can
// come after the informer has delivered the claim bound: the older one does not replace it.
TEST(CacheTest, AnOlderObjectDoesNotReplaceANewerOne) {
  Cache cache;
  api::PersistentVolumeClaim bound;
  bound.metadata.namespace_ = "default";
  bound.metadata.name = "p-scratch";
  bound.metadata.resource_version = "12";
  bound.status.phase = "Bound";
  cache.UpsertClaim(bound);
  api::PersistentVolumeClaim annotated = bound;
  annotated.metadata.resource_version = "9";
  annotated.status.phase = "Pending";
  cache.UpsertClaim(annotated);
  EXPECT_EQ(cache.Claim("default/p-scratch")->status.phase, "Bound");
  annotated.metadata.resource_version = "13";
  cache.UpsertClaim(annotated);
  EXPECT_EQ(cache.Claim("default/p-scratch")->status.phase, "Pending") << "a newer one does";

  api::PersistentVolume pv;
  pv.metadata.name = "pv1";
  pv.metadata.resource_version = "20";
  pv.status.phase = "Bound";
  cache.UpsertVolume(pv);
  api::PersistentVolume stale = pv;
  stale.metadata.resource_version = "19";
  stale.status.phase = "Available";
  cache.UpsertVolume(stale);
  EXPECT_EQ(cache.Volume("pv1")->status.phase, "Bound");
}

class ScheduleTable : public ::testing::TestWithParam<Row> {};

TEST_P(ScheduleTable, Decides) {
  const Row& row = GetParam();
  Cache cache;
  for (const auto& n : row.nodes) cache.UpsertNode(MakeNode(n));
  for (const auto& v : row.volumes) cache.UpsertVolume(MakeVolume(v));
  for (const auto& c : row.claims) cache.UpsertClaim(MakeClaim(c));
  for (const auto& k : row.classes) cache.UpsertClass(MakeClass(k));
  for (const auto& [node, count] : row.pods_on) {
    for (int i = 0; i < count; ++i) {
      api::Pod running = MakePod({}, "running-" + node + "-" + std::to_string(i));
      running.spec.node_name = node;
      cache.UpsertPod(running);
    }
  }
  Decision d = Schedule(MakePod(row.pod), cache);
  EXPECT_EQ(d.node, row.want_node);
  EXPECT_EQ(d.message, row.want_message);
  std::vector<std::string> bind, provision;
  for (const auto& [c, v] : d.plan.bindings) bind.push_back(c->metadata.name + "->" + v->metadata.name);
  for (const auto& c : d.plan.provisions) provision.push_back(c->metadata.name);
  EXPECT_EQ(bind, row.want_bind);
  EXPECT_EQ(provision, row.want_provision);
}

const std::vector<N> kThree = {{"n1"}, {"n2"}, {"n3"}};

// clang-format off
INSTANTIATE_TEST_SUITE_P(Scheduler, ScheduleTable, ::testing::Values(
  // ---- nodes ---------------------------------------------------------------------------------
  Row{"no_nodes", {}, {}, "", "no nodes available to schedule pods"},
  Row{"fewest_pods_wins", kThree, {}, "n2", "", {}, {}, {}, {}, {{.name = "local"}}, {{"n1", 2}, {"n3", 1}}},
  Row{"ties_go_to_the_first_name", kThree, {}, "n1"},
  Row{"a_node_without_an_agent_is_schedulable", {{"bare"}}, {}, "bare"},
  Row{"not_ready_nodes_are_tainted", {{"a", {}, "False"}, {"b", {}, "Unknown"}, {"c", {}, "True"}}, {}, "c"},
  Row{"no_ready_node",
      {{"a", {}, "False"}, {"b", {}, "Unknown"}}, {}, "",
      "0/2 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, "
      "1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }."},
  Row{"tolerating_not_ready", {{"a", {}, "False"}}, {.tolerations = {"node.kubernetes.io/not-ready"}}, "a"},
  Row{"pressure_taints_the_node",
      {{"a", {}, "True", false, {}, {"DiskPressure"}}, {"b", {}, "True", false, {}, {"PIDPressure"}},
       {"c", {}, "True", false, {}, {"MemoryPressure"}}}, {}, "",
      "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/disk-pressure: }, "
      "1 node(s) had untolerated taint {node.kubernetes.io/memory-pressure: }, "
      "1 node(s) had untolerated taint {node.kubernetes.io/pid-pressure: }."},
  Row{"memory_pressure_keeps_off_only_best_effort_pods",
      {{"a", {}, "True", false, {}, {"DiskPressure"}}, {"c", {}, "True", false, {}, {"MemoryPressure"}}},
      {.memory_request = "64Mi"}, "c"},
  Row{"tolerating_disk_pressure", {{"a", {}, "True", false, {}, {"DiskPressure"}}},
      {.tolerations = {"node.kubernetes.io/disk-pressure:NoSchedule"}}, "a"},
  Row{"cordoned",
      {{"a", {}, "", true}, {"b", {}, "", true}}, {}, "", "0/2 nodes are available: 2 node(s) were unschedulable."},
  Row{"cordoned_but_tolerated", {{"a", {}, "", true}},
      {.tolerations = {"node.kubernetes.io/unschedulable:NoSchedule"}}, "a"},
  Row{"tainted",
      {{"a", {}, "", false, {"dedicated=db:NoSchedule"}}, {"b", {}, "", false, {"gpu=yes:NoExecute"}}}, {}, "",
      "0/2 nodes are available: 1 node(s) had untolerated taint {dedicated: db}, "
      "1 node(s) had untolerated taint {gpu: yes}."},
  Row{"prefer_no_schedule_is_only_a_preference",
      {{"a", {}, "", false, {"slow=yes:PreferNoSchedule"}}}, {}, "a"},
  Row{"toleration_admits", {{"a", {}, "", false, {"dedicated=db:NoSchedule"}}, {"b", {}, "False"}},
      {.tolerations = {"dedicated:NoSchedule"}}, "a"},
  // ---- nodeSelector and node affinity -------------------------------------------------------
  Row{"node_selector", {{"n1"}, {"n2", {{"disk", "ssd"}}}}, {.selector = {{"disk", "ssd"}}}, "n2"},
  Row{"node_selector_matches_nothing", kThree, {.selector = {{"disk", "ssd"}}}, "",
      "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."},
  Row{"required_affinity", kThree, {.required = {"n3"}}, "n3"},
  Row{"required_affinity_and_selector_both_apply", {{"n1", {{"disk", "ssd"}}}, {"n2"}},
      {.selector = {{"disk", "ssd"}}, .required = {"n2"}}, "",
      "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."},
  Row{"preferred_affinity_wins_over_spreading", kThree, {.preferred = {"n3"}}, "n3", "", {}, {}, {}, {},
      {{.name = "local"}}, {{"n3", 5}}},
  Row{"preferred_affinity_is_not_required", kThree, {.preferred = {"elsewhere"}}, "n1"},
  Row{"first_failing_filter_gives_the_reason",
      {{"a", {}, "", true}, {"b", {}, "False"}, {"c"}}, {.selector = {{"disk", "ssd"}}}, "",
      "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
      "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 1 node(s) were unschedulable."},
  // ---- bound claims: their volumes' node affinity ----------------------------------------------
  Row{"bound_local_volume_pins_the_pod", kThree, {.claims = {"data"}}, "n2", "", {}, {},
      {{.name = "pv", .node = "n2", .claim = "data"}}, {{.name = "data", .volume = "pv"}}},
  Row{"bound_volume_without_affinity_goes_anywhere", kThree, {.claims = {"data"}}, "n1", "", {}, {},
      {{.name = "pv", .claim = "data"}}, {{.name = "data", .volume = "pv"}}},
  Row{"bound_volume_conflicts_with_selector", {{"n1"}, {"n2", {{"disk", "ssd"}}}},
      {.claims = {"data"}, .selector = {{"disk", "ssd"}}}, "",
      "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
      "1 node(s) had volume node affinity conflict.",
      {}, {}, {{.name = "pv", .node = "n1", .claim = "data"}}, {{.name = "data", .volume = "pv"}}},
  Row{"two_bound_volumes_on_different_nodes", kThree, {.claims = {"a", "b"}}, "",
      "0/3 nodes are available: 3 node(s) had volume node affinity conflict.", {}, {},
      {{.name = "pva", .node = "n1", .claim = "a"}, {.name = "pvb", .node = "n2", .claim = "b"}},
      {{.name = "a", .volume = "pva"}, {.name = "b", .volume = "pvb"}}},
  Row{"bound_to_a_missing_volume", kThree, {.claims = {"data"}}, "",
      "0/3 nodes are available: 3 node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s).",
      {}, {}, {}, {{.name = "data", .volume = "gone"}}},
  // ---- claims that stop every node ----------------------------------------------------------
  Row{"unbound_immediate_claim", kThree, {.claims = {"data"}}, "",
      "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.", {}, {}, {},
      {{.name = "data", .cls = "fast"}}, {{.name = "fast", .provisioner = "x", .wait = false}}},
  Row{"claim_without_a_class_is_immediate", kThree, {.claims = {"data"}}, "",
      "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.", {}, {}, {},
      {{.name = "data", .cls = ""}}},
  Row{"claim_of_a_missing_class_is_immediate", kThree, {.claims = {"data"}}, "",
      "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.", {}, {}, {},
      {{.name = "data", .cls = "nope"}}},
  Row{"missing_claim", kThree, {.claims = {"data"}}, "",
      "0/3 nodes are available: persistentvolumeclaim \"data\" not found."},
  Row{"claim_being_deleted", kThree, {.claims = {"data"}}, "",
      "0/3 nodes are available: persistentvolumeclaim \"data\" is being deleted.", {}, {}, {},
      {{.name = "data", .deleting = true}}},
  // ---- delayed binding: matching volumes ----------------------------------------------------
  Row{"the_seeds_delayed_binding", {{"k8s-node01"}, {"k8s-node02"}}, {.claims = {"nginx-pvc"}}, "k8s-node01", "",
      {"nginx-pvc->nginx-pv"}, {},
      {{.name = "nginx-pv", .size = "5Gi", .cls = "local-storage", .node = "k8s-node01"}},
      {{.name = "nginx-pvc", .size = "5Gi", .cls = "local-storage"}}, {{.name = "local-storage"}}},
  Row{"no_matching_volume_and_no_provisioner", kThree, {.claims = {"data"}}, "",
      "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind.", {}, {},
      {{.name = "small", .size = "1Mi", .node = "n1"}}, {{.name = "data"}}},
  Row{"the_issue_example",
      kThree, {.claims = {"bound", "free"}}, "",
      "0/3 nodes are available: 1 node(s) had volume node affinity conflict, "
      "2 node(s) didn't find available persistent volumes to bind.", {}, {},
      {{.name = "pv-bound", .node = "n1,n2", .claim = "bound"}, {.name = "pv-free", .node = "n3"},
       {.name = "too-small", .size = "1Mi", .node = "n1"}},
      {{.name = "bound", .volume = "pv-bound"}, {.name = "free"}}},
  Row{"smallest_fitting_volume_on_the_node", kThree, {.claims = {"data"}}, "n2", "", {"data->mid"}, {},
      {{.name = "big", .size = "10Gi", .node = "n2"}, {.name = "mid", .size = "2Gi", .node = "n2"},
       {.name = "tiny", .size = "1Mi", .node = "n2"}, {.name = "other", .size = "2Gi", .node = "n9"}},
      {{.name = "data", .size = "2Gi"}}},
  Row{"volume_of_another_class_does_not_match", kThree, {.claims = {"data"}}, "",
      "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind.", {}, {},
      {{.name = "pv", .cls = "other", .node = "n1"}}, {{.name = "data"}}},
  Row{"volume_bound_elsewhere_does_not_match", kThree, {.claims = {"data"}}, "",
      "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind.", {}, {},
      {{.name = "pv", .node = "n1", .claim = "someone"}}, {{.name = "data"}}},
  Row{"two_claims_two_volumes_one_node", kThree, {.claims = {"a", "b"}}, "n3", "", {"a->pv1", "b->pv2"}, {},
      {{.name = "pv1", .node = "n3"}, {.name = "pv2", .node = "n3"}, {.name = "pv9", .node = "n1"}},
      {{.name = "a"}, {.name = "b"}}},
  Row{"two_claims_cannot_share_one_volume", kThree, {.claims = {"a", "b"}}, "",
      "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind.", {}, {},
      {{.name = "pv1", .node = "n3"}}, {{.name = "a"}, {.name = "b"}}},
  Row{"volume_pre_bound_to_the_claim", kThree, {.claims = {"data"}}, "n2", "", {"data->mine"}, {},
      {{.name = "free", .node = "n1"}, {.name = "mine", .node = "n2", .claim = "data"}}, {{.name = "data"}}},
  Row{"delayed_and_bound_claims_together", kThree, {.claims = {"db", "logs"}}, "n2", "", {"logs->free2"}, {},
      {{.name = "pv-db", .node = "n2", .claim = "db"}, {.name = "free1", .node = "n1"}, {.name = "free2", .node = "n2"}},
      {{.name = "db", .volume = "pv-db"}, {.name = "logs"}}},
  Row{"matching_volume_on_a_tainted_node_only", {{"n1", {}, "False"}, {"n2"}}, {.claims = {"data"}}, "",
      "0/2 nodes are available: 1 node(s) didn't find available persistent volumes to bind, "
      "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }.", {}, {},
      {{.name = "pv", .node = "n1"}}, {{.name = "data"}}},
  // ---- delayed binding: provisioning --------------------------------------------------------
  Row{"provisioned_anywhere", kThree, {.claims = {"data"}}, "n1", "", {}, {"data"}, {},
      {{.name = "data", .cls = "local-path"}}, {{.name = "local-path", .provisioner = "kvol.io/local-path"}}},
  Row{"on_one_node_a_matching_volume_beats_provisioning", kThree, {.claims = {"data"}, .required = {"n3"}},
      "n3", "", {"data->pv"}, {},
      {{.name = "pv", .cls = "local-path", .node = "n3"}}, {{.name = "data", .cls = "local-path"}},
      {{.name = "local-path", .provisioner = "kvol.io/local-path"}}},
  Row{"allowed_topologies", kThree, {.claims = {"data"}}, "n2", "", {}, {"data"}, {},
      {{.name = "data", .cls = "zoned"}}, {{.name = "zoned", .provisioner = "x", .allowed = {"n2", "n9"}}}},
  Row{"allowed_topologies_exclude_every_node", kThree, {.claims = {"data"}}, "",
      "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind.", {}, {}, {},
      {{.name = "data", .cls = "zoned"}}, {{.name = "zoned", .provisioner = "x", .allowed = {"n9"}}}},
  Row{"selected_node_is_kept", kThree, {.claims = {"data"}}, "n3", "", {}, {"data"}, {},
      {{.name = "data", .cls = "local-path", .selected = "n3"}},
      {{.name = "local-path", .provisioner = "kvol.io/local-path"}}},
  Row{"selected_node_excluded_by_the_pod", kThree, {.claims = {"data"}, .required = {"n1", "n2"}}, "",
      "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
      "2 node(s) didn't find available persistent volumes to bind.", {}, {}, {},
      {{.name = "data", .cls = "local-path", .selected = "n3"}},
      {{.name = "local-path", .provisioner = "kvol.io/local-path"}}},
  Row{"provisioning_follows_the_pods_node_selector", kThree, {.claims = {"data"}, .required = {"n2"}}, "n2", "",
      {}, {"data"}, {}, {{.name = "data", .cls = "local-path"}},
      {{.name = "local-path", .provisioner = "kvol.io/local-path"}}},
  Row{"one_claim_matches_one_is_provisioned", kThree, {.claims = {"a", "b"}}, "n2", "", {"a->pv"}, {"b"},
      {{.name = "pv", .cls = "mixed", .node = "n2"}},
      {{.name = "a", .cls = "mixed"}, {.name = "b", .size = "100Gi", .cls = "mixed"}},
      {{.name = "mixed", .provisioner = "x", .allowed = {"n2"}}}}
), [](const auto& info) { return info.param.name; });
// clang-format on

// ---- the Scheduler against an API ------------------------------------------------------------

struct Recorded {
  std::vector<std::string> events;  // "Type Reason message"
};

class SchedulerTest : public ::testing::Test {
 protected:
  SchedulerTest()
      : scheduler_(api_,
                   [this](const api::ObjectReference&, std::string_view type, std::string_view reason,
                          std::string message) {
                     events_.push_back(std::string(type) + " " + std::string(reason) + " " + message);
                   },
                   Options{.bind_timeout = std::chrono::seconds(600), .clock = &clock_}) {}

  // Puts an object in both the API and the scheduler's view.
  void Add(const api::Node& n) { scheduler_.cache().UpsertNode(api_.fake<api::Node>().Seed(n)); }
  void Add(const api::PersistentVolume& v) {
    scheduler_.cache().UpsertVolume(api_.fake<api::PersistentVolume>().Seed(v));
  }
  void Add(const api::PersistentVolumeClaim& c) {
    scheduler_.cache().UpsertClaim(api_.fake<api::PersistentVolumeClaim>().Seed(c));
  }
  void Add(const api::StorageClass& k) { scheduler_.cache().UpsertClass(api_.fake<api::StorageClass>().Seed(k)); }
  void Add(const api::Pod& p) { scheduler_.StorePod(api_.fake<api::Pod>().Seed(p)); }

  api::Pod StoredPod() { return api_.fake<api::Pod>().Objects().at("default/web"); }
  api::PersistentVolumeClaim StoredClaim(const std::string& name) {
    return api_.fake<api::PersistentVolumeClaim>().Objects().at("default/" + name);
  }
  std::string Condition(const api::Pod& pod) {
    for (const auto& c : pod.status.conditions) {
      if (c.type == "PodScheduled") return c.status + " " + c.reason + " " + c.message;
    }
    return "";
  }
  // What the PV controller does once the claim has a volume: claim and volume Bound.
  void BindClaim(const std::string& claim, const V& volume) {
    V v = volume;
    v.claim = claim;
    Add(MakeVolume(v));
    api::PersistentVolumeClaim c = StoredClaim(claim);
    c.spec.volume_name = v.name;
    c.status.phase = "Bound";
    scheduler_.cache().UpsertClaim(api_.fake<api::PersistentVolumeClaim>().Seed(c));
  }

  client::testing::FakeClient api_;
  os::testing::FakeClock clock_;
  std::vector<std::string> events_;
  Scheduler scheduler_;
};

TEST_F(SchedulerTest, UnschedulablePodGetsConditionAndOneEvent) {
  Add(MakeNode({"n1", {}, "False"}));
  Add(MakePod({}));
  ASSERT_TRUE(scheduler_.SyncPod("default/web").ok());
  const std::string msg = "0/1 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }.";
  EXPECT_EQ(Condition(StoredPod()), "False Unschedulable " + msg);
  EXPECT_EQ(StoredPod().status.phase, "Pending");
  EXPECT_EQ(StoredPod().spec.node_name, "");
  // The same answer again writes nothing and says nothing new.
  api_.state().ClearActions();
  ASSERT_TRUE(scheduler_.SyncPod("default/web").ok());
  EXPECT_TRUE(api_.state().actions().empty());
  EXPECT_EQ(events_, std::vector<std::string>{"Warning FailedScheduling " + msg});
  // The node becomes ready: the pod is placed.
  Add(MakeNode({"n1", {}, "True"}));
  ASSERT_TRUE(scheduler_.SyncPod("default/web").ok());
  EXPECT_EQ(StoredPod().spec.node_name, "n1");
  EXPECT_EQ(Condition(StoredPod()), "True  ");
  EXPECT_EQ(events_.back(), "Normal Scheduled Successfully assigned default/web to n1");
}

TEST_F(SchedulerTest, PodsOfOtherSchedulersAndPlacedPodsAreLeftAlone) {
  Add(MakeNode({"n1"}));
  api::Pod other = MakePod({});
  other.spec.scheduler_name = "my-scheduler";
  EXPECT_FALSE(Scheduler::Wants(other));
  api::Pod placed = MakePod({});
  placed.spec.node_name = "n9";
  EXPECT_FALSE(Scheduler::Wants(placed));
  Add(other);
  ASSERT_TRUE(scheduler_.SyncPod("default/web").ok());
  EXPECT_TRUE(api_.state().actions().empty());
}

TEST_F(SchedulerTest, MatchingVolumeIsPreBoundThenThePodIsBound) {
  Add(MakeNode({"k8s-node01"}));
  Add(MakeNode({"k8s-node02"}));
  Add(MakeClass({.name = "local-storage"}));
  const V pv{.name = "nginx-pv", .size = "5Gi", .cls = "local-storage", .node = "k8s-node01"};
  Add(MakeVolume(pv));
  Add(MakeClaim({.name = "nginx-pvc", .size = "5Gi", .cls = "local-storage"}));
  Add(MakePod({.claims = {"nginx-pvc"}}));
  ASSERT_TRUE(scheduler_.SyncPod("default/web").ok());
  // The volume names the claim, as the scheduler's pre-binding does in Kubernetes.
  auto stored = api_.fake<api::PersistentVolume>().Objects().at("nginx-pv");
  ASSERT_TRUE(stored.spec.claim_ref);
  EXPECT_EQ(stored.spec.claim_ref->name, "nginx-pvc");
  EXPECT_EQ(stored.spec.claim_ref->uid, "uid-nginx-pvc");
  EXPECT_EQ(stored.metadata.annotations.at(std::string(api::kAnnBoundByController)), "yes");
  EXPECT_EQ(StoredPod().spec.node_name, "");  // not before the claim is Bound
  ASSERT_TRUE(scheduler_.SyncPod("default/web").ok());
  EXPECT_EQ(StoredPod().spec.node_name, "");
  BindClaim("nginx-pvc", pv);
  ASSERT_TRUE(scheduler_.SyncPod("default/web").ok());
  EXPECT_EQ(StoredPod().spec.node_name, "k8s-node01");
  EXPECT_EQ(events_, std::vector<std::string>{"Normal Scheduled Successfully assigned default/web to k8s-node01"});
}

TEST_F(SchedulerTest, ProvisioningSelectsTheNodeAndFailureStartsAgain) {
  Add(MakeNode({"n1"}));
  Add(MakeNode({"n2"}));
  Add(MakeClass({.name = "local-path", .provisioner = "kvol.io/local-path"}));
  Add(MakeClaim({.name = "data", .cls = "local-path"}));
  Add(MakePod({.claims = {"data"}, .required = {"n2"}}));
  ASSERT_TRUE(scheduler_.SyncPod("default/web").ok());
  EXPECT_EQ(StoredClaim("data").metadata.annotations.at(std::string(api::kAnnSelectedNode)), "n2");
  EXPECT_EQ(StoredPod().spec.node_name, "");

  // The provisioner fails and gives the claim back: the pod is scheduled afresh.
  auto claim = StoredClaim("data");
  claim.metadata.annotations.erase(std::string(api::kAnnSelectedNode));
  scheduler_.cache().UpsertClaim(api_.fake<api::PersistentVolumeClaim>().Seed(claim));
  ASSERT_TRUE(scheduler_.SyncPod("default/web").ok());
  EXPECT_EQ(events_, std::vector<std::string>{
      "Warning FailedScheduling running PreBind plugin \"VolumeBinding\": binding volumes: "
      "provisioning failed for PVC \"data\""});
  EXPECT_EQ(StoredClaim("data").metadata.annotations.at(std::string(api::kAnnSelectedNode)), "n2");

  // This time it works.
  BindClaim("data", {.name = "pvc-uid-data", .cls = "local-path", .node = "n2"});
  ASSERT_TRUE(scheduler_.SyncPod("default/web").ok());
  EXPECT_EQ(StoredPod().spec.node_name, "n2");
}

TEST_F(SchedulerTest, AVolumeTheNodeCannotUseIsRefused) {
  Add(MakeNode({"n1"}));
  Add(MakeNode({"n2"}));
  Add(MakeClass({.name = "local-path", .provisioner = "kvol.io/local-path"}));
  Add(MakeClaim({.name = "data", .cls = "local-path"}));
  Add(MakePod({.claims = {"data"}}));
  ASSERT_TRUE(scheduler_.SyncPod("default/web").ok());
  // Someone binds the claim to a volume on the other node.
  BindClaim("data", {.name = "elsewhere", .cls = "local-path", .node = "n2"});
  ASSERT_TRUE(scheduler_.SyncPod("default/web").ok());
  ASSERT_FALSE(events_.empty());
  EXPECT_EQ(events_[0],
            "Warning FailedScheduling running PreBind plugin \"VolumeBinding\": binding volumes: "
            "pv \"elsewhere\" node affinity doesn't match node \"n1\"");
  // Scheduled afresh, the bound volume's node is the answer.
  EXPECT_EQ(StoredPod().spec.node_name, "n2");
}

TEST_F(SchedulerTest, BindingThatTakesTooLongIsGivenUp) {
  Add(MakeNode({"n1"}));
  Add(MakeClass({.name = "local-path", .provisioner = "kvol.io/local-path"}));
  Add(MakeClaim({.name = "data", .cls = "local-path"}));
  Add(MakePod({.claims = {"data"}}));
  ASSERT_TRUE(scheduler_.SyncPod("default/web").ok());
  clock_.Advance(std::chrono::seconds(599));
  ASSERT_TRUE(scheduler_.SyncPod("default/web").ok());
  EXPECT_TRUE(events_.empty());
  clock_.Advance(std::chrono::seconds(2));
  ASSERT_TRUE(scheduler_.SyncPod("default/web").ok());
  EXPECT_EQ(events_, std::vector<std::string>{
      "Warning FailedScheduling running PreBind plugin \"VolumeBinding\": binding volumes: "
      "context deadline exceeded"});
  EXPECT_EQ(StoredPod().spec.node_name, "");
}

TEST_F(SchedulerTest, AConflictIsRetriedAndNothingIsBoundTwice) {
  Add(MakeNode({"n1"}));
  Add(MakeClass({.name = "local"}));
  const V pv{.name = "pv", .node = "n1"};
  Add(MakeVolume(pv));
  Add(MakeClaim({.name = "data"}));
  Add(MakePod({.claims = {"data"}}));
  api_.state().InjectError("update", "persistentvolumes", {409, "Conflict", "the object has been modified"});
  Status s = scheduler_.SyncPod("default/web");
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_FALSE(api_.fake<api::PersistentVolume>().Objects().at("pv").spec.claim_ref);
  ASSERT_TRUE(scheduler_.SyncPod("default/web").ok());
  EXPECT_TRUE(api_.fake<api::PersistentVolume>().Objects().at("pv").spec.claim_ref);
  // A restart forgets the decision; the pre-bound volume brings the pod back to it.
  Scheduler fresh(api_, nullptr, Options{.clock = &clock_});
  fresh.cache().UpsertNode(MakeNode({"n1"}));
  fresh.cache().UpsertNode(MakeNode({"n0"}));
  fresh.cache().UpsertClass(MakeClass({.name = "local"}));
  fresh.cache().UpsertVolume(api_.fake<api::PersistentVolume>().Objects().at("pv"));
  fresh.cache().UpsertClaim(StoredClaim("data"));
  Decision d = Schedule(StoredPod(), fresh.cache());
  EXPECT_EQ(d.node, "n1");
  ASSERT_EQ(d.plan.bindings.size(), 1u);
  EXPECT_EQ(d.plan.bindings[0].second->metadata.name, "pv");
}

}  // namespace
}  // namespace kvol::scheduler
