// Resource quota, as Kubernetes' quota evaluators count it: what each object counts for
// against its namespace's ResourceQuotas (claims: their number and requested storage, in all
// and per class; pods: their number and compute requests and limits; services: their number,
// node ports and load balancers; every kind: count/<resource>[.<group>]), which quotas it
// counts against (a quota with scopes counts pods only), what a quota's status.used is, and the
// check quota admission makes before an object is written. Pure functions: the quota
// controller and the API server's admission share them.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/core.h"
#include "api/generic.h"
#include "api/scheme.h"

namespace kvol::api {

// Quota resource names Kubernetes defines (spec.hard keys).
inline constexpr std::string_view kQuotaPods = "pods";
inline constexpr std::string_view kQuotaClaims = "persistentvolumeclaims";
inline constexpr std::string_view kQuotaRequestsStorage = "requests.storage";
// <class>.storageclass.storage.k8s.io/persistentvolumeclaims, .../requests.storage
inline constexpr std::string_view kQuotaStorageClassSuffix = ".storageclass.storage.k8s.io/";

// What one object counts for.
struct QuotaItem {
  std::string resource;  // plural: "persistentvolumeclaims"
  std::string group;     // "" for the core group
  ResourceList usage;
  // Pods only: what scopes look at, and what each container states, for the rule that every
  // container of a pod counted against a cpu or memory quota names that resource.
  bool pod = false;
  bool terminating = false;  // spec.activeDeadlineSeconds is set
  bool best_effort = false;  // no container requests or limits anything
  std::string priority_class;
  std::vector<std::set<std::string, std::less<>>> container_resources;
};

// count/<resource> for the core group, count/<resource>.<group> otherwise.
std::string ObjectCountName(std::string_view resource, std::string_view group);

QuotaItem QuotaItemOf(const PersistentVolumeClaim& pvc);
// A pod that has finished (Succeeded, Failed) counts for count/pods only.
QuotaItem QuotaItemOf(const Pod& pod);
QuotaItem QuotaItemOf(const Service& svc);
// Any other kind counts once, under count/..., and under its legacy name for the core kinds
// that have one (configmaps, secrets, resourcequotas, replicationcontrollers).
QuotaItem ObjectCountItem(const KindInfo& kind);
template <class T>
QuotaItem QuotaItemOf(const T&) {
  return ObjectCountItem(KindInfoOf<T>());
}

// The objects whose usage a spec.hard name counts, as (resource, group); nullopt for a name no
// evaluator tracks (it is left out of status.used, as Kubernetes leaves it).
std::optional<std::pair<std::string, std::string>> QuotaSourceOf(std::string_view name);

// Whether `item` counts against `quota`: a quota with scopes (or a scope selector) counts the
// pods they select and nothing else.
bool QuotaMatches(const ResourceQuota& quota, const QuotaItem& item);

// status.used for `quota`, given every object of its namespace that counts: zero for each
// tracked name of spec.hard that no object adds to.
ResourceList QuotaUsed(const ResourceQuota& quota, const std::vector<QuotaItem>& items);

// What an update adds: the growth of each resource (a claim's larger request), never less
// than zero.
QuotaItem QuotaGrowth(QuotaItem after, const QuotaItem& before);

struct QuotaDecision {
  // Why the object may not be written, in Kubernetes' words ("exceeded quota: q, requested:
  // requests.storage=20Gi, used: requests.storage=0, limited: requests.storage=10Gi").
  std::optional<std::string> refusal;
  // status.used with the object counted; nullopt when it adds nothing the quota limits.
  std::optional<ResourceList> used;
};
// Quota admission for one quota the item matches.
QuotaDecision CheckQuota(const ResourceQuota& quota, const QuotaItem& item);

}  // namespace kvol::api
