#include "controller/namespace/content.h"

#include <algorithm>

#include "api/scheme.h"

namespace kvol::controller::namespace_ {
namespace {

// How long Kubernetes' deleter reckons a finalizer takes.
constexpr int64_t kFinalizerEstimateSeconds = 15;

std::string ResourceName(const api::KindInfo& k) {
  return std::string(k.resource) + "." + std::string(k.group);
}

template <class T>
void DeleteKind(client::Client& client, const std::string& ns, Remaining& out) {
  const api::KindInfo& k = api::KindInfoOf<T>();
  auto& r = client.resource<T>();
  auto list = r.List(ns);
  if (!list.ok()) {
    out.failures.push_back(ResourceName(k) + ": " + list.error().message);
    return;
  }
  int64_t left = 0;
  for (const T& obj : list->items) {
    const T* now = &obj;
    T deleted;
    if (!obj.metadata.deletion_timestamp) {
      api::DeleteOptions opts;
      opts.propagation_policy = "Background";
      opts.precondition_uid = obj.metadata.uid;
      auto d = r.Delete(ns, obj.metadata.name, opts);
      if (!d.ok()) {
        if (api::IsNotFound(d.error())) continue;  // gone meanwhile
        out.failures.push_back(ResourceName(k) + ": " + d.error().message);
        ++left;
        continue;
      }
      if (!d->metadata.deletion_timestamp) continue;  // deleted
      deleted = *std::move(d);
      now = &deleted;
    }
    ++left;
    for (const auto& f : now->metadata.finalizers) {
      ++out.finalizers[f];
      out.estimate_seconds = std::max(out.estimate_seconds, kFinalizerEstimateSeconds);
    }
    if constexpr (std::is_same_v<T, api::Pod>) {
      out.estimate_seconds =
          std::max(out.estimate_seconds, now->metadata.deletion_grace_period_seconds.value_or(0));
    }
  }
  if (left > 0) out.resources[ResourceName(k)] = left;
}

api::NamespaceCondition Condition(std::string type, bool failing, std::string reason,
                                  std::string message) {
  return {.type = std::move(type),
          .status = failing ? "True" : "False",
          .reason = std::move(reason),
          .message = std::move(message)};
}

template <class Map>
std::string Counts(const Map& m, std::string_view joiner) {
  std::string out;
  for (const auto& [name, n] : m) {
    if (!out.empty()) out += ", ";
    out += name + std::string(joiner) + std::to_string(n) + " resource instances";
  }
  return out;
}

}  // namespace

Remaining DeleteContent(client::Client& client, const std::string& ns) {
  Remaining out;
  api::ForEachKind([&]<class T>(std::type_identity<T>) {
    if (api::KindInfoOf<T>().namespaced) DeleteKind<T>(client, ns, out);
  });
  return out;
}

std::vector<api::NamespaceCondition> DeletionConditions(
    const Remaining& remaining, const std::vector<api::NamespaceCondition>& old,
    const api::Time& now) {
  std::vector<api::NamespaceCondition> out;
  out.push_back(Condition("NamespaceDeletionDiscoveryFailure", false, "ResourcesDiscovered",
                          "All resources successfully discovered"));
  out.push_back(Condition("NamespaceDeletionGroupVersionParsingFailure", false,
                          "ParsedGroupVersions", "All legacy kube types successfully parsed"));
  if (remaining.failures.empty()) {
    out.push_back(Condition("NamespaceDeletionContentFailure", false, "ContentDeleted",
                            "All content successfully deleted, may be waiting on finalization"));
  } else {
    std::string errs;
    for (const auto& f : remaining.failures) errs += (errs.empty() ? "" : ", ") + f;
    if (remaining.failures.size() > 1) errs = "[" + errs + "]";
    out.push_back(Condition("NamespaceDeletionContentFailure", true, "ContentDeletionFailed",
                            "Failed to delete all resource types, " +
                                std::to_string(remaining.failures.size()) + " remaining: " + errs));
  }
  if (remaining.resources.empty()) {
    out.push_back(Condition("NamespaceContentRemaining", false, "ContentRemoved",
                            "All content successfully removed"));
  } else {
    out.push_back(
        Condition("NamespaceContentRemaining", true, "SomeResourcesRemain",
                  "Some resources are remaining: " + Counts(remaining.resources, " has ")));
  }
  if (remaining.finalizers.empty()) {
    out.push_back(Condition("NamespaceFinalizersRemaining", false, "ContentHasNoFinalizers",
                            "All content-preserving finalizers finished"));
  } else {
    out.push_back(Condition("NamespaceFinalizersRemaining", true, "SomeFinalizersRemain",
                            "Some content in the namespace has finalizers remaining: " +
                                Counts(remaining.finalizers, " in ")));
  }
  for (auto& c : out) {
    auto was =
        std::find_if(old.begin(), old.end(), [&](const auto& o) { return o.type == c.type; });
    c.last_transition_time =
        was != old.end() && was->status == c.status ? was->last_transition_time : now;
  }
  return out;
}

}  // namespace kvol::controller::namespace_
