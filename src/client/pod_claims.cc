#include "client/pod_claims.h"

#include <algorithm>

#include "api/volume_sources.h"

namespace kvol::client {

std::vector<std::string> ClaimKeysOfPod(const api::Pod& pod) {
  std::vector<std::string> out;
  for (const auto& v : pod.spec.volumes) {
    if (auto claim = api::ClaimNameOf(pod, v)) out.push_back(pod.metadata.namespace_ + "/" + *claim);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string ClaimKeyOfVolume(const api::PersistentVolume& pv) {
  if (!pv.spec.claim_ref || pv.spec.claim_ref->name.empty()) return "";
  return pv.spec.claim_ref->namespace_ + "/" + pv.spec.claim_ref->name;
}

bool PodIsShutDown(const api::Pod& pod) {
  return pod.status.phase == "Succeeded" || pod.status.phase == "Failed";
}

std::vector<std::string> PodClaimIndex::Upsert(const api::Pod& pod) {
  return Upsert(std::make_shared<const api::Pod>(pod));
}

std::vector<std::string> PodClaimIndex::Upsert(PodPtr ptr) {
  const api::Pod& pod = *ptr;
  std::vector<std::string> touched = Remove(pod.metadata.namespace_, pod.metadata.name);
  auto claims = ClaimKeysOfPod(pod);
  if (claims.empty()) return touched;
  const std::string key = pod.metadata.namespace_ + "/" + pod.metadata.name;
  std::lock_guard lock(mu_);
  for (const auto& c : claims) {
    by_claim_[c][key] = ptr;
    touched.push_back(c);
  }
  claims_of_pod_[key] = std::move(claims);
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  return touched;
}

std::vector<std::string> PodClaimIndex::Remove(const std::string& ns, const std::string& name) {
  const std::string key = ns + "/" + name;
  std::lock_guard lock(mu_);
  auto it = claims_of_pod_.find(key);
  if (it == claims_of_pod_.end()) return {};
  std::vector<std::string> claims = std::move(it->second);
  claims_of_pod_.erase(it);
  for (const auto& c : claims) {
    auto b = by_claim_.find(c);
    if (b == by_claim_.end()) continue;
    b->second.erase(key);
    if (b->second.empty()) by_claim_.erase(b);
  }
  return claims;
}

bool PodClaimIndex::InUse(const std::string& claim_key) const {
  if (claim_key.empty()) return false;
  std::lock_guard lock(mu_);
  auto it = by_claim_.find(claim_key);
  return it != by_claim_.end() && !it->second.empty();
}

std::vector<PodPtr> PodClaimIndex::PodsUsing(const std::string& claim_key) const {
  std::vector<PodPtr> out;
  std::lock_guard lock(mu_);
  auto it = by_claim_.find(claim_key);
  if (it == by_claim_.end()) return out;
  for (const auto& [key, pod] : it->second) out.push_back(pod);
  std::sort(out.begin(), out.end(),
            [](const PodPtr& a, const PodPtr& b) { return a->metadata.name < b->metadata.name; });
  return out;
}

Informer<api::PersistentVolumeClaim>::Handlers WhenClaimUsed(const PodClaimIndex& index,
                                                             std::function<void()> changed) {
  auto used = [&index, changed](const auto& claim) {
    if (index.InUse(KeyOf(*claim))) changed();
  };
  return {.on_add = used,
          .on_update = [used](const auto&, const auto& now) { used(now); },
          .on_delete = used};
}

Informer<api::PersistentVolume>::Handlers WhenVolumeUsed(const PodClaimIndex& index,
                                                         std::function<void()> changed) {
  auto used = [&index](const auto& pv) { return index.InUse(ClaimKeyOfVolume(*pv)); };
  auto one = [used, changed](const auto& pv) {
    if (used(pv)) changed();
  };
  return {.on_add = one,
          .on_update =
              [used, changed](const auto& old, const auto& now) {
                if (used(now) || used(old)) changed();
              },
          .on_delete = one};
}

}  // namespace kvol::client
