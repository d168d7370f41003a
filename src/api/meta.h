// meta/v1 types shared by every kind: ObjectMeta, owner references, label selectors, and the
// object references that tie storage objects together.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/codec.h"

namespace kvol::api {

using StringMap = std::map<std::string, std::string>;
using ResourceList = std::map<std::string, Quantity>;

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
  std::optional<bool> block_owner_deletion;
  KVOL_FIELDS(OwnerReference) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("name", s.name);
    v("uid", s.uid);
    v("controller", s.controller);
    v("blockOwnerDeletion", s.block_owner_deletion);
  }
};

struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::optional<Time> creation_timestamp;
  std::optional<Time> deletion_timestamp;
  std::optional<int64_t> deletion_grace_period_seconds;
  StringMap labels;
  StringMap annotations;
  std::vector<OwnerReference> owner_references;
  std::vector<std::string> finalizers;
  KVOL_FIELDS(ObjectMeta) {
    v("name", s.name);
    v("generateName", s.generate_name);
    v("namespace", s.namespace_);
    v("uid", s.uid);
    v("resourceVersion", s.resource_version);
    v("generation", s.generation);
    v("creationTimestamp", s.creation_timestamp);
    v("deletionTimestamp", s.deletion_timestamp);
    v("deletionGracePeriodSeconds", s.deletion_grace_period_seconds);
    v("labels", s.labels);
    v("annotations", s.annotations);
    v("ownerReferences", s.owner_references);
    v("finalizers", s.finalizers);
  }
};

inline bool HasFinalizer(const ObjectMeta& m, std::string_view f) {
  return std::find(m.finalizers.begin(), m.finalizers.end(), f) != m.finalizers.end();
}
// Adds `f` once.
inline void AddFinalizer(ObjectMeta& m, std::string_view f) {
  if (!HasFinalizer(m, f)) m.finalizers.emplace_back(f);
}

// metav1.ListMeta, for List kinds.
struct ListMeta {
  std::string resource_version;
  std::string continue_;
  std::optional<int64_t> remaining_item_count;
  KVOL_FIELDS(ListMeta) {
    v("resourceVersion", s.resource_version);
    v("continue", s.continue_);
    v("remainingItemCount", s.remaining_item_count);
  }
};

struct LabelSelectorRequirement {
  std::string key;
  std::string operator_;  // In, NotIn, Exists, DoesNotExist
  std::vector<std::string> values;
  KVOL_FIELDS(LabelSelectorRequirement) {
    v("key", s.key);
    v("operator", s.operator_);
    v("values", s.values);
  }
};

struct LabelSelector {
  StringMap match_labels;
  std::vector<LabelSelectorRequirement> match_expressions;
  KVOL_FIELDS(LabelSelector) {
    v("matchLabels", s.match_labels);
    v("matchExpressions", s.match_expressions);
  }
};

// core/v1 ObjectReference (PV claimRef, Event involvedObject).
struct ObjectReference {
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string api_version;
  std::string resource_version;
  std::string field_path;
  KVOL_FIELDS(ObjectReference) {
    v("kind", s.kind);
    v("namespace", s.namespace_);
    v("name", s.name);
    v("uid", s.uid);
    v("apiVersion", s.api_version);
    v("resourceVersion", s.resource_version);
    v("fieldPath", s.field_path);
  }
};

struct LocalObjectReference {
  std::string name;
  KVOL_FIELDS(LocalObjectReference) { v("name", s.name); }
};

struct SecretReference {
  std::string name;
  std::string namespace_;
  KVOL_FIELDS(SecretReference) {
    v("name", s.name);
    v("namespace", s.namespace_);
  }
};

struct TypedLocalObjectReference {
  std::optional<std::string> api_group;
  std::string kind;
  std::string name;
  KVOL_FIELDS(TypedLocalObjectReference) {
    v("apiGroup", s.api_group);
    v("kind", s.kind);
    v("name", s.name);
  }
};

struct TypedObjectReference {
  std::optional<std::string> api_group;
  std::string kind;
  std::string name;
  std::optional<std::string> namespace_;
  KVOL_FIELDS(TypedObjectReference) {
    v("apiGroup", s.api_group);
    v("kind", s.kind);
    v("name", s.name);
    v("namespace", s.namespace_);
  }
};

}  // namespace kvol::api
