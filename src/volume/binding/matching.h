// Whether a PersistentVolume can serve a claim: the rules of Kubernetes' PV controller, as pure
// functions the controller and the scheduler share, and VolumeIndex, which finds the volume a
// claim should bind to in O(log N) instead of scanning every volume.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "api/core.h"
#include "api/labels.h"
#include "base/string_map.h"
#include "base/status.h"

namespace kvol::volume::binding {

using VolumePtr = std::shared_ptr<const api::PersistentVolume>;

// The class a claim asks for: the beta annotation when present, else spec.storageClassName
// (even ""), else "" (no class).
std::string ClaimClass(const api::PersistentVolumeClaim& claim);
// The class of a volume: the beta annotation when present, else spec.storageClassName.
std::string VolumeClass(const api::PersistentVolume& volume);

// Both default to Filesystem.
bool VolumeModeMismatch(const api::PersistentVolumeClaimSpec& claim,
                        const api::PersistentVolumeSpec& volume);
// The volume offers every access mode the claim asks for.
bool AccessModesSatisfied(const std::vector<std::string>& claim_modes,
                          const std::vector<std::string>& volume_modes);
// spec.claimRef names the claim (and its uid, when the reference has one).
bool IsVolumeBoundToClaim(const api::PersistentVolume& volume,
                          const api::PersistentVolumeClaim& claim);
// "namespace/name" of the claim a volume's claimRef names; empty without a claimRef.
std::string ClaimRefKey(const api::PersistentVolume& volume);
// The requested storage (zero when the claim asks for none).
api::Quantity RequestedStorage(const api::PersistentVolumeClaim& claim);
api::Quantity VolumeCapacity(const api::PersistentVolume& volume);

// Why `volume` cannot serve `claim` when the claim names it in spec.volumeName, in Kubernetes'
// words ("requested PV is too small", "storageClassName does not match", "incompatible
// volumeMode", "incompatible accessMode"); nullopt when it can.
std::optional<std::string> CheckVolumeSatisfiesClaim(const api::PersistentVolume& volume,
                                                     const api::PersistentVolumeClaim& claim);

struct MatchOptions {
  // The claim's class binds only once a pod is scheduled (WaitForFirstConsumer) and no node
  // is selected yet: only volumes pre-bound to the claim match.
  bool delay_binding = false;
  // The scheduler asks on behalf of this node: a volume's node affinity must allow it.
  const api::Node* node = nullptr;
  // Free volumes reserved by other callers do not match.
  bool skip_reserved = false;
};

// Kubernetes' FindMatchingVolume over a list of candidates: the volume pre-bound to the claim
// if one fits, else the smallest Available volume with the claim's class, access modes,
// volumeMode, enough capacity, labels matching its selector, not bound elsewhere, not being
// deleted, and node affinity allowing options.node. nullptr when none. An invalid selector is
// an error.
StatusOr<VolumePtr> FindMatchingVolume(const api::PersistentVolumeClaim& claim,
                                       const std::vector<VolumePtr>& volumes,
                                       const MatchOptions& options);

// Every known volume, with the ones a claim could bind to ordered by access modes, class and
// capacity, and the pre-bound ones by the claim they name. Thread-safe.
class VolumeIndex {
 public:
  // Adds a volume or replaces the one with its name.
  void Upsert(VolumePtr volume);
  void Remove(const std::string& name);
  VolumePtr Get(const std::string& name) const;
  std::vector<VolumePtr> List() const;
  size_t size() const;
  // How many volumes are new: no claimRef, not being deleted, and not yet made Available by a
  // volume sync (phase Pending or none). Such a volume is no match yet (as in Kubernetes), but
  // it soon will be: a claim that found nothing should wait for it rather than provision.
  size_t NewVolumes() const;

  // FindMatchingVolume over the index: a pre-bound volume first; else, among volumes whose
  // access modes are a superset of the claim's, those with the fewest modes first, the
  // smallest that fits. O(log N) plus the volumes skipped for their selector, volumeMode or
  // node affinity; reserved volumes are out of the free index, and only a caller that does not
  // skip them looks at them, one by one.
  StatusOr<VolumePtr> FindBestMatch(const api::PersistentVolumeClaim& claim,
                                    const MatchOptions& options) const;

  // FindBestMatch, skipping free volumes reserved by other callers and reserving the one it
  // returns (a pre-bound volume needs no reservation): concurrent workers binding different
  // claims then never race for the same volume. Unreserve once the binding is written or
  // abandoned.
  StatusOr<VolumePtr> ReserveBestMatch(const api::PersistentVolumeClaim& claim,
                                       const MatchOptions& options);
  // Reserves a volume by name; false if it is reserved already.
  bool Reserve(const std::string& name);
  void Unreserve(const std::string& name);

 private:
  // A volume is "free" when a claim could pick it: Available, no claimRef, not being deleted.
  // The free index holds the free volumes that are not reserved.
  static bool IsFree(const api::PersistentVolume& v);
  static bool IsNew(const api::PersistentVolume& v);
  // Whether the free index holds `v`: free and not reserved.
  bool InFreeIndex(const api::PersistentVolume& v) const;
  // A place in the free index's order: fewest modes, the modes, capacity, name.
  struct Candidate {
    size_t mode_count = 0;
    std::string modes;  // joined
    api::Quantity capacity;
    std::string_view name;
    VolumePtr volume;
    bool Before(const Candidate& o) const;
  };
  static Candidate CandidateOf(const VolumePtr& v);
  struct Best {
    VolumePtr volume;
    bool prebound = false;  // the claim's pre-bound volume decided (volume may be null)
  };
  static bool Usable(const api::PersistentVolume& v, const api::PersistentVolumeClaim& claim,
                     const MatchOptions& options, const api::labels::Selector& selector);
  Best MatchLocked(const api::PersistentVolumeClaim& claim, const MatchOptions& options,
                   const api::labels::Selector& selector) const;
  bool ReserveLocked(const std::string& name);
  // The same for the volume the index holds under that name (null: none).
  bool ReserveLocked(const std::string& name, const VolumePtr& held);
  void AddFree(const VolumePtr& v);
  void RemoveFree(const VolumePtr& v);
  void Unlink(const VolumePtr& v);
  void Link(const VolumePtr& v);

  using CapacityKey = std::pair<api::Quantity, std::string>;  // capacity, name
  struct Group {
    std::vector<std::string> modes;  // sorted, distinct
    std::map<std::string, std::map<CapacityKey, VolumePtr>> by_class;
  };

  mutable std::mutex mu_;
  FlatStringMap<VolumePtr> by_name_;
  std::map<std::string, Group> groups_;  // by the joined access modes
  FlatStringMap<std::set<std::string>> prebound_;  // claim key -> volumes
  std::unordered_set<std::string> reserved_;
  size_t new_volumes_ = 0;
};

}  // namespace kvol::volume::binding
