// The PersistentVolume controller's decisions, as Kubernetes' pv_controller.go: the claim sync
// and the volume sync, and the steps they take (bind, provision, release, reclaim). The
// wiring they run on is in controller_base.cc.
#include "controller/pv/controller.h"

#include <algorithm>
#include <charconv>

#include "api/well_known.h"
#include "base/thread.h"
#include "client/worker.h"
#include "controller/util/meta.h"
#include "metrics/storage_operations.h"

namespace kvol::controller::pv {

// The binding rules this controller applies, shared with the scheduler.
using namespace volume::binding;
using client::ApiStatus;
using client::ClaimKeysOfPod;
using client::PodIsShutDown;
using client::RunBatchWorker;
using client::RunWorker;

namespace {

using api::PersistentVolume;
using api::PersistentVolumeClaim;

// "a,b,c", as Kubernetes lists pods in its events.
std::string CommaJoined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

}  // namespace

// ---- claim sync ----------------------------------------------------------------------------

Status Controller::SyncClaim(const PersistentVolumeClaim& claim) {
  return SyncClaimWith(claim, nullptr);
}

Status Controller::SyncClaimWith(const PersistentVolumeClaim& claim, Deferral* defer) {
  if (!HasAnnotation(claim.metadata, api::kAnnBindCompleted)) {
    return SyncUnboundClaim(claim, defer);
  }
  return SyncBoundClaim(claim, defer);
}

std::vector<Status> Controller::SyncClaims(const std::vector<ClaimPtr>& claims) {
  std::vector<Status> results(claims.size());
  std::vector<PendingBind> binds;
  for (size_t i = 0; i < claims.size(); ++i) {
    if (!claims[i]) continue;
    Deferral defer{&binds, claims[i], i};
    results[i] = SyncClaimWith(*claims[i], &defer);
  }
  if (!binds.empty()) WriteBindings(binds, results);
  return results;
}

Status Controller::BindOrDefer(const VolumePtr& volume, const PersistentVolumeClaim& claim,
                               bool reserved, Deferral* defer) {
  if (defer) {
    defer->binds->push_back({volume, defer->claim, reserved, defer->slot});
    return OkStatus();
  }
  Status s = Bind(volume, claim);
  if (reserved) volumes_.Unreserve(volume->metadata.name);
  return s;
}

bool Controller::ShouldDelayBinding(const PersistentVolumeClaim& claim) const {
  const std::string name = ClaimClass(claim);
  if (name.empty()) return false;
  auto cls = GetClass(name);
  return cls && cls->volume_binding_mode.value_or("Immediate") == "WaitForFirstConsumer";
}

StatusOr<bool> Controller::AssignDefaultClass(const PersistentVolumeClaim& claim) {
  if (claim.spec.storage_class_name || HasAnnotation(claim.metadata, api::kAnnBetaStorageClass)) {
    return false;
  }
  // The newest class marked default, as the API server's admission picks it.
  std::shared_ptr<const api::StorageClass> best;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, cls] : classes_) {
      const auto& a = cls->metadata.annotations;
      auto it = a.find(std::string(api::kDefaultClassAnnotation));
      auto beta = a.find(std::string(api::kBetaDefaultClassAnnotation));
      const bool is_default =
          (it != a.end() && it->second == "true") || (beta != a.end() && beta->second == "true");
      if (!is_default) continue;
      if (!best || best->metadata.creation_timestamp < cls->metadata.creation_timestamp ||
          (best->metadata.creation_timestamp == cls->metadata.creation_timestamp &&
           cls->metadata.name < best->metadata.name)) {
        best = cls;
      }
    }
  }
  if (!best) return false;
  PersistentVolumeClaim next = claim;
  next.spec.storage_class_name = best->metadata.name;
  KVOL_RETURN_IF_ERROR(Write(std::move(next), false).status());
  return true;
}

