#include "volume/binding/matching.h"

#include <algorithm>
#include <tuple>

#include "api/labels.h"
#include "api/node_selector.h"
#include "api/well_known.h"

namespace kvol::volume::binding {
namespace {

const std::string kStorage = "storage";

std::vector<std::string> SortedModes(std::vector<std::string> modes) {
  std::sort(modes.begin(), modes.end());
  modes.erase(std::unique(modes.begin(), modes.end()), modes.end());
  return modes;
}

std::string JoinModes(const std::vector<std::string>& sorted) {
  std::string out;
  for (const auto& m : sorted) {
    if (!out.empty()) out += ',';
    out += m;
  }
  return out;
}

StatusOr<api::labels::Selector> ClaimSelector(const api::PersistentVolumeClaim& claim) {
  if (!claim.spec.selector) return api::labels::Selector::Everything();
  auto s = api::labels::FromLabelSelector(&*claim.spec.selector);
  if (!s.ok()) {
    return InvalidArgumentError("error creating internal label selector for claim: " +
                                claim.metadata.namespace_ + "/" + claim.metadata.name + ": " +
                                s.status().message());
  }
  return s;
}

// The checks FindMatchingVolume makes before anything else, pre-bound or not.
bool Fits(const api::PersistentVolume& v, const api::PersistentVolumeClaim& claim,
          const api::Quantity& requested) {
  return !(VolumeCapacity(v) < requested) && !VolumeModeMismatch(claim.spec, v.spec) &&
         !v.metadata.deletion_timestamp;
}

bool NodeAllows(const api::PersistentVolume& v, const MatchOptions& o) {
  return o.node == nullptr || api::PersistentVolumeFitsNode(v.spec, *o.node);
}

}  // namespace

std::string ClaimClass(const api::PersistentVolumeClaim& claim) {
  // The beta annotation first, as for volumes (and as Kubernetes reads both).
  auto it = claim.metadata.annotations.find(std::string(api::kAnnBetaStorageClass));
  if (it != claim.metadata.annotations.end()) return it->second;
  return claim.spec.storage_class_name.value_or("");
}

std::string VolumeClass(const api::PersistentVolume& volume) {
  auto it = volume.metadata.annotations.find(std::string(api::kAnnBetaStorageClass));
  if (it != volume.metadata.annotations.end()) return it->second;
  return volume.spec.storage_class_name;
}

bool VolumeModeMismatch(const api::PersistentVolumeClaimSpec& claim,
                        const api::PersistentVolumeSpec& volume) {
  return claim.volume_mode.value_or("Filesystem") != volume.volume_mode.value_or("Filesystem");
}

bool AccessModesSatisfied(const std::vector<std::string>& claim_modes,
                          const std::vector<std::string>& volume_modes) {
  for (const auto& m : claim_modes) {
    if (std::find(volume_modes.begin(), volume_modes.end(), m) == volume_modes.end()) return false;
  }
  return true;
}

bool IsVolumeBoundToClaim(const api::PersistentVolume& volume,
                          const api::PersistentVolumeClaim& claim) {
  const auto& ref = volume.spec.claim_ref;
  if (!ref) return false;
  if (ref->name != claim.metadata.name || ref->namespace_ != claim.metadata.namespace_) return false;
  return ref->uid.empty() || ref->uid == claim.metadata.uid;
}

std::string ClaimRefKey(const api::PersistentVolume& volume) {
  const auto& ref = volume.spec.claim_ref;
  if (!ref) return {};
  return ref->namespace_ + "/" + ref->name;
}

api::Quantity RequestedStorage(const api::PersistentVolumeClaim& claim) {
  auto it = claim.spec.resources.requests.find(kStorage);
  return it == claim.spec.resources.requests.end() ? api::Quantity() : it->second;
}

api::Quantity VolumeCapacity(const api::PersistentVolume& volume) {
  auto it = volume.spec.capacity.find(kStorage);
  return it == volume.spec.capacity.end() ? api::Quantity() : it->second;
}

std::optional<std::string> CheckVolumeSatisfiesClaim(const api::PersistentVolume& volume,
                                                     const api::PersistentVolumeClaim& claim) {
  if (volume.metadata.deletion_timestamp) {
    return "the volume is marked for deletion \"" + volume.metadata.name + "\"";
  }
  if (VolumeCapacity(volume).Value() < RequestedStorage(claim).Value()) {
    return "requested PV is too small";
  }
  if (VolumeClass(volume) != ClaimClass(claim)) return "storageClassName does not match";
  if (VolumeModeMismatch(claim.spec, volume.spec)) return "incompatible volumeMode";
  if (!AccessModesSatisfied(claim.spec.access_modes, volume.spec.access_modes)) {
    return "incompatible accessMode";
  }
  return std::nullopt;
}

StatusOr<VolumePtr> FindMatchingVolume(const api::PersistentVolumeClaim& claim,
                                       const std::vector<VolumePtr>& volumes,
                                       const MatchOptions& options) {
  auto selector = ClaimSelector(claim);
  if (!selector.ok()) return selector.status();
  const api::Quantity requested = RequestedStorage(claim);
  const std::string cls = ClaimClass(claim);
  VolumePtr smallest;
  for (const auto& v : volumes) {
    if (v->spec.claim_ref && !IsVolumeBoundToClaim(*v, claim)) continue;
    if (!Fits(*v, claim, requested)) continue;
    const bool node_ok = NodeAllows(*v, options);
    if (IsVolumeBoundToClaim(*v, claim)) return node_ok ? v : VolumePtr();
    if (options.node == nullptr && options.delay_binding) continue;
    if (v->status.phase != "Available") continue;
    if (!selector->Matches(v->metadata.labels)) continue;
    if (VolumeClass(*v) != cls) continue;
    if (!node_ok) continue;
    if (!AccessModesSatisfied(claim.spec.access_modes, v->spec.access_modes)) continue;
    if (!smallest || VolumeCapacity(*v) < VolumeCapacity(*smallest) ||
        (VolumeCapacity(*v) == VolumeCapacity(*smallest) &&
         v->metadata.name < smallest->metadata.name)) {
      smallest = v;
    }
  }
  return smallest;
}

bool VolumeIndex::IsFree(const api::PersistentVolume& v) {
  return !v.spec.claim_ref && v.status.phase == "Available" && !v.metadata.deletion_timestamp;
}

bool VolumeIndex::IsNew(const api::PersistentVolume& v) {
  return !v.spec.claim_ref && (v.status.phase.empty() || v.status.phase == "Pending") &&
         !v.metadata.deletion_timestamp;
}

bool VolumeIndex::InFreeIndex(const api::PersistentVolume& v) const {
  return IsFree(v) && !reserved_.contains(v.metadata.name);
}

void VolumeIndex::AddFree(const VolumePtr& v) {
  auto modes = SortedModes(v->spec.access_modes);
  Group& g = groups_[JoinModes(modes)];
  g.modes = std::move(modes);
  g.by_class[VolumeClass(*v)][{VolumeCapacity(*v), v->metadata.name}] = v;
}

void VolumeIndex::RemoveFree(const VolumePtr& v) {
  auto g = groups_.find(JoinModes(SortedModes(v->spec.access_modes)));
  if (g == groups_.end()) return;
  auto c = g->second.by_class.find(VolumeClass(*v));
  if (c == g->second.by_class.end()) return;
  c->second.erase({VolumeCapacity(*v), v->metadata.name});
  if (c->second.empty()) g->second.by_class.erase(c);
  if (g->second.by_class.empty()) groups_.erase(g);
}

void VolumeIndex::Unlink(const VolumePtr& v) {
  if (v->spec.claim_ref) {
    auto it = prebound_.find(ClaimRefKey(*v));
    if (it != prebound_.end()) {
      it->second.erase(v->metadata.name);
      if (it->second.empty()) prebound_.erase(it);
    }
  }
  if (InFreeIndex(*v)) RemoveFree(v);
  if (IsNew(*v)) --new_volumes_;
}

void VolumeIndex::Link(const VolumePtr& v) {
  if (v->spec.claim_ref) prebound_[ClaimRefKey(*v)].insert(v->metadata.name);
  if (InFreeIndex(*v)) AddFree(v);
  if (IsNew(*v)) ++new_volumes_;
}

void VolumeIndex::Upsert(VolumePtr volume) {
  std::lock_guard lock(mu_);
  auto& slot = by_name_[volume->metadata.name];
  if (slot) Unlink(slot);
  slot = std::move(volume);
  Link(slot);
}

void VolumeIndex::Remove(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return;
  Unlink(it->second);
  by_name_.erase(it);
}

VolumePtr VolumeIndex::Get(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<VolumePtr> VolumeIndex::List() const {
  std::lock_guard lock(mu_);
  std::vector<VolumePtr> out;
  out.reserve(by_name_.size());
  for (const auto& [name, v] : by_name_) out.push_back(v);
  return out;
}

size_t VolumeIndex::size() const {
  std::lock_guard lock(mu_);
  return by_name_.size();
}

size_t VolumeIndex::NewVolumes() const {
  std::lock_guard lock(mu_);
  return new_volumes_;
}

StatusOr<VolumePtr> VolumeIndex::FindBestMatch(const api::PersistentVolumeClaim& claim,
                                               const MatchOptions& options) const {
  auto selector = ClaimSelector(claim);
  if (!selector.ok()) return selector.status();
  std::lock_guard lock(mu_);
  auto best = MatchLocked(claim, options, *selector);
  if (options.skip_reserved || best.prebound || (options.delay_binding && !options.node)) {
    return best.volume;
  }
  // Reserved volumes are out of the free index but still candidates for a caller that does
  // not skip them: the first of them in the index's order, if it comes before the best free.
  std::optional<Candidate> first;
  const api::Quantity requested = RequestedStorage(claim);
  const auto claim_modes = SortedModes(claim.spec.access_modes);
  const std::string cls = ClaimClass(claim);
  for (const auto& name : reserved_) {
    auto it = by_name_.find(name);
    if (it == by_name_.end() || !IsFree(*it->second)) continue;
    const api::PersistentVolume& v = *it->second;
    if (!AccessModesSatisfied(claim_modes, v.spec.access_modes) || VolumeClass(v) != cls) continue;
    if (VolumeCapacity(v) < requested || !Usable(v, claim, options, *selector)) continue;
    Candidate c = CandidateOf(it->second);
    if (!first || c.Before(*first)) first = std::move(c);
  }
  if (!first || (best.volume && !first->Before(CandidateOf(best.volume)))) return best.volume;
  return first->volume;
}

StatusOr<VolumePtr> VolumeIndex::ReserveBestMatch(const api::PersistentVolumeClaim& claim,
                                                  const MatchOptions& options) {
  auto selector = ClaimSelector(claim);
  if (!selector.ok()) return selector.status();
  std::lock_guard lock(mu_);
  auto best = MatchLocked(claim, options, *selector);
  // A match that is not pre-bound comes from the free index: the volume the index holds.
  if (best.volume && !best.prebound) ReserveLocked(best.volume->metadata.name, best.volume);
  return best.volume;
}

bool VolumeIndex::Reserve(const std::string& name) {
  std::lock_guard lock(mu_);
  return ReserveLocked(name);
}

bool VolumeIndex::ReserveLocked(const std::string& name) {
  auto it = by_name_.find(name);
  return ReserveLocked(name, it == by_name_.end() ? nullptr : it->second);
}

bool VolumeIndex::ReserveLocked(const std::string& name, const VolumePtr& held) {
  if (!reserved_.insert(name).second) return false;
  // Out of the free index while reserved: later matches do not walk past it.
  if (held && IsFree(*held)) RemoveFree(held);
  return true;
}

void VolumeIndex::Unreserve(const std::string& name) {
  std::lock_guard lock(mu_);
  if (reserved_.erase(name) == 0) return;
  auto it = by_name_.find(name);
  if (it != by_name_.end() && IsFree(*it->second)) AddFree(it->second);
}

VolumeIndex::Candidate VolumeIndex::CandidateOf(const VolumePtr& v) {
  auto modes = SortedModes(v->spec.access_modes);
  return {modes.size(), JoinModes(modes), VolumeCapacity(*v), v->metadata.name, v};
}

bool VolumeIndex::Candidate::Before(const Candidate& o) const {
  return std::tie(mode_count, modes, capacity, name) <
         std::tie(o.mode_count, o.modes, o.capacity, o.name);
}

bool VolumeIndex::Usable(const api::PersistentVolume& v, const api::PersistentVolumeClaim& claim,
                         const MatchOptions& options, const api::labels::Selector& selector) {
  return !VolumeModeMismatch(claim.spec, v.spec) && selector.Matches(v.metadata.labels) &&
         NodeAllows(v, options);
}

VolumeIndex::Best VolumeIndex::MatchLocked(const api::PersistentVolumeClaim& claim,
                                           const MatchOptions& options,
                                           const api::labels::Selector& selector) const {
  const api::Quantity requested = RequestedStorage(claim);
  const auto claim_modes = SortedModes(claim.spec.access_modes);

  // A volume pre-bound to the claim wins, if it fits at all.
  thread_local std::string key;
  key.assign(claim.metadata.namespace_).append("/").append(claim.metadata.name);
  auto pre = prebound_.find(key);
  if (pre != prebound_.end()) {
    for (const auto& name : pre->second) {
      const VolumePtr& v = by_name_.at(name);
      if (!IsVolumeBoundToClaim(*v, claim) || !Fits(*v, claim, requested)) continue;
      if (!AccessModesSatisfied(claim_modes, v->spec.access_modes)) continue;
      return {NodeAllows(*v, options) ? v : VolumePtr(), true};
    }
  }
  if (options.delay_binding && options.node == nullptr) return {};

  // The groups with a superset of the claim's modes, fewest modes first; the free index holds
  // no reserved volume.
  std::vector<const Group*> groups;
  for (const auto& [key, g] : groups_) {
    if (AccessModesSatisfied(claim_modes, g.modes)) groups.push_back(&g);
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const Group* a, const Group* b) { return a->modes.size() < b->modes.size(); });
  const std::string cls = ClaimClass(claim);
  for (const Group* g : groups) {
    auto c = g->by_class.find(cls);
    if (c == g->by_class.end()) continue;
    for (auto it = c->second.lower_bound({requested, std::string()}); it != c->second.end(); ++it) {
      if (!Usable(*it->second, claim, options, selector)) continue;
      return {it->second, false};
    }
  }
  return {};
}

}  // namespace kvol::volume::binding
