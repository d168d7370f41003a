#include "controller/garbagecollector/dependents.h"

#include <algorithm>

namespace kvol::controller::garbagecollector {

std::string ObjectKey(std::string_view api_version, std::string_view kind, std::string_view ns,
                      std::string_view name) {
  std::string out;
  out.reserve(api_version.size() + kind.size() + ns.size() + name.size() + 3);
  out.append(api_version).append("|").append(kind).append("|").append(ns).append("|").append(name);
  return out;
}

ObjectId ParseObjectKey(const std::string& key) {
  ObjectId id;
  std::string* parts[] = {&id.api_version, &id.kind, &id.ns, &id.name};
  size_t start = 0;
  for (int i = 0; i < 4; ++i) {
    const size_t bar = i < 3 ? key.find('|', start) : std::string::npos;
    *parts[i] = key.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return id;
}

std::vector<api::OwnerReference> Dependents::Observe(const std::string& key,
                                                     const std::vector<api::OwnerReference>& owners,
                                                     bool* changed) {
  std::lock_guard lock(mu_);
  std::vector<api::OwnerReference> dropped;
  auto it = owners_.find(key);
  if (it != owners_.end() && it->second == owners) {
    *changed = false;
    return dropped;
  }
  *changed = true;
  if (it != owners_.end()) {
    for (const auto& old : it->second) {
      const bool kept = std::any_of(owners.begin(), owners.end(),
                                    [&](const auto& o) { return o.uid == old.uid; });
      if (kept) continue;
      dropped.push_back(old);
      auto d = dependents_.find(old.uid);
      if (d != dependents_.end() && (d->second.erase(key), d->second.empty())) dependents_.erase(d);
    }
  }
  if (owners.empty()) {
    if (it != owners_.end()) owners_.erase(it);
    return dropped;
  }
  for (const auto& o : owners) dependents_[o.uid].insert(key);
  owners_[key] = owners;
  return dropped;
}

std::vector<api::OwnerReference> Dependents::Forget(const std::string& key) {
  bool changed = false;
  return Observe(key, {}, &changed);
}

std::vector<std::string> Dependents::Of(const std::string& uid) const {
  std::lock_guard lock(mu_);
  auto it = dependents_.find(uid);
  if (it == dependents_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

std::optional<api::OwnerReference> Dependents::Reference(const std::string& key,
                                                         const std::string& uid) const {
  std::lock_guard lock(mu_);
  auto it = owners_.find(key);
  if (it == owners_.end()) return std::nullopt;
  for (const auto& o : it->second) {
    if (o.uid == uid) return o;
  }
  return std::nullopt;
}

size_t Dependents::size() const {
  std::lock_guard lock(mu_);
  return owners_.size();
}

}  // namespace kvol::controller::garbagecollector