Status Controller::WaitForFirstConsumerEvent(const PersistentVolumeClaim& claim) {
  auto pods = UnscheduledPodsUsing(claim);
  if (pods.empty()) {
    Event(claim, "Normal", "WaitForFirstConsumer",
          "waiting for first consumer to be created before binding");
  } else if (pods.size() == 1) {
    Event(claim, "Normal", "WaitForPodScheduled",
          "waiting for pod " + pods[0] + " to be scheduled");
  } else {
    Event(claim, "Normal", "WaitForPodScheduled",
          "waiting for pods " + CommaJoined(pods) + " to be scheduled");
  }
  return OkStatus();
}

volume::Provisioner* Controller::FindProvisioner(std::string_view name) const {
  return options_.plugins ? options_.plugins->FindProvisioner(name) : nullptr;
}

Status Controller::ProvisionClaim(const PersistentVolumeClaim& claim) {
  const std::string name = ClaimClass(claim);
  auto cls = GetClass(name);
  if (!cls) {
    Event(claim, "Warning", "ProvisioningFailed",
          "storageclass.storage.k8s.io \"" + name + "\" not found");
    return OkStatus();
  }
  const std::string& provisioner = cls->provisioner;
  volume::Provisioner* in_process = FindProvisioner(provisioner);
  if (!in_process && provisioner.rfind("kubernetes.io/", 0) == 0) {
    // Kubernetes' own plugin names, none of which kvol runs.
    Event(claim, "Warning", "ProvisioningFailed", "no volume plugin matched name: " + provisioner);
    return OkStatus();
  }
  // Name the provisioner on the claim, as Kubernetes does for every provisioner.
  auto it = claim.metadata.annotations.find(std::string(api::kAnnStorageProvisioner));
  PersistentVolumeClaim current = claim;
  if (it == claim.metadata.annotations.end() || it->second != provisioner) {
    PersistentVolumeClaim next = claim;
    next.metadata.annotations[std::string(api::kAnnStorageProvisioner)] = provisioner;
    next.metadata.annotations[std::string(api::kAnnBetaStorageProvisioner)] = provisioner;
    KVOL_ASSIGN_OR_RETURN(current, Write(std::move(next), false));
  }
  if (in_process) return ProvisionInProcess(current, *cls, *in_process);
  WaitingForExternalProvisioner(current, provisioner);
  return OkStatus();
}

void Controller::WaitingForExternalProvisioner(const PersistentVolumeClaim& claim,
                                               std::string_view provisioner) {
  Event(claim, "Normal", "ExternalProvisioning",
        "Waiting for a volume to be created either by the external provisioner '" +
            std::string(provisioner) +
            "' or manually by the system administrator. If volume creation is delayed, please "
            "verify that the provisioner is running and correctly registered.");
}

