// Matching nodes against node selectors: PV node affinity, pod nodeSelector and required node
// affinity. Terms are ORed, expressions within a term ANDed, as in Kubernetes' nodeaffinity.
#pragma once

#include "api/core.h"

namespace kvol::api {

// One expression against a node's labels. Missing labels satisfy NotIn and DoesNotExist only;
// Gt/Lt compare integers and fail on a non-integer label. An invalid expression never matches.
bool MatchNodeSelectorRequirement(const NodeSelectorRequirement& r, const StringMap& labels);

// A term matches when all its expressions and fields match; an empty term matches nothing.
// matchFields support metadata.name with In/NotIn and one value.
bool MatchNodeSelectorTerm(const NodeSelectorTerm& t, const Node& node);

// Any term matches.
bool MatchNodeSelector(const NodeSelector& s, const Node& node);

// spec.nodeSelector (all pairs equal) and the required node affinity of a pod spec.
bool PodSpecMatchesNode(const PodSpec& spec, const Node& node);

// A PV's spec.nodeAffinity.required; a PV without node affinity fits every node.
bool PersistentVolumeFitsNode(const PersistentVolumeSpec& pv, const Node& node);

}  // namespace kvol::api
