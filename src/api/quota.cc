// What objects count for against ResourceQuotas, and the admission check.
#include "api/quota.h"

#include <algorithm>

#include "api/labels.h"

namespace kvol::api {

namespace {

const Quantity kOne = Quantity::FromUnits(1);

// Adds `q` to `list[name]`; a sum past the supported range stays where it was (no quota is
// that large).
void AddTo(ResourceList& list, const std::string& name, const Quantity& q) {
  auto [it, fresh] = list.try_emplace(name, q);
  if (fresh) return;
  if (auto sum = it->second.Add(q); sum.ok()) it->second = *sum;
}

// The compute resources a pod's requests and limits give, as Kubernetes' podComputeUsageHelper
// names them.
ResourceList ComputeUsage(const ResourceList& requests, const ResourceList& limits) {
  ResourceList out;
  out["pods"] = kOne;
  for (const auto& [name, q] : requests) {
    if (name == "cpu" || name == "memory" || name == "ephemeral-storage") {
      out[name] = q;
      out["requests." + name] = q;
    } else if (name.rfind("hugepages-", 0) == 0) {
      out["requests." + name] = q;
    } else if (name.find('/') != std::string::npos &&
               name.rfind("kubernetes.io/", 0) == std::string::npos) {
      out["requests." + name] = q;  // an extended resource
    }
  }
  for (const auto& [name, q] : limits) {
    if (name == "cpu" || name == "memory" || name == "ephemeral-storage") {
      out["limits." + name] = q;
    }
  }
  return out;
}

bool IsPodResource(std::string_view name) {
  if (name == kQuotaRequestsStorage) return false;  // claims'
  return name == "pods" || name == "count/pods" || name == "cpu" || name == "memory" ||
         name == "ephemeral-storage" || name.rfind("requests.", 0) == 0 ||
         name.rfind("limits.", 0) == 0 || name.rfind("hugepages-", 0) == 0;
}

std::string PrettyList(const ResourceList& list) {
  std::string out;
  for (const auto& [name, q] : list) {
    if (!out.empty()) out += ",";
    out += name + "=" + q.ToString();
  }
  return out;
}

std::string StringOf(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A pod against one scope selector requirement.
bool PodMatchesScope(const QuotaItem& pod, const ScopedResourceSelectorRequirement& r) {
  if (r.scope_name == "Terminating") return pod.terminating;
  if (r.scope_name == "NotTerminating") return !pod.terminating;
  if (r.scope_name == "BestEffort") return pod.best_effort;
  if (r.scope_name == "NotBestEffort") return !pod.best_effort;
  if (r.scope_name == "PriorityClass") {
    const bool in =
        std::find(r.values.begin(), r.values.end(), pod.priority_class) != r.values.end();
    if (r.operator_ == "In") return in;
    if (r.operator_ == "NotIn") return !in;
    if (r.operator_ == "Exists") return !pod.priority_class.empty();
    if (r.operator_ == "DoesNotExist") return pod.priority_class.empty();
  }
  return false;
}

// The names of spec.hard that `item`'s kind of object counts for.
bool Tracks(std::string_view name, const QuotaItem& item) {
  auto source = QuotaSourceOf(name);
  return source && source->first == item.resource && source->second == item.group;
}

}  // namespace

std::string ObjectCountName(std::string_view resource, std::string_view group) {
  std::string out = "count/" + std::string(resource);
  if (!group.empty()) out += "." + std::string(group);
  return out;
}

QuotaItem ObjectCountItem(const KindInfo& kind) {
  QuotaItem item{.resource = std::string(kind.resource), .group = std::string(kind.group)};
  item.usage[ObjectCountName(kind.resource, kind.group)] = kOne;
  if (kind.group.empty() &&
      (kind.resource == "configmaps" || kind.resource == "secrets" ||
       kind.resource == "resourcequotas" || kind.resource == "replicationcontrollers")) {
    item.usage[std::string(kind.resource)] = kOne;
  }
  return item;
}

QuotaItem QuotaItemOf(const PersistentVolumeClaim& pvc) {
  QuotaItem item = ObjectCountItem(KindInfoOf<PersistentVolumeClaim>());
  item.usage[std::string(kQuotaClaims)] = kOne;
  std::string cls = pvc.spec.storage_class_name.value_or("");
  if (cls.empty()) {
    auto beta = pvc.metadata.annotations.find("volume.beta.kubernetes.io/storage-class");
    if (beta != pvc.metadata.annotations.end()) cls = beta->second;
  }
  const std::string per_class = cls + std::string(kQuotaStorageClassSuffix);
  if (!cls.empty()) item.usage[per_class + std::string(kQuotaClaims)] = kOne;
  auto request = pvc.spec.resources.requests.find("storage");
  if (request != pvc.spec.resources.requests.end()) {
    item.usage[std::string(kQuotaRequestsStorage)] = request->second;
    if (!cls.empty()) item.usage[per_class + std::string(kQuotaRequestsStorage)] = request->second;
  }
  return item;
}

QuotaItem QuotaItemOf(const Pod& pod) {
  QuotaItem item = ObjectCountItem(KindInfoOf<Pod>());
  item.pod = true;
  const Json& extra = pod.spec.unknown_fields;
  item.terminating = extra.is_object() && extra.contains("activeDeadlineSeconds") &&
                     extra["activeDeadlineSeconds"].is_number_integer() &&
                     extra["activeDeadlineSeconds"].get<int64_t>() >= 0;
  item.priority_class = StringOf(extra, "priorityClassName");
  item.best_effort = true;
  ResourceList requests, limits;
  auto each = [&](const std::vector<Container>& containers, bool init) {
    for (const auto& c : containers) {
      const auto& r = c.resources;
      for (const auto& list : {r.requests, r.limits}) {
        for (const auto& [name, _] : list) {
          if (name == "cpu" || name == "memory") item.best_effort = false;
        }
      }
      ResourceList mine = ComputeUsage(r.requests, r.limits);
      std::set<std::string, std::less<>> named;
      for (const auto& [name, _] : mine) named.insert(name);
      item.container_resources.push_back(std::move(named));
      if (!init) {
        for (const auto& [name, q] : r.requests) AddTo(requests, name, q);
        for (const auto& [name, q] : r.limits) AddTo(limits, name, q);
      } else {
        // Init containers run one at a time, before the others: the largest counts.
        for (const auto& [name, q] : r.requests) {
          if (!requests.count(name) || requests[name] < q) requests[name] = q;
        }
        for (const auto& [name, q] : r.limits) {
          if (!limits.count(name) || limits[name] < q) limits[name] = q;
        }
      }
    }
  };
  each(pod.spec.containers, false);
  each(pod.spec.init_containers, true);
  if (pod.status.phase == "Succeeded" || pod.status.phase == "Failed") return item;
  for (const auto& [name, q] : ComputeUsage(requests, limits)) item.usage[name] = q;
  return item;
}

QuotaItem QuotaItemOf(const Service& svc) {
  QuotaItem item = ObjectCountItem(KindInfoOf<Service>());
  item.usage["services"] = kOne;
  const std::string type = StringOf(svc.spec, "type");
  if (type == "LoadBalancer") item.usage["services.loadbalancers"] = kOne;
  if (type == "NodePort" || type == "LoadBalancer") {
    int64_t ports = 0;
    if (svc.spec.is_object() && svc.spec.contains("ports") && svc.spec["ports"].is_array()) {
      for (const auto& p : svc.spec["ports"])
        ports += p.is_object() && p.contains("nodePort") ? 1 : 0;
      if (ports == 0) ports = static_cast<int64_t>(svc.spec["ports"].size());
    }
    item.usage["services.nodeports"] = Quantity::FromUnits(ports);
  }
  return item;
}

std::optional<std::pair<std::string, std::string>> QuotaSourceOf(std::string_view name) {
  using Source = std::pair<std::string, std::string>;
  if (name == kQuotaClaims || name == kQuotaRequestsStorage)
    return Source{"persistentvolumeclaims", ""};
  const size_t suffix = name.find(kQuotaStorageClassSuffix);
  if (suffix != std::string_view::npos && suffix > 0) {
    const std::string_view what = name.substr(suffix + kQuotaStorageClassSuffix.size());
    if (what == kQuotaClaims || what == kQuotaRequestsStorage)
      return Source{"persistentvolumeclaims", ""};
    return std::nullopt;
  }
  if (name == "services" || name == "services.loadbalancers" || name == "services.nodeports") {
    return Source{"services", ""};
  }
  if (name == "configmaps" || name == "secrets" || name == "resourcequotas" ||
      name == "replicationcontrollers") {
    return Source{std::string(name), ""};
  }
  if (IsPodResource(name)) return Source{"pods", ""};
  if (name.rfind("count/", 0) == 0) {
    std::string_view rest = name.substr(6);
    const size_t dot = rest.find('.');
    const std::string_view resource = rest.substr(0, dot);
    const std::string_view group = dot == std::string_view::npos ? "" : rest.substr(dot + 1);
    bool served = false;
    ForEachKind([&](auto t) {
      const KindInfo& k = KindInfoOf<typename decltype(t)::type>();
      served = served || (k.namespaced && k.resource == resource && k.group == group);
    });
    if (served) return Source{std::string(resource), std::string(group)};
  }
  return std::nullopt;
}

bool QuotaMatches(const ResourceQuota& quota, const QuotaItem& item) {
  std::vector<ScopedResourceSelectorRequirement> scopes;
  for (const auto& s : quota.spec.scopes)
    scopes.push_back({.scope_name = s, .operator_ = "Exists"});
  if (quota.spec.scope_selector) {
    for (const auto& r : quota.spec.scope_selector->match_expressions) scopes.push_back(r);
  }
  if (scopes.empty()) return true;
  if (!item.pod) return false;
  return std::all_of(scopes.begin(), scopes.end(),
                     [&](const auto& r) { return PodMatchesScope(item, r); });
}

ResourceList QuotaUsed(const ResourceQuota& quota, const std::vector<QuotaItem>& items) {
  ResourceList used;
  for (const auto& [name, _] : quota.spec.hard) {
    if (QuotaSourceOf(name)) used[name] = Quantity();
  }
  for (const auto& item : items) {
    if (!QuotaMatches(quota, item)) continue;
    for (const auto& [name, q] : item.usage) {
      if (used.count(name)) AddTo(used, name, q);
    }
  }
  return used;
}

QuotaItem QuotaGrowth(QuotaItem after, const QuotaItem& before) {
  for (auto it = after.usage.begin(); it != after.usage.end();) {
    auto old = before.usage.find(it->first);
    if (old != before.usage.end()) {
      auto grown = it->second.Sub(old->second);
      if (!grown.ok() || grown->Sign() <= 0) {
        it = after.usage.erase(it);
        continue;
      }
      it->second = *grown;
    }
    ++it;
  }
  return after;
}

QuotaDecision CheckQuota(const ResourceQuota& quota, const QuotaItem& item) {
  QuotaDecision d;
  const ResourceList& hard = quota.spec.hard;
  // The pod rule: every container of a pod counted against a cpu or memory quota states it.
  if (item.pod) {
    std::set<std::string, std::less<>> required;
    for (const auto& [name, _] : hard) {
      if (name == "cpu" || name == "memory" || name == "requests.cpu" ||
          name == "requests.memory" || name == "limits.cpu" || name == "limits.memory") {
        required.insert(name);
      }
    }
    std::set<std::string, std::less<>> missing;
    for (const auto& named : item.container_resources) {
      for (const auto& r : required) {
        if (!named.count(r)) missing.insert(r);
      }
    }
    if (!missing.empty()) {
      std::string list;
      for (const auto& m : missing) list += (list.empty() ? "" : ",") + m;
      d.refusal = "failed quota: " + quota.metadata.name + ": must specify " + list;
      return d;
    }
  }
  ResourceList delta;
  for (const auto& [name, q] : item.usage) {
    if (hard.count(name) && Tracks(name, item) && !q.IsZero()) delta[name] = q;
  }
  if (delta.empty()) return d;
  std::string unknown;
  for (const auto& [name, _] : delta) {
    if (!quota.status.used.count(name)) unknown += (unknown.empty() ? "" : ",") + name;
  }
  if (!unknown.empty()) {
    d.refusal = "status unknown for quota: " + quota.metadata.name + ", resources: " + unknown;
    return d;
  }
  ResourceList used = quota.status.used;
  ResourceList requested, was, limited;
  for (const auto& [name, q] : delta) {
    const Quantity before = used[name];
    AddTo(used, name, q);
    if (used[name] > hard.at(name)) {
      requested[name] = q;
      was[name] = before;
      limited[name] = hard.at(name);
    }
  }
  if (!requested.empty()) {
    d.refusal = "exceeded quota: " + quota.metadata.name + ", requested: " + PrettyList(requested) +
                ", used: " + PrettyList(was) + ", limited: " + PrettyList(limited);
    return d;
  }
  d.used = std::move(used);
  return d;
}

}  // namespace kvol::api