Status Controller::ProvisionInProcess(const PersistentVolumeClaim& claim,
                                      const api::StorageClass& cls,
                                      volume::Provisioner& provisioner) {
  // One name per claim: a retry after a crash finds the volume it made instead of a second one.
  const std::string pv_name = "pvc-" + claim.metadata.uid;
  if (volumes_.Get(pv_name)) return OkStatus();  // made; the volume's sync brings the claim back
  auto existing = client_.resource<PersistentVolume>().Get("", pv_name);
  if (existing.ok()) {
    StoreVolume(*existing);
    return OkStatus();
  }
  if (!api::IsNotFound(existing.error())) return ApiStatus(existing.error());

  std::optional<api::Node> node;
  auto selected = claim.metadata.annotations.find(std::string(api::kAnnSelectedNode));
  if (selected != claim.metadata.annotations.end()) {
    auto n = client_.resource<api::Node>().Get("", selected->second);
    if (!n.ok()) {
      Event(claim, "Warning", "ProvisioningFailed",
            "Failed to get target node: " + n.error().message);
      return api::IsNotFound(n.error()) ? OkStatus() : ApiStatus(n.error());
    }
    node = *n;
  }
  // A node-local provisioner whose node's own agent runs it leaves the claim to that agent,
  // as to an external provisioner.
  if (!provisioner.ServesNode(node ? &*node : nullptr)) {
    WaitingForExternalProvisioner(claim, provisioner.name());
    return OkStatus();
  }
  volume::ProvisionRequest req{pv_name, &claim, &cls, node ? &*node : nullptr};
  metrics::OperationTimer timer(std::string(provisioner.name()), "volume_provision");
  auto spec = provisioner.Provision(req);
  timer.Done(spec.ok());
  if (!spec.ok()) {
    // Give the claim back to the scheduler, which may pick another node.
    if (node) {
      PersistentVolumeClaim next = claim;
      next.metadata.annotations.erase(std::string(api::kAnnSelectedNode));
      if (auto w = Write(std::move(next), false); !w.ok()) return w.status();
    }
    Event(claim, "Warning", "ProvisioningFailed",
          "Failed to provision volume with StorageClass \"" + cls.metadata.name +
              "\": " + spec.status().message());
    // A claim asking for what the provisioner cannot make waits for the periodic resync.
    return spec.status().code() == StatusCode::kInvalidArgument ? OkStatus() : spec.status();
  }
  PersistentVolume pv =
      volume::ProvisionedVolume(pv_name, *std::move(spec), claim, cls, provisioner.name());
  auto created = client_.resource<PersistentVolume>().CreateShared(pv);
  if (!created.ok() && !api::IsAlreadyExists(created.error())) {
    Event(claim, "Warning", "ProvisioningFailed",
          "Error creating provisioned PV object for claim " + client::KeyOf(claim) + ": " +
              created.error().message + ". Deleting the volume.");
    if (Status s = provisioner.Delete(pv, &cls); !s.ok()) {
      Event(claim, "Warning", "ProvisioningCleanupFailed",
            "Error cleaning provisioned volume for claim " + client::KeyOf(claim) + ": " +
                s.message() + ". Please delete manually.");
    }
    return ApiStatus(created.error());
  }
  if (!created.ok()) return OkStatus();  // made by an earlier attempt
  VolumePtr volume = *std::move(created);
  StoreVolume(volume);
  Event(claim, "Normal", "ProvisioningSucceeded",
        "Successfully provisioned volume " + pv_name + " using " + std::string(provisioner.name()));
  return Bind(std::move(volume), claim);
}

Status Controller::SyncUnboundClaim(const PersistentVolumeClaim& claim, Deferral* defer) {
  if (claim.spec.volume_name.empty()) {
    // Any volume will do.
    const bool delay = ShouldDelayBinding(claim);
    auto volume = volumes_.ReserveBestMatch(claim, MatchOptions{delay, nullptr});
    if (!volume.ok()) return volume.status();
    if (*volume) {
      // Reserved against other workers until the binding is written (or fails).
      return BindOrDefer(*volume, claim, true, defer);
    }

    // OBSERVATION: no Available volume fits. Volumes stored while no controller ran are not
    // Available until their own sync; one of them may fit, so rather than provisioning or
    // reporting that none is there, the claim waits for them (retried after its back-off).
    const Status wait_for_new =
        volumes_.NewVolumes() > 0
            ? AbortedError("volumes not yet Available may match; trying again once they are")
            : OkStatus();
    auto assigned = AssignDefaultClass(claim);
    if (!assigned.ok()) return assigned.status();
    if (*assigned) return OkStatus();  // the update brings the claim back with its class
    // A delayed claim with a selected node is to be provisioned for that node: the scheduler
    // found no volume there for it (one it found there, it has pre-bound to the claim, and
    // the match above took). A free volume elsewhere is not for it.
    if (delay && !HasAnnotation(claim.metadata, api::kAnnSelectedNode)) {
      if (!claim.metadata.deletion_timestamp) {
        if (Status s = WaitForFirstConsumerEvent(claim); !s.ok()) return s;
      }
    } else if (!wait_for_new.ok()) {
      return wait_for_new;
    } else if (!ClaimClass(claim).empty()) {
      return ProvisionClaim(claim);
    } else {
      Event(claim, "Normal", "FailedBinding",
            "no persistent volumes available for this claim and no storage class is set");
    }
    return UpdateClaimStatus(claim, api::kClaimPending, nullptr).status();
  }

  // The claim asks for one volume by name.
  VolumePtr volume = volumes_.Get(claim.spec.volume_name);
  if (!volume) {
    // Not there (yet): stay Pending and look again at the next sync.
    return UpdateClaimStatus(claim, api::kClaimPending, nullptr).status();
  }
  if (!volume->spec.claim_ref) {
    if (auto why = CheckVolumeSatisfiesClaim(*volume, claim)) {
      Event(claim, "Warning", "VolumeMismatch",
            "Cannot bind to requested volume \"" + volume->metadata.name + "\": " + *why);
      return UpdateClaimStatus(claim, api::kClaimPending, nullptr).status();
    }
    return BindOrDefer(volume, claim, false, defer);
  }
  if (IsVolumeBoundToClaim(*volume, claim)) {
    return BindOrDefer(volume, claim, false, defer);  // finish it
  }
  Event(claim, "Warning", "FailedBinding",
        "volume \"" + volume->metadata.name + "\" already bound to a different claim.");
  if (HasAnnotation(claim.metadata, api::kAnnBoundByController)) {
    // Only a user removing bind-completed gets here.
    return FailedPreconditionError(
        "invalid binding of claim \"" + client::KeyOf(claim) + "\" to volume \"" +
        claim.spec.volume_name + "\": volume already claimed by \"" + ClaimRefKey(*volume) + "\"");
  }
  return UpdateClaimStatus(claim, api::kClaimPending, nullptr).status();
}

