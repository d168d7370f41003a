// Node selector matching.
#include "api/node_selector.h"

#include <algorithm>
#include "base/strings.h"

namespace kvol::api {
namespace {

bool Contains(const std::vector<std::string>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

}  // namespace

bool MatchNodeSelectorRequirement(const NodeSelectorRequirement& r, const StringMap& labels) {
  auto it = labels.find(r.key);
  const bool has = it != labels.end();
  if (r.operator_ == "In") return !r.values.empty() && has && Contains(r.values, it->second);
  if (r.operator_ == "NotIn") return !r.values.empty() && (!has || !Contains(r.values, it->second));
  if (r.operator_ == "Exists") return r.values.empty() && has;
  if (r.operator_ == "DoesNotExist") return r.values.empty() && !has;
  if (r.operator_ == "Gt" || r.operator_ == "Lt") {
    int64_t want, have;
    if (r.values.size() != 1 || !ParseInt64(r.values[0], &want)) return false;
    if (!has || !ParseInt64(it->second, &have)) return false;
    return r.operator_ == "Gt" ? have > want : have < want;
  }
  return false;
}

bool MatchNodeSelectorTerm(const NodeSelectorTerm& t, const Node& node) {
  if (t.match_expressions.empty() && t.match_fields.empty()) return false;
  for (const auto& r : t.match_expressions) {
    if (!MatchNodeSelectorRequirement(r, node.metadata.labels)) return false;
  }
  for (const auto& f : t.match_fields) {
    if (f.key != "metadata.name" || f.values.size() != 1) return false;
    if (node.metadata.name.empty()) continue;  // Kubernetes ignores fields of a nameless node
    const bool equal = node.metadata.name == f.values[0];
    if (f.operator_ == "In") {
      if (!equal) return false;
    } else if (f.operator_ == "NotIn") {
      if (equal) return false;
    } else {
      return false;
    }
  }
  return true;
}

bool MatchNodeSelector(const NodeSelector& s, const Node& node) {
  return std::any_of(s.node_selector_terms.begin(), s.node_selector_terms.end(),
                     [&](const NodeSelectorTerm& t) { return MatchNodeSelectorTerm(t, node); });
}

bool PodSpecMatchesNode(const PodSpec& spec, const Node& node) {
  for (const auto& [k, v] : spec.node_selector) {
    auto it = node.metadata.labels.find(k);
    if (it == node.metadata.labels.end() || it->second != v) return false;
  }
  if (spec.affinity && spec.affinity->node_affinity &&
      spec.affinity->node_affinity->required_during_scheduling_ignored_during_execution) {
    return MatchNodeSelector(
        *spec.affinity->node_affinity->required_during_scheduling_ignored_during_execution, node);
  }
  return true;
}

bool PersistentVolumeFitsNode(const PersistentVolumeSpec& pv, const Node& node) {
  if (!pv.node_affinity || !pv.node_affinity->required) return true;
  return MatchNodeSelector(*pv.node_affinity->required, node);
}

}  // namespace kvol::api
