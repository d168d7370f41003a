#include "controller/snapshot/snapshot_controller.h"

#include <algorithm>

#include "api/api_error.h"
#include "api/node_selector.h"
#include "api/well_known.h"
#include "client/informer.h"
#include "client/worker.h"
#include "controller/util/meta.h"

namespace kvol::controller::snapshot {
namespace {

using client::ApiStatus;

constexpr std::string_view kWarning = "Warning";
constexpr std::string_view kNormal = "Normal";

bool Deleting(const api::ObjectMeta& m) { return m.deletion_timestamp.has_value(); }

bool Ready(const api::VolumeSnapshot& vs) {
  return vs.status && vs.status->ready_to_use.value_or(false);
}

std::string BoundName(const api::VolumeSnapshot& vs) {
  return vs.status ? vs.status->bound_volume_snapshot_content_name.value_or("") : "";
}

std::string Key(const api::VolumeSnapshot& vs) {
  return vs.metadata.namespace_ + "/" + vs.metadata.name;
}

void RemoveFinalizer(api::ObjectMeta& m, std::string_view f) {
  std::erase(m.finalizers, std::string(f));
}

// Whether the content's reference names this snapshot (its uid too, once the content has one).
bool PointsAt(const api::VolumeSnapshotContent& c, const api::VolumeSnapshot& vs, bool need_uid) {
  const auto& ref = c.spec.volume_snapshot_ref;
  if (ref.name != vs.metadata.name || ref.namespace_ != vs.metadata.namespace_) return false;
  if (ref.uid.empty()) return !need_uid;
  return ref.uid == vs.metadata.uid;
}

// Whether a claim is being restored from this snapshot and has not got its volume yet.
bool RestoringFrom(const api::PersistentVolumeClaim& pvc, const api::VolumeSnapshot& vs) {
  if (pvc.status.phase != api::kClaimPending && !pvc.status.phase.empty()) return false;
  auto names = [&](const auto& ref) {
    return ref && ref->kind == "VolumeSnapshot" &&
           ref->api_group.value_or("") == "snapshot.storage.k8s.io" && ref->name == vs.metadata.name;
  };
  return names(pvc.spec.data_source) || names(pvc.spec.data_source_ref);
}

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

std::string ContentNameFor(const api::VolumeSnapshot& vs) { return "snapcontent-" + vs.metadata.uid; }

SnapshotController::SnapshotController(client::Client& client, client::EventSink events,
                                       os::Clock& clock,
                                       std::function<void(const std::string&)> enqueue_snapshot)
    : client_(client),
      events_(std::move(events)),
      clock_(clock),
      enqueue_snapshot_(std::move(enqueue_snapshot)) {}

void SnapshotController::Event(const api::VolumeSnapshot& vs, std::string_view type,
                               std::string_view reason, std::string message) {
  if (events_) events_(client::ReferenceTo(vs), type, reason, std::move(message));
}

void SnapshotController::Event(const api::VolumeSnapshotContent& c, std::string_view type,
                               std::string_view reason, std::string message) {
  if (events_) events_(client::ReferenceTo(c), type, reason, std::move(message));
}

Status SnapshotController::Refuse(const api::VolumeSnapshot& vs, std::string_view reason,
                                  const std::string& message) {
  KVOL_RETURN_IF_ERROR(ReportError(vs, true, reason, message));
  return FailedPreconditionError(message);
}

Status SnapshotController::ReportError(const api::VolumeSnapshot& vs, bool not_ready,
                                       std::string_view reason, const std::string& message) {
  if (vs.status && vs.status->error && vs.status->error->message == message) return OkStatus();
  api::VolumeSnapshot next = vs;
  auto& status = next.status ? *next.status : next.status.emplace();
  status.error = api::VolumeSnapshotError{
      .time = api::Time::FromTimePoint(clock_.Now()), .message = message};
  if (not_ready) status.ready_to_use = false;
  Event(vs, kWarning, reason, message);
  auto written = client_.resource<api::VolumeSnapshot>().UpdateStatus(next);
  return written.ok() ? OkStatus() : ApiStatus(written.error());
}

StatusOr<std::optional<api::VolumeSnapshot>> SnapshotController::EnsureClass(
    const api::VolumeSnapshot& vs) {
  auto& classes = client_.resource<api::VolumeSnapshotClass>();
  if (vs.spec.volume_snapshot_class_name) {
    auto cls = classes.Get("", *vs.spec.volume_snapshot_class_name);
    if (cls.ok()) return std::optional<api::VolumeSnapshot>(vs);
    if (!api::IsNotFound(cls.error())) return ApiStatus(cls.error());
    if (Deleting(vs.metadata)) return std::optional<api::VolumeSnapshot>(vs);  // let it go
    KVOL_RETURN_IF_ERROR(ReportError(vs, false, "GetSnapshotClassFailed",
                                     "Failed to get snapshot class with error "
                                     "volumesnapshotclass.snapshot.storage.k8s.io " +
                                         Quoted(*vs.spec.volume_snapshot_class_name) +
                                         " not found"));
    return std::optional<api::VolumeSnapshot>();
  }
  if (!vs.spec.source.persistent_volume_claim_name || Deleting(vs.metadata)) {
    return std::optional<api::VolumeSnapshot>(vs);  // pre-provisioned: no class needed
  }
  // The default class of the driver of the claim's volume.
  auto fail = [&](const std::string& why) -> StatusOr<std::optional<api::VolumeSnapshot>> {
    KVOL_RETURN_IF_ERROR(ReportError(vs, false, "SetDefaultSnapshotClassFailed",
                                     "Failed to set default snapshot class with error " + why));
    return std::optional<api::VolumeSnapshot>();
  };
  const std::string& claim_name = *vs.spec.source.persistent_volume_claim_name;
  auto pvc = client_.resource<api::PersistentVolumeClaim>().Get(vs.metadata.namespace_, claim_name);
  if (!pvc.ok()) {
    if (!api::IsNotFound(pvc.error())) return ApiStatus(pvc.error());
    return fail("failed to retrieve PVC " + claim_name + " from the lister: " +
                Quoted("persistentvolumeclaim " + Quoted(claim_name) + " not found"));
  }
  if (pvc->spec.volume_name.empty()) {
    return fail("the PVC " + claim_name +
                " is not yet bound to a PV, will not attempt to take a snapshot");
  }
  auto pv = client_.resource<api::PersistentVolume>().Get("", pvc->spec.volume_name);
  if (!pv.ok()) return ApiStatus(pv.error());
  if (!pv->spec.csi) {
    return fail("snapshotting non-CSI volumes is not supported, snapshot:" + Key(vs));
  }
  auto list = classes.List("");
  if (!list.ok()) return ApiStatus(list.error());
  std::vector<std::string> defaults;
  for (const auto& c : list->items) {
    if (c.driver == pv->spec.csi->driver &&
        Annotation(c.metadata, api::kDefaultSnapshotClassAnnotation) == "true") {
      defaults.push_back(c.metadata.name);
    }
  }
  if (defaults.empty()) return fail("cannot find default snapshot class");
  if (defaults.size() > 1) {
    return fail(std::to_string(defaults.size()) + " default snapshot classes were found");
  }
  api::VolumeSnapshot next = vs;
  next.spec.volume_snapshot_class_name = defaults.front();
  auto written = client_.resource<api::VolumeSnapshot>().Update(next);
  if (!written.ok()) return ApiStatus(written.error());
  return std::optional<api::VolumeSnapshot>(*std::move(written));
}

Status SnapshotController::SyncSnapshot(const api::VolumeSnapshot& given) {
  KVOL_ASSIGN_OR_RETURN(auto vs, EnsureClass(given));
  if (!vs) return UnavailableError("snapshot " + Key(given) + " has no usable class yet");
  if (Status s = ReleaseSourceClaim(*vs, false); !s.ok()) {
    Event(*vs, kWarning, "ErrorPVCFinalizer",
          "Error check and remove PVC Finalizer for VolumeSnapshot");
    return s;
  }
  if (Deleting(vs->metadata)) return ProcessDeletion(*vs);
  return SyncLive(*vs);
}

Status SnapshotController::SyncLive(const api::VolumeSnapshot& vs) {
  const auto& src = vs.spec.source;
  if (src.persistent_volume_claim_name.has_value() == src.volume_snapshot_content_name.has_value()) {
    return ReportError(vs, true, "SnapshotValidationError",
                       "Exactly one of PersistentVolumeClaimName and VolumeSnapshotContentName "
                       "should be specified");
  }
  if (Status s = AddSnapshotFinalizers(vs); !s.ok()) {
    Event(vs, kWarning, "SnapshotFinalizerError",
          "Failed to check and update snapshot: " + s.message());
    return s;
  }
  // The finalizers were written to a newer version: work on that one.
  auto current = client_.resource<api::VolumeSnapshot>().Get(vs.metadata.namespace_, vs.metadata.name);
  if (!current.ok()) return api::IsNotFound(current.error()) ? OkStatus() : ApiStatus(current.error());
  if (!Ready(*current) || BoundName(*current).empty()) {
    return src.volume_snapshot_content_name ? SyncUnreadyPreProvisioned(*current)
                                            : SyncUnreadyDynamic(*current);
  }
  return SyncReady(*current);
}

StatusOr<std::optional<api::VolumeSnapshotContent>> SnapshotController::BoundContent(
    const api::VolumeSnapshot& vs) {
  std::string name = BoundName(vs);
  if (name.empty() && vs.spec.source.volume_snapshot_content_name) {
    name = *vs.spec.source.volume_snapshot_content_name;
  }
  if (name.empty() && vs.spec.source.persistent_volume_claim_name) name = ContentNameFor(vs);
  auto c = client_.resource<api::VolumeSnapshotContent>().Get("", name);
  if (!c.ok()) {
    if (api::IsNotFound(c.error())) return std::optional<api::VolumeSnapshotContent>();
    return ApiStatus(c.error());
  }
  if (!PointsAt(*c, vs, true)) return std::optional<api::VolumeSnapshotContent>();
  return std::optional<api::VolumeSnapshotContent>(*std::move(c));
}

Status SnapshotController::AddSnapshotFinalizers(const api::VolumeSnapshot& vs) {
  KVOL_ASSIGN_OR_RETURN(auto content, BoundContent(vs));
  const bool want_bound = content && content->spec.deletion_policy == api::kSnapshotDeletionDelete &&
                          !BoundName(vs).empty();
  const bool add_source = !HasFinalizer(vs.metadata, api::kSnapshotAsSourceFinalizer);
  const bool add_bound = want_bound && !HasFinalizer(vs.metadata, api::kSnapshotBoundFinalizer);
  if (!add_source && !add_bound) return OkStatus();
  api::VolumeSnapshot next = vs;
  if (add_source) next.metadata.finalizers.emplace_back(api::kSnapshotAsSourceFinalizer);
  if (add_bound) next.metadata.finalizers.emplace_back(api::kSnapshotBoundFinalizer);
  auto written = client_.resource<api::VolumeSnapshot>().Update(next);
  return written.ok() ? OkStatus() : ApiStatus(written.error());
}

Status SnapshotController::SyncUnreadyPreProvisioned(const api::VolumeSnapshot& vs) {
  const std::string& name = *vs.spec.source.volume_snapshot_content_name;
  auto& contents = client_.resource<api::VolumeSnapshotContent>();
  auto c = contents.Get("", name);
  if (!c.ok()) {
    if (!api::IsNotFound(c.error())) return ApiStatus(c.error());
    KVOL_RETURN_IF_ERROR(ReportError(vs, true, "SnapshotContentMissing",
                                     "VolumeSnapshotContent is missing"));
    return NotFoundError("content " + name + " for snapshot " + Key(vs) + " is missing");
  }
  if (!c->spec.source.snapshot_handle) {
    return Refuse(vs, "SnapshotContentMismatch",
                  "VolumeSnapshotContent is dynamically provisioned while expecting a "
                  "pre-provisioned one");
  }
  if (!PointsAt(*c, vs, false)) {
    return Refuse(vs, "SnapshotContentMisbound",
                  "VolumeSnapshotContent [" + name + "] is bound to a different snapshot");
  }
  // Binds the content to this snapshot: its uid, and its class when the snapshot names one.
  const bool needs_uid = c->spec.volume_snapshot_ref.uid.empty();
  const bool needs_class = vs.spec.volume_snapshot_class_name &&
                           c->spec.volume_snapshot_class_name != vs.spec.volume_snapshot_class_name;
  if (needs_uid || (needs_class && !c->spec.volume_snapshot_class_name)) {
    api::VolumeSnapshotContent next = *c;
    next.spec.volume_snapshot_ref.uid = vs.metadata.uid;
    if (vs.spec.volume_snapshot_class_name) {
      next.spec.volume_snapshot_class_name = vs.spec.volume_snapshot_class_name;
    }
    auto written = contents.Update(next);
    if (!written.ok()) {
      KVOL_RETURN_IF_ERROR(ReportError(vs, true, "SnapshotBindFailed",
                                       "Snapshot failed to bind VolumeSnapshotContent, " +
                                           written.error().message));
      return ApiStatus(written.error());
    }
    c = std::move(written);
  }
  return UpdateStatus(vs, *c);
}

Status SnapshotController::SyncUnreadyDynamic(const api::VolumeSnapshot& vs) {
  auto c = client_.resource<api::VolumeSnapshotContent>().Get("", ContentNameFor(vs));
  if (c.ok()) {
    if (!c->spec.source.volume_handle) {
      return Refuse(vs, "SnapshotContentMismatch",
                    "VolumeSnapshotContent " + c->metadata.name +
                        " is pre-provisioned while expecting a dynamically provisioned one");
    }
    if (!PointsAt(*c, vs, true)) {
      return Refuse(vs, "SnapshotContentMisbound",
                    "VolumeSnapshotContent [" + c->metadata.name +
                        "] is bound to a different snapshot");
    }
    if (c->spec.source.snapshot_handle) {
      return Refuse(vs, "SnapshotHandleSet",
                    "Snapshot handle should not be set in content " + Key(vs) +
                        " for dynamic provisioning");
    }
    return UpdateStatus(vs, *c);
  }
  if (!api::IsNotFound(c.error())) return ApiStatus(c.error());
  // A snapshot whose content went after it was bound is not taken again of the claim's data as
  // it is now: that would be another snapshot under the same name.
  if (!BoundName(vs).empty()) {
    return Refuse(vs, "SnapshotContentMissing", "VolumeSnapshotContent is missing");
  }
  return CreateContent(vs);
}

Status SnapshotController::ProtectSourceClaim(const api::VolumeSnapshot& vs,
                                              const api::PersistentVolumeClaim& pvc) {
  if (HasFinalizer(pvc.metadata, api::kPVCAsSnapshotSourceFinalizer)) return OkStatus();
  if (Deleting(pvc.metadata)) {
    return FailedPreconditionError("snapshot controller failed to update " + pvc.metadata.name +
                                   " on API server: cannot add finalizer on claim because it is "
                                   "being deleted");
  }
  api::PersistentVolumeClaim next = pvc;
  next.metadata.finalizers.emplace_back(api::kPVCAsSnapshotSourceFinalizer);
  auto written = client_.resource<api::PersistentVolumeClaim>().Update(next);
  if (!written.ok()) {
    return Status(ApiStatus(written.error()).code(),
                  "snapshot controller failed to update " + vs.metadata.name +
                      " on API server: " + written.error().message);
  }
  return OkStatus();
}

std::string SnapshotController::ManagingNode(const api::PersistentVolume& pv) {
  if (!pv.spec.node_affinity || !pv.spec.node_affinity->required) return "";
  auto nodes = client_.resource<api::Node>().List("");
  if (!nodes.ok()) return "";
  std::string found;
  for (const auto& n : nodes->items) {
    if (!api::PersistentVolumeFitsNode(pv.spec, n)) continue;
    if (!found.empty()) return "";  // more than one: any of them
    found = n.metadata.name;
  }
  return found;
}

Status SnapshotController::CreateContent(const api::VolumeSnapshot& vs) {
  auto fail = [&](const std::string& why) -> Status {
    KVOL_RETURN_IF_ERROR(ReportError(vs, true, "SnapshotContentCreationFailed",
                                     "Failed to create snapshot content with error " + why));
    return FailedPreconditionError(why);
  };
  if (!vs.spec.source.persistent_volume_claim_name) {
    return ReportError(vs, true, "SnapshotPVCSourceMissing",
                       "PVC source for snapshot " + Key(vs) + " is missing");
  }
  const std::string& claim_name = *vs.spec.source.persistent_volume_claim_name;
  auto pvc = client_.resource<api::PersistentVolumeClaim>().Get(vs.metadata.namespace_, claim_name);
  if (!pvc.ok()) {
    if (!api::IsNotFound(pvc.error())) return ApiStatus(pvc.error());
    return fail("snapshot controller failed to update " + vs.metadata.name +
                " on API server: cannot get claim from snapshot");
  }
  if (Status s = ProtectSourceClaim(vs, *pvc); !s.ok()) return fail(s.message());
  auto input = [&](const std::string& why) {
    return fail("failed to get input parameters to create snapshot " + vs.metadata.name + ": " +
                Quoted(why));
  };
  if (!vs.spec.volume_snapshot_class_name) {
    return input("failed to take snapshot " + vs.metadata.name + " without a snapshot class");
  }
  auto cls = client_.resource<api::VolumeSnapshotClass>().Get("", *vs.spec.volume_snapshot_class_name);
  if (!cls.ok()) return api::IsNotFound(cls.error()) ? input(cls.error().message) : ApiStatus(cls.error());
  if (pvc->spec.volume_name.empty()) {
    return input("the PVC " + claim_name +
                 " is not yet bound to a PV, will not attempt to take a snapshot");
  }
  auto pv = client_.resource<api::PersistentVolume>().Get("", pvc->spec.volume_name);
  if (!pv.ok()) {
    return input("failed to retrieve PV " + pvc->spec.volume_name + " from the API server: " +
                 Quoted(pv.error().message));
  }
  const auto& claim_ref = pv->spec.claim_ref;
  if (!claim_ref || claim_ref->name != claim_name ||
      claim_ref->namespace_ != vs.metadata.namespace_ ||
      (!claim_ref->uid.empty() && claim_ref->uid != pvc->metadata.uid)) {
    return input("claim in dataSource not bound or invalid");
  }
  if (!pv->spec.csi) {
    return input("cannot find CSI PersistentVolumeSource for volume " + pv->metadata.name);
  }

  api::VolumeSnapshotContent c;
  c.metadata.name = ContentNameFor(vs);
  // Protected from its first moment: a snapshot deleted at once must not take the content with
  // it while the snapshotter may be taking the storage snapshot.
  c.metadata.finalizers = {std::string(api::kContentBoundFinalizer)};
  auto& ref = c.spec.volume_snapshot_ref;
  ref.kind = "VolumeSnapshot";
  ref.api_version = "snapshot.storage.k8s.io/v1";
  ref.namespace_ = vs.metadata.namespace_;
  ref.name = vs.metadata.name;
  ref.uid = vs.metadata.uid;
  ref.resource_version = vs.metadata.resource_version;
  c.spec.source.volume_handle = pv->spec.csi->volume_handle;
  c.spec.volume_snapshot_class_name = cls->metadata.name;
  c.spec.deletion_policy = cls->deletion_policy;
  c.spec.driver = cls->driver;
  const auto secret_name = cls->parameters.find("csi.storage.k8s.io/snapshotter-secret-name");
  const auto secret_ns = cls->parameters.find("csi.storage.k8s.io/snapshotter-secret-namespace");
  if (secret_name != cls->parameters.end() && secret_ns != cls->parameters.end()) {
    c.metadata.annotations[std::string(api::kAnnSnapshotDeletionSecretName)] = secret_name->second;
    c.metadata.annotations[std::string(api::kAnnSnapshotDeletionSecretNamespace)] = secret_ns->second;
  }
  if (std::string node = ManagingNode(*pv); !node.empty()) {
    c.metadata.labels[std::string(kManagedByLabel)] = node;
  }
  auto created = client_.resource<api::VolumeSnapshotContent>().Create(c);
  if (!created.ok() && !api::IsAlreadyExists(created.error())) {
    Event(vs, kWarning, "CreateSnapshotContentFailed",
          "Error creating volume snapshot content object for snapshot " + Key(vs) + ": " +
              created.error().message + ".");
    return fail("snapshot controller failed to update " + c.metadata.name + " on API server: " +
                created.error().message);
  }
  Event(vs, kNormal, "CreatingSnapshot",
        "Waiting for a snapshot " + Key(vs) + " to be created by the CSI driver.");
  return UpdateStatus(vs, created.ok() ? *created : c);
}

Status SnapshotController::UpdateStatus(const api::VolumeSnapshot& vs,
                                        const api::VolumeSnapshotContent& content) {
  api::VolumeSnapshot next = vs;
  const bool was_created = vs.status && vs.status->creation_time;
  const bool was_ready = Ready(vs);
  auto& s = next.status ? *next.status : next.status.emplace();
  const api::VolumeSnapshotContentStatus cs =
      content.status.value_or(api::VolumeSnapshotContentStatus{});
  if (!s.bound_volume_snapshot_content_name) s.bound_volume_snapshot_content_name = content.metadata.name;
  if (!s.creation_time && cs.creation_time) {
    s.creation_time = api::Time::FromUnixSeconds(*cs.creation_time / 1'000'000'000);
  }
  const bool ready = cs.ready_to_use.value_or(false);
  if (s.ready_to_use != ready) {
    s.ready_to_use = ready;
    if (ready) s.error.reset();
  }
  if (cs.restore_size && (!s.restore_size || (s.restore_size->Value() == 0 && *cs.restore_size > 0))) {
    s.restore_size = api::Quantity::FromUnits(*cs.restore_size, api::Quantity::Format::kBinarySI);
  }
  if (cs.error || s.error) s.error = cs.error;
  if (ready) s.error.reset();
  if (next.status == vs.status) return OkStatus();
  auto written = client_.resource<api::VolumeSnapshot>().UpdateStatus(next);
  if (!written.ok()) {
    KVOL_RETURN_IF_ERROR(ReportError(vs, false, "SnapshotStatusUpdateFailed",
                                     "Snapshot status update failed, " + written.error().message));
    return ApiStatus(written.error());
  }
  if (!was_created && s.creation_time) {
    Event(vs, kNormal, "SnapshotCreated",
          "Snapshot " + Key(vs) + " was successfully created by the CSI driver.");
  }
  if (!was_ready && ready) Event(vs, kNormal, "SnapshotReady", "Snapshot " + Key(vs) + " is ready to use.");
  return OkStatus();
}

Status SnapshotController::SyncReady(const api::VolumeSnapshot& vs) {
  auto c = client_.resource<api::VolumeSnapshotContent>().Get("", BoundName(vs));
  if (!c.ok()) {
    if (!api::IsNotFound(c.error())) return ApiStatus(c.error());
    return Refuse(vs, "SnapshotContentMissing", "VolumeSnapshotContent is missing");
  }
  if (!PointsAt(*c, vs, true)) {
    return Refuse(vs, "SnapshotMisbound",
                  "VolumeSnapshotContent is not bound to the VolumeSnapshot correctly");
  }
  return OkStatus();
}

Status SnapshotController::ReleaseSourceClaim(const api::VolumeSnapshot& vs, bool deleting) {
  if (!vs.spec.source.persistent_volume_claim_name) return OkStatus();
  const std::string& claim_name = *vs.spec.source.persistent_volume_claim_name;
  auto& claims = client_.resource<api::PersistentVolumeClaim>();
  auto pvc = claims.Get(vs.metadata.namespace_, claim_name);
  if (!pvc.ok()) return api::IsNotFound(pvc.error()) ? OkStatus() : ApiStatus(pvc.error());
  if (!HasFinalizer(pvc->metadata, api::kPVCAsSnapshotSourceFinalizer)) return OkStatus();
  auto snapshots = client_.resource<api::VolumeSnapshot>().List(vs.metadata.namespace_);
  if (!snapshots.ok()) return ApiStatus(snapshots.error());
  for (const auto& other : snapshots->items) {
    if (deleting && other.metadata.uid == vs.metadata.uid) continue;
    if (other.spec.source.persistent_volume_claim_name == claim_name && !Ready(other)) {
      return OkStatus();  // a snapshot of it is still being taken
    }
  }
  api::PersistentVolumeClaim next = *pvc;
  RemoveFinalizer(next.metadata, api::kPVCAsSnapshotSourceFinalizer);
  auto written = claims.Update(next);
  if (!written.ok() && !api::IsNotFound(written.error())) return ApiStatus(written.error());
  return OkStatus();
}

Status SnapshotController::MarkBeingDeleted(const api::VolumeSnapshotContent& content) {
  if (Annotation(content.metadata, api::kAnnSnapshotBeingDeleted) == "yes") return OkStatus();
  api::VolumeSnapshotContent next = content;
  next.metadata.annotations[std::string(api::kAnnSnapshotBeingDeleted)] = "yes";
  auto written = client_.resource<api::VolumeSnapshotContent>().Update(next);
  if (!written.ok() && !api::IsNotFound(written.error())) return ApiStatus(written.error());
  return OkStatus();
}

Status SnapshotController::ProcessDeletion(const api::VolumeSnapshot& vs) {
  const bool as_source = HasFinalizer(vs.metadata, api::kSnapshotAsSourceFinalizer);
  const bool bound = HasFinalizer(vs.metadata, api::kSnapshotBoundFinalizer);
  if (!as_source && !bound) return OkStatus();  // not ours to finish
  KVOL_ASSIGN_OR_RETURN(auto content, BoundContent(vs));
  if (content) {
    auto claims = client_.resource<api::PersistentVolumeClaim>().List(vs.metadata.namespace_);
    if (!claims.ok()) return ApiStatus(claims.error());
    for (const auto& pvc : claims->items) {
      if (RestoringFrom(pvc, vs)) {
        Event(vs, kWarning, "SnapshotDeletePending", "Snapshot is being used to restore a PVC");
        return OkStatus();  // the claim's provisioning wakes it again
      }
    }
    KVOL_RETURN_IF_ERROR(MarkBeingDeleted(*content));
  }
  const bool delete_content = content && content->spec.deletion_policy == api::kSnapshotDeletionDelete;
  if (delete_content) {
    auto gone = client_.resource<api::VolumeSnapshotContent>().Delete("", content->metadata.name);
    if (!gone.ok() && !api::IsNotFound(gone.error())) {
      Event(vs, kWarning, "SnapshotContentObjectDeleteError",
            "Failed to delete snapshot content API object");
      return ApiStatus(gone.error());
    }
  }
  if (Status s = ReleaseSourceClaim(vs, true); !s.ok()) {
    Event(vs, kWarning, "ErrorPVCFinalizer",
          "Error check and remove PVC Finalizer for VolumeSnapshot");
    return s;
  }
  // The bound finalizer stays until the content is gone, so that a snapshot is not gone while
  // its storage snapshot is still being deleted.
  api::VolumeSnapshot next = vs;
  RemoveFinalizer(next.metadata, api::kSnapshotAsSourceFinalizer);
  if (!delete_content) RemoveFinalizer(next.metadata, api::kSnapshotBoundFinalizer);
  if (next.metadata.finalizers == vs.metadata.finalizers) return OkStatus();
  auto written = client_.resource<api::VolumeSnapshot>().Update(next);
  if (!written.ok() && !api::IsNotFound(written.error())) return ApiStatus(written.error());
  return OkStatus();
}

Status SnapshotController::SyncContent(const api::VolumeSnapshotContent& content) {
  const auto& src = content.spec.source;
  if (src.volume_handle.has_value() == src.snapshot_handle.has_value()) {
    Event(content, kWarning, "ContentValidationError",
          "Exactly one of VolumeHandle and SnapshotHandle should be specified");
    return OkStatus();
  }
  const auto& ref = content.spec.volume_snapshot_ref;
  if (ref.uid.empty()) {
    // A pre-provisioned content no snapshot has taken yet: the one it names may now bind it.
    if (enqueue_snapshot_ && !ref.name.empty()) enqueue_snapshot_(ref.namespace_ + "/" + ref.name);
    return OkStatus();
  }
  if (!Deleting(content.metadata) && !HasFinalizer(content.metadata, api::kContentBoundFinalizer)) {
    api::VolumeSnapshotContent next = content;
    next.metadata.finalizers.emplace_back(api::kContentBoundFinalizer);
    auto written = client_.resource<api::VolumeSnapshotContent>().Update(next);
    if (!written.ok() && !api::IsNotFound(written.error())) return ApiStatus(written.error());
    return OkStatus();  // the update comes back as an event
  }
  auto vs = client_.resource<api::VolumeSnapshot>().Get(ref.namespace_, ref.name);
  if (!vs.ok()) {
    // Never deletes a content whose snapshot is gone: that is the administrator's to decide.
    return api::IsNotFound(vs.error()) ? OkStatus() : ApiStatus(vs.error());
  }
  if (vs->metadata.uid != ref.uid) return OkStatus();
  if (enqueue_snapshot_) enqueue_snapshot_(Key(*vs));
  if (Deleting(vs->metadata) && (HasFinalizer(vs->metadata, api::kSnapshotAsSourceFinalizer) ||
                                 HasFinalizer(vs->metadata, api::kSnapshotBoundFinalizer))) {
    return MarkBeingDeleted(content);
  }
  return OkStatus();
}

}  // namespace kvol::controller::snapshot