Status Controller::SyncBoundClaim(const PersistentVolumeClaim& claim, Deferral* defer) {
  if (claim.spec.volume_name.empty()) {
    return UpdateClaimStatusWithEvent(
               claim, api::kClaimLost, "Warning", "ClaimLost",
               "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!")
        .status();
  }
  VolumePtr volume = volumes_.Get(claim.spec.volume_name);
  if (!volume) {
    return UpdateClaimStatusWithEvent(
               claim, api::kClaimLost, "Warning", "ClaimLost",
               "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
        .status();
  }
  if (!volume->spec.claim_ref || volume->spec.claim_ref->uid == claim.metadata.uid) {
    // Unbound volume (or our own write not seen yet), or all is well: Bind sets what is
    // missing and writes nothing when everything is in place.
    return BindOrDefer(volume, claim, false, defer);
  }
  return UpdateClaimStatusWithEvent(
             claim, api::kClaimLost, "Warning", "ClaimMisbound",
             "Two claims are bound to the same volume, this one is bound incorrectly")
      .status();
}

Status Controller::Bind(VolumePtr volume, const PersistentVolumeClaim& claim) {
  // A batch of one: the claim's binding written now.
  std::vector<PendingBind> one{
      {std::move(volume), std::make_shared<const PersistentVolumeClaim>(claim), false, 0}};
  std::vector<Status> result(1);
  WriteBindings(one, result);
  return result[0];
}

bool Controller::VolumeBindingDone(const PersistentVolume& volume,
                                   const PersistentVolumeClaim& claim) {
  // What SetClaimRef and SetVolumePhase would leave unchanged.
  const auto& ref = volume.spec.claim_ref;
  return ref && ref->name == claim.metadata.name && ref->namespace_ == claim.metadata.namespace_ &&
         ref->uid == claim.metadata.uid && volume.status.phase == api::kVolumeBound;
}

bool Controller::ClaimBindingDone(const PersistentVolumeClaim& claim,
                                  const PersistentVolume& volume) {
  // What SetVolumeName and SetClaimStatus(Bound) would leave unchanged.
  return claim.spec.volume_name == volume.metadata.name &&
         HasAnnotation(claim.metadata, api::kAnnBindCompleted) &&
         claim.status.phase == api::kClaimBound &&
         claim.status.access_modes == volume.spec.access_modes;
}

bool Controller::SetClaimRef(PersistentVolume& next, const PersistentVolumeClaim& claim) {
  bool dirty = false;
  const bool by_controller = !IsVolumeBoundToClaim(next, claim);
  const auto& ref = next.spec.claim_ref;
  if (!ref || ref->name != claim.metadata.name || ref->namespace_ != claim.metadata.namespace_ ||
      ref->uid != claim.metadata.uid) {
    next.spec.claim_ref = client::ReferenceTo(claim);
    dirty = true;
  }
  if (by_controller && !HasAnnotation(next.metadata, api::kAnnBoundByController)) {
    next.metadata.annotations[std::string(api::kAnnBoundByController)] = "yes";
    dirty = true;
  }
  return dirty;
}

bool Controller::SetVolumeName(PersistentVolumeClaim& next, const PersistentVolume& volume) {
  bool dirty = false;
  if (next.spec.volume_name != volume.metadata.name) {
    next.spec.volume_name = volume.metadata.name;
    next.metadata.annotations.emplace(std::string(api::kAnnBoundByController), "yes");
    dirty = true;
  }
  if (!HasAnnotation(next.metadata, api::kAnnBindCompleted)) {
    next.metadata.annotations[std::string(api::kAnnBindCompleted)] = "yes";
    dirty = true;
  }
  return dirty;
}

StatusOr<bool> Controller::SetClaimStatus(PersistentVolumeClaim& next, std::string_view phase,
                                          const PersistentVolume* volume) {
  bool dirty = false;
  const bool phase_changes = next.status.phase != phase;
  if (volume == nullptr) {
    if (!next.status.access_modes.empty() || !next.status.capacity.empty()) {
      next.status.access_modes.clear();
      next.status.capacity.clear();
      dirty = true;
    }
  } else {
    if (next.status.access_modes != volume->spec.access_modes) {
      next.status.access_modes = volume->spec.access_modes;
      dirty = true;
    }
    // Capacity is set as the claim becomes Bound, not after: a difference may be meant (a
    // filesystem smaller than its device).
    if (phase_changes) {
      auto cap = volume->spec.capacity.find("storage");
      if (cap == volume->spec.capacity.end()) {
        return FailedPreconditionError("PersistentVolume \"" + volume->metadata.name +
                                       "\" is without a storage capacity");
      }
      auto have = next.status.capacity.find("storage");
      if (have == next.status.capacity.end() || !(have->second == cap->second)) {
        next.status.capacity = volume->spec.capacity;
        dirty = true;
      }
    }
  }
  if (phase_changes) {
    next.status.phase = std::string(phase);
    dirty = true;
  }
  return dirty;
}

bool Controller::SetVolumePhase(PersistentVolume& next, std::string_view phase,
                                std::string message) {
  if (next.status.phase == phase) return false;
  next.status.phase = std::string(phase);
  next.status.message = std::move(message);
  return true;
}

StatusOr<PersistentVolumeClaim> Controller::UpdateClaimStatus(const PersistentVolumeClaim& claim,
                                                              std::string_view phase,
                                                              const PersistentVolume* volume) {
  PersistentVolumeClaim next = claim;
  KVOL_ASSIGN_OR_RETURN(bool dirty, SetClaimStatus(next, phase, volume));
  if (!dirty) return claim;
  return Write(std::move(next), true);
}

StatusOr<PersistentVolumeClaim> Controller::UpdateClaimStatusWithEvent(
    const PersistentVolumeClaim& claim, std::string_view phase, std::string_view type,
    std::string_view reason, std::string message) {
  if (claim.status.phase == phase) return claim;  // said already
  // As Kubernetes: the event once the phase is written, so a failed write is not announced
  // (and the retry that writes it announces it once).
  auto written = UpdateClaimStatus(claim, phase, nullptr);
  if (written.ok()) Event(claim, type, reason, std::move(message));
  return written;
}

// ---- volume sync ---------------------------------------------------------------------------

Status Controller::SyncVolume(const PersistentVolume& volume) {
  return SyncVolumeWith(volume, nullptr);
}

std::vector<Status> Controller::SyncVolumes(const std::vector<VolumePtr>& volumes) {
  std::vector<Status> results(volumes.size());
  PhaseBatch batch;
  for (size_t i = 0; i < volumes.size(); ++i) {
    if (!volumes[i]) continue;
    batch.slot = i;
    results[i] = SyncVolumeWith(*volumes[i], &batch);
  }
  if (batch.volumes.empty()) return results;
  const std::vector<std::pair<bool, bool>> parts(batch.volumes.size(), {false, true});
  auto written = WriteMany(std::move(batch.volumes), parts);
  for (size_t j = 0; j < written.size(); ++j) {
    if (!written[j].ok()) results[batch.slots[j]] = written[j].status();
  }
  return results;
}

Status Controller::SyncVolumeWith(const PersistentVolume& volume, PhaseBatch* batch) {
  if (auto next = WithDeletionFinalizerFixed(volume)) {
    KVOL_ASSIGN_OR_RETURN(PersistentVolume written, Write(*std::move(next), false));
    return SyncVolumeWith(written, batch);
  }
  if (!volume.spec.claim_ref) {
    return UpdateVolumePhaseOrDefer(volume, api::kVolumeAvailable, batch);
  }
  if (volume.spec.claim_ref->uid.empty()) {
    // Reserved for a claim that has not bound yet: the claim sync binds it.
    return UpdateVolumePhaseOrDefer(volume, api::kVolumeAvailable, batch);
  }
  KVOL_ASSIGN_OR_RETURN(ClaimPtr claim, FindClaimOfVolume(volume));

  if (!claim) return ReleaseAndReclaim(volume);  // the claim is gone
  if (claim->spec.volume_name.empty()) {
    if (VolumeModeMismatch(claim->spec, volume.spec)) {
      Event(volume, "Warning", "VolumeMismatch",
            "Cannot bind PersistentVolume to requested PersistentVolumeClaim \"" +
                claim->metadata.name + "\" due to incompatible volumeMode.");
      Event(*claim, "Warning", "VolumeMismatch",
            "Cannot bind PersistentVolume \"" + volume.metadata.name +
                "\" to requested PersistentVolumeClaim due to incompatible volumeMode.");
      return OkStatus();
    }
    // Bound from this side only (a binding in progress, or a volume pre-bound by its
    // creator): the claim sync finishes it, soon.
    QueueClaim(client::KeyOf(*claim));
    return OkStatus();
  }
  if (claim->spec.volume_name == volume.metadata.name) {
    return UpdateVolumePhaseOrDefer(volume, api::kVolumeBound, batch);
  }
  // The claim is bound to another volume.
  if (HasAnnotation(volume.metadata, api::kAnnDynamicallyProvisioned) &&
      volume.spec.persistent_volume_reclaim_policy == "Delete") {
    return ReleaseAndReclaim(volume);  // made for this claim, not needed after all
  }
  return UnbindVolume(volume);
}

Status Controller::ReleaseAndReclaim(const PersistentVolume& volume) {
  // A Failed phase stays visible while reclaiming is tried again.
  if (volume.status.phase == api::kVolumeReleased || volume.status.phase == api::kVolumeFailed) {
    return ReclaimVolume(volume);
  }
  PersistentVolume next = volume;
  SetVolumePhase(next, api::kVolumeReleased, {});
  KVOL_ASSIGN_OR_RETURN(auto released, WriteParts(std::move(next), false, true));
  return ReclaimVolume(*released);
}

StatusOr<Controller::ClaimPtr> Controller::FindClaimOfVolume(const PersistentVolume& volume) {
  const auto& ref = *volume.spec.claim_ref;
  ClaimPtr claim = GetClaim(ref.namespace_ + "/" + ref.name);
  if (!claim && volume.status.phase != api::kVolumeReleased &&
      volume.status.phase != api::kVolumeFailed) {
    // Not in the cache: it may be new. Ask the server before releasing anything.
    auto got = client_.resource<PersistentVolumeClaim>().Get(ref.namespace_, ref.name);
    if (got.ok()) {
      claim = std::make_shared<const PersistentVolumeClaim>(*got);
    } else if (!api::IsNotFound(got.error())) {
      return ApiStatus(got.error());
    }
  }
  if (claim && claim->metadata.uid != ref.uid) {
    // A claim of the same name; the cache may be behind, so check the server.
    auto got = client_.resource<PersistentVolumeClaim>().Get(ref.namespace_, ref.name);
    if (got.ok()) {
      claim = got->metadata.uid == ref.uid ? std::make_shared<const PersistentVolumeClaim>(*got)
                                           : nullptr;
    } else if (api::IsNotFound(got.error())) {
      claim = nullptr;
    } else {
      return ApiStatus(got.error());
    }
  }
  return claim;
}

Status Controller::UpdateVolumePhase(const PersistentVolume& volume, std::string_view phase,
                                     std::string message) {
  if (volume.status.phase == phase) return OkStatus();
  PersistentVolume next = volume;
  SetVolumePhase(next, phase, std::move(message));
  return WriteParts(std::move(next), false, true).status();
}

Status Controller::UpdateVolumePhaseOrDefer(const PersistentVolume& volume, std::string_view phase,
                                            PhaseBatch* batch) {
  if (!batch || volume.status.phase == phase) return UpdateVolumePhase(volume, phase);
  PersistentVolume next = volume;
  SetVolumePhase(next, phase, {});
  batch->volumes.push_back(std::move(next));
  batch->slots.push_back(batch->slot);
  return OkStatus();
}

Status Controller::UpdateVolumePhaseWithEvent(const PersistentVolume& volume,
                                              std::string_view phase, std::string_view type,
                                              std::string_view reason, std::string message) {
  if (volume.status.phase == phase) return OkStatus();
  // The event once the phase is written, as for claims.
  Status written = UpdateVolumePhase(volume, phase, message);
  if (written.ok()) Event(volume, type, reason, std::move(message));
  return written;
}

Status Controller::UnbindVolume(const PersistentVolume& volume) {
  PersistentVolume next = volume;
  if (HasAnnotation(volume.metadata, api::kAnnBoundByController)) {
    // The controller bound it: undo that entirely.
    next.spec.claim_ref.reset();
    next.metadata.annotations.erase(std::string(api::kAnnBoundByController));
  } else {
    // Pre-bound by its creator: keep the reservation, forget the claim instance.
    next.spec.claim_ref->uid.clear();
  }
  KVOL_ASSIGN_OR_RETURN(auto written, Write(std::move(next), false));
  return UpdateVolumePhase(written, api::kVolumeAvailable);
}

Status Controller::ReclaimVolume(const PersistentVolume& volume) {
  const std::string& policy = volume.spec.persistent_volume_reclaim_policy;
  if (policy == "Retain") return OkStatus();  // Released, and kept for its owner
  if (policy == "Delete") return DeleteVolume(volume);
  if (policy == "Recycle") return RecycleVolume(volume);
  return UpdateVolumePhaseWithEvent(volume, api::kVolumeFailed, "Warning",
                                    "VolumeUnknownReclaimPolicy",
                                    "Volume has unrecognized PersistentVolumeReclaimPolicy");
}

Status Controller::DeleteVolume(const PersistentVolume& volume) {
  auto by = volume.metadata.annotations.find(std::string(api::kAnnDynamicallyProvisioned));
  volume::Provisioner* provisioner =
      by == volume.metadata.annotations.end() ? nullptr : FindProvisioner(by->second);
  if (!provisioner && by != volume.metadata.annotations.end()) {
    return OkStatus();  // an external provisioner made it and deletes it
  }
  // A CSI volume no provisioner here made is its driver's external provisioner's to delete
  // (as Kubernetes leaves it, honouring the reclaim policy).
  if (!provisioner && volume.spec.csi) return OkStatus();
  if (!provisioner) {
    return UpdateVolumePhaseWithEvent(volume, api::kVolumeFailed, "Warning", "VolumeFailedDelete",
                                      "error getting deleter volume plugin for volume \"" +
                                          volume.metadata.name +
                                          "\": no deletable volume plugin matched");
  }
  if (const std::string node = provisioner->VolumeNode(volume); !node.empty()) {
    // A node whose own agent runs the provisioner removes its volumes itself.
    auto n = client_.resource<api::Node>().Get("", node);
    if (!n.ok() && !api::IsNotFound(n.error())) return ApiStatus(n.error());
    if (n.ok() && !provisioner->ServesNode(&*n)) return OkStatus();
  }
  auto cls = GetClass(VolumeClass(volume));
  metrics::OperationTimer timer(std::string(provisioner->name()), "volume_delete");
  Status removed = provisioner->Delete(volume, cls.get());
  timer.Done(removed.ok());
  if (Status s = removed; !s.ok()) {
    // Failed, visibly; every later sync tries again.
    Status failed = UpdateVolumePhaseWithEvent(volume, api::kVolumeFailed, "Warning",
                                               "VolumeFailedDelete", s.message());
    return failed.ok() ? s : failed;
  }
  // The storage is gone: the object may go too. Without the finalizer first, a volume deleted
  // before its claim would stay Terminating.
  if (HasFinalizer(volume.metadata, api::kPVControllerFinalizer)) {
    PersistentVolume next = volume;
    std::erase(next.metadata.finalizers, api::kPVControllerFinalizer);
    auto written = Write(std::move(next), false);
    if (!written.ok() && written.status().code() != StatusCode::kNotFound) return written.status();
  }
  auto deleted = client_.resource<PersistentVolume>().Delete("", volume.metadata.name);
  if (!deleted.ok() && !api::IsNotFound(deleted.error())) return ApiStatus(deleted.error());
  return OkStatus();
}

std::optional<PersistentVolume> Controller::WithDeletionFinalizerFixed(
    const PersistentVolume& volume) const {
  // As Kubernetes does for its in-tree plugins' volumes: Delete adds it (not to an object
  // being deleted, which takes no new finalizers), Retain and Recycle remove it. The policy
  // first: most volumes need no change, and then no annotation is looked up.
  const bool has = HasFinalizer(volume.metadata, api::kPVControllerFinalizer);
  const std::string& policy = volume.spec.persistent_volume_reclaim_policy;
  const bool add = policy == "Delete" && !has && !volume.metadata.deletion_timestamp;
  const bool remove = (policy == "Retain" || policy == "Recycle") && has;
  if (!add && !remove) return std::nullopt;
  auto by = volume.metadata.annotations.find(std::string(api::kAnnDynamicallyProvisioned));
  if (by == volume.metadata.annotations.end() || !FindProvisioner(by->second)) return std::nullopt;
  PersistentVolume next = volume;
  if (add) {
    next.metadata.finalizers.emplace_back(api::kPVControllerFinalizer);
  } else {
    std::erase(next.metadata.finalizers, api::kPVControllerFinalizer);
  }
  return next;
}

Status Controller::RecycleVolume(const PersistentVolume& volume) {
  // As Kubernetes: not while a pod that has not finished still uses the volume's claim; the
  // volume's next sync tries again.
  if (volume.spec.claim_ref) {
    std::vector<std::string> using_pods;
    for (const auto& pod : pods_.PodsUsing(ClaimRefKey(volume))) {
      if (!PodIsShutDown(*pod)) using_pods.push_back(client::KeyOf(*pod));
    }
    if (!using_pods.empty()) {
      std::sort(using_pods.begin(), using_pods.end());
      Event(volume, "Normal", "VolumeFailedRecycle",
            "Volume is used by pods: " + CommaJoined(using_pods));
      return OkStatus();
    }
  }
  if (!volume.spec.host_path) {
    return UpdateVolumePhaseWithEvent(volume, api::kVolumeFailed, "Warning", "VolumeFailedRecycle",
                                      "No recycler plugin found for the volume!");
  }
  if (Status s = volume::ScrubDirectory(volume.spec.host_path->path, options_.recycle_timeout);
      !s.ok()) {
    return UpdateVolumePhaseWithEvent(volume, api::kVolumeFailed, "Warning", "VolumeFailedRecycle",
                                      "Recycle failed: " + s.message());
  }
  Event(volume, "Normal", "VolumeRecycled", "Volume recycled");
  return UnbindVolume(volume);
}

}  // namespace kvol::controller::pv
