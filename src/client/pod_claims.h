// Which pods use which claims, kept from a pod informer's events: what the PV controller (pods
// waiting to be scheduled) and the protection controller (claims still in use) ask.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/core.h"
#include "client/informer.h"

namespace kvol::client {

using PodPtr = std::shared_ptr<const api::Pod>;

// "namespace/claim" for every claim a pod uses: its persistentVolumeClaim volumes, and the
// claims made for its generic ephemeral volumes.
std::vector<std::string> ClaimKeysOfPod(const api::Pod& pod);

// "namespace/name" of the claim a volume is bound to or reserved for; empty when none.
std::string ClaimKeyOfVolume(const api::PersistentVolume& pv);

// Succeeded or Failed: its containers are gone for good, so its volumes are not in use.
bool PodIsShutDown(const api::Pod& pod);

class PodClaimIndex {
 public:
  // Adds or replaces a pod; returns the claims it used before and uses now. The pointer form
  // keeps the informer's object rather than a copy.
  std::vector<std::string> Upsert(PodPtr pod);
  std::vector<std::string> Upsert(const api::Pod& pod);
  // Removes a pod; returns the claims it used.
  std::vector<std::string> Remove(const std::string& ns, const std::string& name);
  // The pods using a claim.
  std::vector<PodPtr> PodsUsing(const std::string& claim_key) const;
  // Whether any pod uses the claim (false for an empty key).
  bool InUse(const std::string& claim_key) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::unordered_map<std::string, PodPtr>> by_claim_;
  std::unordered_map<std::string, std::vector<std::string>> claims_of_pod_;
};

// Handlers that call `changed` on a change to a claim some pod in `index` uses, or to a volume
// bound to such a claim (before or after the change): what a part acting for pods' volumes
// needs to hear of, and no more. The pods' own handlers keep `index`, which must outlive them.
Informer<api::PersistentVolumeClaim>::Handlers WhenClaimUsed(const PodClaimIndex& index,
                                                             std::function<void()> changed);
Informer<api::PersistentVolume>::Handlers WhenVolumeUsed(const PodClaimIndex& index,
                                                         std::function<void()> changed);

}  // namespace kvol::client
