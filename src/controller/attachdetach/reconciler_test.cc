// The attach/detach reconciler's table: (desired, actual, nodes, operations in flight) -> the
// node status writes, detaches, attaches and events of a pass. Operations are recorded, not
// run. A row may run a first pass, move the clock, and look at the second pass only.
#include "controller/attachdetach/reconciler.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "controller/attachdetach/attacher.h"
#include "os/testing/fake_clock.h"

namespace kvol::controller::attachdetach {
namespace {

using namespace std::chrono_literals;

class RecordedOperations final : public Operations {
 public:
  std::set<std::string> pending;  // "<unique>@<node>"
  std::set<std::string> failing_status;
  std::vector<std::string> done;

  bool IsPending(const std::string& unique, const std::string& node) const override {
    if (!node.empty()) return pending.count(unique + "@" + node) > 0;
    for (const auto& p : pending) {
      if (p.rfind(unique + "@", 0) == 0) return true;
    }
    return false;
  }
  void Attach(const VolumeToAttach& v, const std::string& node) override {
    pending.insert(v.unique_name + "@" + node);
    done.push_back("attach " + v.unique_name + " to " + node);
  }
  void Detach(const std::string& unique, const ActualVolume& v, const std::string& node,
              bool verify_safe) override {
    pending.insert(unique + "@" + node);
    done.push_back("detach " + unique + " (" + v.volume_name + ") from " + node +
                   (verify_safe ? "" : " forced"));
  }
  bool UpdateNodeStatus(const std::string& node) override {
    done.push_back("status " + node);
    return !failing_status.count(node);
  }
  void PodEvent(const PodRef& pod, std::string_view type, std::string_view reason,
                std::string message) override {
    done.push_back("event " + pod.ns + "/" + pod.name + " " + std::string(type) + " " +
                   std::string(reason) + ": " + message);
  }
};

// A wanted volume: "csi/<pv>" on `node` for `pods` ("ns/name").
struct Want {
  std::string node, pv;
  bool rwo = true;
  std::vector<std::string> pods = {"default/a"};
};

// An attachment in the actual state.
struct Have {
  std::string node, pv;
  bool attached = true;
};

struct Node {
  std::string name;
  bool managed = true, ready = true, out_of_service = false;
  std::set<std::string> in_use = {};  // pv names
};

struct Row {
  std::string name;
  std::vector<Want> want;
  std::vector<Have> have;
  std::vector<Node> nodes;
  std::set<std::string> pending = {};         // "<pv>@<node>"
  std::set<std::string> failing_status = {};  // nodes whose status cannot be written
  std::chrono::milliseconds advance = {};     // a first pass, then this much later the second
  bool force_on_timeout = true;
  std::vector<std::string> expect;
};

std::string Unique(const std::string& pv) { return "csi/" + pv; }

DesiredState Desired(const std::vector<Want>& wants) {
  DesiredState out;
  for (const auto& w : wants) {
    VolumeToAttach& v = out[w.node].volumes[Unique(w.pv)];
    v.unique_name = Unique(w.pv);
    v.spec.pv.emplace();
    v.spec.pv->metadata.name = w.pv;
    v.multi_attach = !w.rwo;
    for (const auto& p : w.pods) {
      const size_t slash = p.find('/');
      v.pods.push_back({p.substr(0, slash), p.substr(slash + 1), "uid-" + p});
    }
  }
  return out;
}

const Row kRows[] = {
    {.name = "1 - a wanted volume is attached",
     .want = {{.node = "n1", .pv = "pv1"}},
     .nodes = {{.name = "n1"}},
     .expect = {"attach csi/pv1 to n1"}},
    {.name = "2 - an attached wanted volume stays",
     .want = {{.node = "n1", .pv = "pv1"}},
     .have = {{.node = "n1", .pv = "pv1"}},
     .nodes = {{.name = "n1", .in_use = {"pv1"}}},
     .expect = {}},
    {.name = "3 - unwanted but in use by the node: waits",
     .have = {{.node = "n1", .pv = "pv1"}},
     .nodes = {{.name = "n1", .in_use = {"pv1"}}},
     .expect = {}},
    {.name = "4 - unwanted and unused: the node stops reporting it, then it is detached",
     .have = {{.node = "n1", .pv = "pv1"}},
     .nodes = {{.name = "n1"}},
     .expect = {"status n1", "detach csi/pv1 (pv1) from n1"}},
    {.name = "5 - the node's status cannot be written: no detach",
     .have = {{.node = "n1", .pv = "pv1"}},
     .nodes = {{.name = "n1"}},
     .failing_status = {"n1"},
     .expect = {"status n1"}},
    {.name = "6 - in use on a node not Ready for max-wait-for-unmount: forced detach",
     .have = {{.node = "n1", .pv = "pv1"}},
     .nodes = {{.name = "n1", .ready = false, .in_use = {"pv1"}}},
     .advance = 6min,
     .expect = {"status n1", "detach csi/pv1 (pv1) from n1 forced"}},
    {.name = "7 - the same before the time is up: waits",
     .have = {{.node = "n1", .pv = "pv1"}},
     .nodes = {{.name = "n1", .ready = false, .in_use = {"pv1"}}},
     .advance = 5min,
     .expect = {}},
    {.name = "8 - the same with forced detach switched off: waits",
     .have = {{.node = "n1", .pv = "pv1"}},
     .nodes = {{.name = "n1", .ready = false, .in_use = {"pv1"}}},
     .advance = 7min,
     .force_on_timeout = false,
     .expect = {}},
    {.name = "9 - in use on a Ready node for longer than max-wait: waits",
     .have = {{.node = "n1", .pv = "pv1"}},
     .nodes = {{.name = "n1", .in_use = {"pv1"}}},
     .advance = 10min,
     .expect = {}},
    {.name = "10 - in use on a node out of service: detached at once, forced",
     .have = {{.node = "n1", .pv = "pv1"}},
     .nodes = {{.name = "n1", .out_of_service = true, .in_use = {"pv1"}}},
     .expect = {"status n1", "detach csi/pv1 (pv1) from n1 forced"}},
    {.name = "11 - a node gone from the API may still use it: forced once the time is up",
     .have = {{.node = "gone", .pv = "pv1"}},
     .advance = 6min,
     .expect = {"status gone", "detach csi/pv1 (pv1) from gone forced"}},
    {.name = "12 - a node the controller does not manage is left alone",
     .have = {{.node = "n1", .pv = "pv1"}},
     .nodes = {{.name = "n1", .managed = false}},
     .expect = {}},
    {.name = "13 - RWO attached to another node: Multi-Attach error naming the pods there",
     .want = {{.node = "n1", .pv = "pv1", .pods = {"default/a", "other/x"}},
              {.node = "n2", .pv = "pv1", .pods = {"default/b"}}},
     .have = {{.node = "n1", .pv = "pv1"}},
     .nodes = {{.name = "n1", .in_use = {"pv1"}}, {.name = "n2"}},
     .expect = {"event default/b Warning FailedAttachVolume: Multi-Attach error for volume "
                "\"pv1\" Volume is already used by pod(s) a and 1 pod(s) in different "
                "namespaces"}},
    {.name = "14 - the Multi-Attach error is told once while it lasts",
     .want = {{.node = "n1", .pv = "pv1"}, {.node = "n2", .pv = "pv1", .pods = {"default/b"}}},
     .have = {{.node = "n1", .pv = "pv1"}},
     .nodes = {{.name = "n1", .in_use = {"pv1"}}, {.name = "n2"}},
     .advance = 1s,
     .expect = {}},
    {.name = "15 - RWO held by pods of other namespaces only: counted, not named",
     .want = {{.node = "n1", .pv = "pv1", .pods = {"other/x"}},
              {.node = "n2", .pv = "pv1", .pods = {"default/b"}}},
     .have = {{.node = "n1", .pv = "pv1"}},
     .nodes = {{.name = "n1", .in_use = {"pv1"}}, {.name = "n2"}},
     .expect = {"event default/b Warning FailedAttachVolume: Multi-Attach error for volume "
                "\"pv1\" Volume is already used by 1 pod(s) in different namespaces"}},
    {.name = "16 - RWO attached to another node no pod wants: exclusively attached",
     .want = {{.node = "n2", .pv = "pv1", .pods = {"default/b"}}},
     .have = {{.node = "n1", .pv = "pv1"}},
     .nodes = {{.name = "n1", .in_use = {"pv1"}}, {.name = "n2"}},
     .expect = {"event default/b Warning FailedAttachVolume: Multi-Attach error for volume "
                "\"pv1\" Volume is already exclusively attached to one node and can't be "
                "attached to another"}},
    {.name = "17 - RWX attached to another node: attached here too",
     .want = {{.node = "n1", .pv = "pv1", .rwo = false},
              {.node = "n2", .pv = "pv1", .rwo = false, .pods = {"default/b"}}},
     .have = {{.node = "n1", .pv = "pv1"}},
     .nodes = {{.name = "n1", .in_use = {"pv1"}}, {.name = "n2"}},
     .expect = {"attach csi/pv1 to n2"}},
    {.name = "18 - RWO with an operation in flight on another node: nothing starts",
     .want = {{.node = "n2", .pv = "pv1", .pods = {"default/b"}}},
     .nodes = {{.name = "n1"}, {.name = "n2"}},
     .pending = {"pv1@n1"},
     .expect = {}},
    {.name = "19 - crash: maybe attached to n1, wanted on n2 - detached from n1 first",
     .want = {{.node = "n2", .pv = "pv1", .pods = {"default/b"}}},
     .have = {{.node = "n1", .pv = "pv1", .attached = false}},
     .nodes = {{.name = "n1"}, {.name = "n2"}},
     .expect = {"status n1", "detach csi/pv1 (pv1) from n1"}},
    {.name = "20 - crash: maybe attached to the node that wants it - attached again",
     .want = {{.node = "n1", .pv = "pv1"}},
     .have = {{.node = "n1", .pv = "pv1", .attached = false}},
     .nodes = {{.name = "n1"}},
     .expect = {"attach csi/pv1 to n1"}},
    {.name = "21 - a detach in flight: not started twice",
     .have = {{.node = "n1", .pv = "pv1"}},
     .nodes = {{.name = "n1"}},
     .pending = {"pv1@n1"},
     .expect = {}},
};

class ReconcilerTable : public ::testing::TestWithParam<Row> {};

TEST_P(ReconcilerTable, Pass) {
  const Row& row = GetParam();
  os::testing::FakeClock clock;
  ActualState actual;
  for (const auto& h : row.have) {
    if (h.attached) {
      actual.MarkAttached(Unique(h.pv), "csi", h.pv, h.node, "");
    } else {
      actual.MarkUncertain(Unique(h.pv), "csi", h.pv, h.node);
    }
  }
  RecordedOperations ops;
  for (const auto& p : row.pending) {
    ops.pending.insert(Unique(p.substr(0, p.find('@'))) + p.substr(p.find('@')));
  }
  ops.failing_status = row.failing_status;
  auto info = [&](const std::string& name) {
    NodeInfo i;
    for (const auto& n : row.nodes) {
      if (n.name != name) continue;
      i.exists = true;
      i.managed = n.managed;
      i.ready = n.ready;
      i.out_of_service = n.out_of_service;
      for (const auto& pv : n.in_use) i.volumes_in_use.insert(Unique(pv));
    }
    return i;
  };
  Reconciler r(actual, ops, clock, info,
               {.max_wait_for_unmount = 6min, .force_detach_on_timeout = row.force_on_timeout});
  const DesiredState desired = Desired(row.want);
  r.Reconcile(desired);
  if (row.advance.count() > 0) {
    ops.done.clear();
    clock.Advance(row.advance);
    r.Reconcile(desired);
  }
  EXPECT_EQ(ops.done, row.expect) << row.name;
}

INSTANTIATE_TEST_SUITE_P(Rows, ReconcilerTable, ::testing::ValuesIn(kRows),
                         [](const auto& info) { return "row" + std::to_string(info.index + 1); });

TEST(ActualState, ReportsOnlyCertainAttachmentsNotBeingDetached) {
  ActualState actual;
  actual.MarkAttached("csi/a", "csi", "a", "n1", "/dev/a");
  actual.MarkUncertain("csi/b", "csi", "b", "n1");
  actual.MarkAttached("csi/c", "csi", "c", "n1", "");
  actual.MarkDetaching("csi/c", "n1");
  auto reported = actual.ReportedAttached("n1");
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_EQ(reported[0].name, "csi/a");
  EXPECT_EQ(reported[0].device_path, "/dev/a");
  EXPECT_EQ(actual.TakeChangedNodes(), std::set<std::string>{"n1"});
  actual.KeepAttached("csi/c", "n1");  // wanted again
  EXPECT_EQ(actual.ReportedAttached("n1").size(), 2u);
  EXPECT_EQ(actual.TakeChangedNodes(), std::set<std::string>{"n1"});
  actual.MarkDetached("csi/a", "n1");
  EXPECT_EQ(actual.NodesOf("csi/a"), std::vector<std::string>{});
  EXPECT_EQ(actual.NodesOf("csi/b"), std::vector<std::string>{"n1"});  // maybe attached
  EXPECT_FALSE(actual.AttachedTo("csi/b", "n1"));
}

}  // namespace
}  // namespace kvol::controller::attachdetach
