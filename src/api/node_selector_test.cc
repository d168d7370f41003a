// Node selector terms against node labels: PV node affinity and pod placement constraints.
#include "api/node_selector.h"

#include <gtest/gtest.h>

namespace kvol::api {
namespace {

Node MakeNode(std::string name, StringMap labels) {
  Node n;
  n.metadata.name = std::move(name);
  n.metadata.labels = std::move(labels);
  return n;
}

NodeSelectorTerm Term(std::vector<NodeSelectorRequirement> exprs,
                      std::vector<NodeSelectorRequirement> fields = {}) {
  NodeSelectorTerm t;
  t.match_expressions = std::move(exprs);
  t.match_fields = std::move(fields);
  return t;
}

TEST(NodeSelectorTest, Requirements) {
  const StringMap labels = {{"kubernetes.io/hostname", "k8s-node01"}, {"cores", "8"},
                            {"zone", "a"}};
  struct Case {
    NodeSelectorRequirement r;
    bool matches;
  };
  const Case kCases[] = {
      {{"kubernetes.io/hostname", "In", {"k8s-node01"}}, true},
      {{"kubernetes.io/hostname", "In", {"k8s-node02"}}, false},
      {{"missing", "In", {"x"}}, false},
      {{"zone", "NotIn", {"b", "c"}}, true},
      {{"zone", "NotIn", {"a"}}, false},
      {{"missing", "NotIn", {"a"}}, true},
      {{"zone", "Exists", {}}, true},
      {{"missing", "Exists", {}}, false},
      {{"missing", "DoesNotExist", {}}, true},
      {{"zone", "DoesNotExist", {}}, false},
      {{"cores", "Gt", {"4"}}, true},
      {{"cores", "Gt", {"8"}}, false},
      {{"cores", "Lt", {"16"}}, true},
      {{"cores", "Lt", {"8"}}, false},
      {{"zone", "Gt", {"1"}}, false},      // not an integer label
      {{"missing", "Gt", {"1"}}, false},   // missing label
      {{"cores", "Gt", {"x"}}, false},     // invalid requirement
      {{"cores", "Gt", {"1", "2"}}, false},
      {{"zone", "In", {}}, false},
      {{"zone", "Exists", {"a"}}, false},
      {{"zone", "Equals", {"a"}}, false},  // unknown operator
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(MatchNodeSelectorRequirement(c.r, labels), c.matches)
        << c.r.key << " " << c.r.operator_;
  }
}

TEST(NodeSelectorTest, TermsAreOredExpressionsAnded) {
  Node node = MakeNode("n1", {{"zone", "a"}, {"disk", "ssd"}});
  NodeSelector s;
  s.node_selector_terms = {Term({{"zone", "In", {"b"}}}),
                           Term({{"zone", "In", {"a"}}, {"disk", "In", {"ssd"}}})};
  EXPECT_TRUE(MatchNodeSelector(s, node));
  s.node_selector_terms[1].match_expressions[1].values = {"hdd"};
  EXPECT_FALSE(MatchNodeSelector(s, node));
  // An empty term matches nothing; so does a selector with no terms.
  s.node_selector_terms = {Term({})};
  EXPECT_FALSE(MatchNodeSelector(s, node));
  s.node_selector_terms.clear();
  EXPECT_FALSE(MatchNodeSelector(s, node));
}

TEST(NodeSelectorTest, MatchFieldsByName) {
  Node node = MakeNode("n1", {});
  NodeSelector s;
  s.node_selector_terms = {Term({}, {{"metadata.name", "In", {"n1"}}})};
  EXPECT_TRUE(MatchNodeSelector(s, node));
  s.node_selector_terms = {Term({}, {{"metadata.name", "NotIn", {"n1"}}})};
  EXPECT_FALSE(MatchNodeSelector(s, node));
  s.node_selector_terms = {Term({}, {{"metadata.uid", "In", {"n1"}}})};
  EXPECT_FALSE(MatchNodeSelector(s, node));
}

TEST(NodeSelectorTest, PersistentVolumeNodeAffinity) {
  PersistentVolumeSpec pv;
  EXPECT_TRUE(PersistentVolumeFitsNode(pv, MakeNode("any", {})));
  pv.node_affinity.emplace().required.emplace().node_selector_terms = {
      Term({{"kubernetes.io/hostname", "In", {"k8s-node01"}}})};
  EXPECT_TRUE(PersistentVolumeFitsNode(pv, MakeNode("x", {{"kubernetes.io/hostname", "k8s-node01"}})));
  EXPECT_FALSE(PersistentVolumeFitsNode(pv, MakeNode("x", {{"kubernetes.io/hostname", "k8s-node02"}})));
}

TEST(NodeSelectorTest, PodNodeSelectorAndAffinity) {
  PodSpec spec;
  spec.node_selector = {{"disk", "ssd"}};
  Node ssd = MakeNode("a", {{"disk", "ssd"}, {"zone", "1"}});
  Node hdd = MakeNode("b", {{"disk", "hdd"}, {"zone", "1"}});
  EXPECT_TRUE(PodSpecMatchesNode(spec, ssd));
  EXPECT_FALSE(PodSpecMatchesNode(spec, hdd));
  spec.affinity.emplace().node_affinity.emplace()
      .required_during_scheduling_ignored_during_execution.emplace()
      .node_selector_terms = {Term({{"zone", "In", {"2"}}})};
  EXPECT_FALSE(PodSpecMatchesNode(spec, ssd));
  ssd.metadata.labels["zone"] = "2";
  EXPECT_TRUE(PodSpecMatchesNode(spec, ssd));
}

}  // namespace
}  // namespace kvol::api
