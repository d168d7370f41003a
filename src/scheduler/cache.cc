#include "scheduler/cache.h"

#include "base/strings.h"
#include "client/informer.h"
#include "client/pod_claims.h"

namespace kvol::scheduler {

using client::KeyOf;

namespace {

// Whether an object at resourceVersion `incoming` is older than the one held: the answer to
// the scheduler's own write can arrive after the informer has delivered a later change (the
// claim it annotated, already provisioned and bound). Versions that are not numbers are not
// compared.
bool Older(const std::string& incoming, const std::string& held) {
  int64_t a = 0, b = 0;
  return ParseInt64(incoming, &a) && ParseInt64(held, &b) && a < b;
}

}  // namespace

void Cache::UpsertNode(const api::Node& node) {
  std::lock_guard lock(mu_);
  nodes_[node.metadata.name] = std::make_shared<const api::Node>(node);
}

void Cache::RemoveNode(const std::string& name) {
  std::lock_guard lock(mu_);
  nodes_.erase(name);
}

void Cache::UpsertClaim(ClaimPtr claim) {
  std::string key = KeyOf(*claim);
  std::lock_guard lock(mu_);
  ClaimPtr& held = claims_[std::move(key)];
  if (held && Older(claim->metadata.resource_version, held->metadata.resource_version)) return;
  held = std::move(claim);
}

void Cache::UpsertClaim(const api::PersistentVolumeClaim& claim) {
  UpsertClaim(std::make_shared<const api::PersistentVolumeClaim>(claim));
}

void Cache::RemoveClaim(const std::string& key) {
  std::lock_guard lock(mu_);
  claims_.erase(key);
}

void Cache::UpsertVolume(VolumePtr volume) {
  VolumePtr held = volumes_.Get(volume->metadata.name);
  if (held && Older(volume->metadata.resource_version, held->metadata.resource_version)) return;
  volumes_.Upsert(std::move(volume));
}

void Cache::UpsertVolume(const api::PersistentVolume& volume) {
  UpsertVolume(std::make_shared<const api::PersistentVolume>(volume));
}

void Cache::RemoveVolume(const std::string& name) { volumes_.Remove(name); }

void Cache::UpsertClass(const api::StorageClass& cls) {
  std::lock_guard lock(mu_);
  classes_[cls.metadata.name] = std::make_shared<const api::StorageClass>(cls);
}

void Cache::RemoveClass(const std::string& name) {
  std::lock_guard lock(mu_);
  classes_.erase(name);
}

void Cache::UpsertCSINode(const api::CSINode& csinode) {
  std::map<std::string, int> limits;
  for (const auto& d : csinode.spec.drivers) {
    if (d.allocatable && d.allocatable->count) limits[d.name] = *d.allocatable->count;
  }
  std::lock_guard lock(mu_);
  if (limits.empty()) {
    limits_.erase(csinode.metadata.name);
  } else {
    limits_[csinode.metadata.name] = std::move(limits);
  }
}

void Cache::RemoveCSINode(const std::string& name) {
  std::lock_guard lock(mu_);
  limits_.erase(name);
}

void Cache::UpsertPod(const api::Pod& pod) {
  const std::string key = KeyOf(pod);
  const bool counts = !pod.spec.node_name.empty() && !client::PodIsShutDown(pod);
  std::lock_guard lock(mu_);
  auto it = pod_node_.find(key);
  if (it != pod_node_.end()) {
    if (counts && it->second == pod.spec.node_name) return;
    --pods_on_[it->second];
    pod_node_.erase(it);
  }
  if (counts) {
    pod_node_[key] = pod.spec.node_name;
    ++pods_on_[pod.spec.node_name];
    pod_claims_[key] = client::ClaimKeysOfPod(pod);
  } else {
    pod_claims_.erase(key);
  }
}

void Cache::RemovePod(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = pod_node_.find(key);
  if (it == pod_node_.end()) return;
  --pods_on_[it->second];
  pod_node_.erase(it);
  pod_claims_.erase(key);
}

std::vector<NodePtr> Cache::Nodes() const {
  std::lock_guard lock(mu_);
  std::vector<NodePtr> out;
  out.reserve(nodes_.size());
  for (const auto& [name, n] : nodes_) out.push_back(n);
  return out;
}

NodePtr Cache::Node(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : it->second;
}

ClaimPtr Cache::Claim(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = claims_.find(key);
  return it == claims_.end() ? nullptr : it->second;
}

ClassPtr Cache::Class(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = classes_.find(name);
  return it == classes_.end() ? nullptr : it->second;
}

int Cache::PodsOn(const std::string& node) const {
  std::lock_guard lock(mu_);
  auto it = pods_on_.find(node);
  return it == pods_on_.end() ? 0 : it->second;
}

std::vector<std::string> Cache::ClaimsOn(const std::string& node) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [pod, on] : pod_node_) {
    if (on != node) continue;
    auto claims = pod_claims_.find(pod);
    if (claims != pod_claims_.end())
      out.insert(out.end(), claims->second.begin(), claims->second.end());
  }
  return out;
}

std::map<std::string, int> Cache::VolumeLimits(const std::string& node) const {
  std::lock_guard lock(mu_);
  auto it = limits_.find(node);
  return it == limits_.end() ? std::map<std::string, int>{} : it->second;
}

}  // namespace kvol::scheduler
