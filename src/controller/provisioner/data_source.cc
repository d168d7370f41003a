#include "controller/provisioner/data_source.h"

#include <algorithm>

#include "api/api_error.h"
#include "api/snapshot.h"
#include "api/well_known.h"
#include "client/worker.h"

namespace kvol::controller::provisioner {
namespace {

namespace pb = ::csi::v1;

constexpr std::string_view kSnapshotGroup = "snapshot.storage.k8s.io";

const api::Quantity* Requested(const api::PersistentVolumeClaim& c) {
  auto it = c.spec.resources.requests.find("storage");
  return it == c.spec.resources.requests.end() ? nullptr : &it->second;
}

StatusOr<pb::VolumeContentSource> FromSnapshot(client::Client& client,
                                               const api::PersistentVolumeClaim& claim,
                                               const api::StorageClass& cls,
                                               const std::string& name) {
  auto vs = client.resource<api::VolumeSnapshot>().Get(claim.metadata.namespace_, name);
  if (!vs.ok()) {
    return UnavailableError("error getting snapshot " + name + " from api server: " +
                            vs.error().message);
  }
  // The snapshot controller holds a snapshot being deleted while a claim restores from it.
  if (vs->metadata.deletion_timestamp &&
      std::find(vs->metadata.finalizers.begin(), vs->metadata.finalizers.end(),
                api::kSnapshotAsSourceFinalizer) == vs->metadata.finalizers.end()) {
    return UnavailableError("snapshot " + name + " is being deleted");
  }
  const std::string not_bound = "snapshot " + name + " not bound";
  if (!vs->status || !vs->status->bound_volume_snapshot_content_name) {
    return UnavailableError(not_bound);
  }
  auto content = client.resource<api::VolumeSnapshotContent>().Get(
      "", *vs->status->bound_volume_snapshot_content_name);
  if (!content.ok()) return UnavailableError(not_bound);
  const auto& ref = content->spec.volume_snapshot_ref;
  if (ref.name != name || ref.namespace_ != claim.metadata.namespace_ ||
      ref.uid != vs->metadata.uid || content->spec.driver != cls.provisioner) {
    return UnavailableError(not_bound);
  }
  if (!vs->status->ready_to_use.value_or(false)) {
    return UnavailableError("snapshot " + name + " is not Ready");
  }
  if (!content->status || !content->status->snapshot_handle) {
    return UnavailableError("snapshot handle " + content->metadata.name + " is not available");
  }
  if (vs->status->restore_size) {
    const api::Quantity* want = Requested(claim);
    if (!want) {
      return UnavailableError("error getting capacity for PVC " + claim.metadata.name +
                              " when creating snapshot " + vs->metadata.name);
    }
    if (want->Value() < vs->status->restore_size->Value()) {
      return UnavailableError("requested volume size " + std::to_string(want->Value()) +
                              " is less than the size " +
                              std::to_string(vs->status->restore_size->Value()) +
                              " for the source snapshot " + name);
    }
  }
  pb::VolumeContentSource out;
  out.mutable_snapshot()->set_snapshot_id(*content->status->snapshot_handle);
  return out;
}

StatusOr<pb::VolumeContentSource> FromClaim(client::Client& client,
                                            const api::PersistentVolumeClaim& claim,
                                            const api::StorageClass& cls,
                                            const std::string& name) {
  auto src = client.resource<api::PersistentVolumeClaim>().Get(claim.metadata.namespace_, name);
  if (!src.ok()) {
    return UnavailableError("error getting PVC " + name + " (namespace \"" +
                            claim.metadata.namespace_ + "\") from api server: " +
                            src.error().message);
  }
  if (src->status.phase != api::kClaimBound) {
    return UnavailableError("the PVC DataSource " + name + " must have a status of Bound.  Got " +
                            (src->status.phase.empty() ? "Pending" : src->status.phase));
  }
  if (src->metadata.deletion_timestamp) {
    return UnavailableError("the PVC DataSource " + name + " is currently being deleted");
  }
  if (!src->spec.storage_class_name) {
    return UnavailableError("the source PVC (" + name + ") storageclass cannot be empty");
  }
  if (!claim.spec.storage_class_name) {
    return UnavailableError("the requested PVC (" + claim.metadata.name +
                            ") storageclass cannot be empty");
  }
  // Kubernetes' rule for clones: the same class, so that the new volume is what its class says.
  if (*src->spec.storage_class_name != *claim.spec.storage_class_name) {
    return UnavailableError("the source PVC and destination PVCs must be in the same storage "
                            "class for cloning.  Source is in " + *src->spec.storage_class_name +
                            ", but new PVC is in " + *claim.spec.storage_class_name);
  }
  const api::Quantity* want = Requested(claim);
  const api::Quantity* have = Requested(*src);
  if (want && have && want->Value() < have->Value()) {
    return UnavailableError(
        "error, new PVC request must be greater than or equal in size to the specified PVC data "
        "source, requested " + want->ToString() + " but source is " + have->ToString());
  }
  if (src->spec.volume_name.empty()) {
    return UnavailableError("volume name is empty in source PVC " + name);
  }
  const std::string invalid = "claim in dataSource not bound or invalid";
  auto pv = client.resource<api::PersistentVolume>().Get("", src->spec.volume_name);
  if (!pv.ok() || !pv->spec.csi || pv->spec.csi->driver != cls.provisioner || !pv->spec.claim_ref ||
      pv->spec.claim_ref->name != name || pv->spec.claim_ref->namespace_ != claim.metadata.namespace_ ||
      pv->spec.claim_ref->uid != src->metadata.uid || pv->status.phase != api::kVolumeBound) {
    return UnavailableError(invalid);
  }
  const std::string src_mode = src->spec.volume_mode.value_or("Filesystem");
  const std::string want_mode = claim.spec.volume_mode.value_or("Filesystem");
  if (src_mode != want_mode) {
    return UnavailableError("the source PVC and destination PVCs must have the same volume mode "
                            "for cloning.  Source is " + src_mode + ", but new PVC requested " +
                            want_mode);
  }
  pb::VolumeContentSource out;
  out.mutable_volume()->set_volume_id(pv->spec.csi->volume_handle);
  return out;
}

}  // namespace

DataSource DataSourceOf(const api::PersistentVolumeClaim& claim) {
  auto of = [](const auto& ref) -> DataSource {
    if (!ref) return {};
    if (ref->kind == "VolumeSnapshot" && ref->api_group.value_or("") == kSnapshotGroup) {
      return {.kind = SourceKind::kSnapshot, .name = ref->name};
    }
    if (ref->kind == "PersistentVolumeClaim" && ref->api_group.value_or("").empty()) {
      return {.kind = SourceKind::kClaim, .name = ref->name};
    }
    return {.kind = SourceKind::kOther, .name = ref->name};
  };
  if (claim.spec.data_source) return of(claim.spec.data_source);
  return of(claim.spec.data_source_ref);
}

StatusOr<pb::VolumeContentSource> ContentSourceFor(client::Client& client,
                                                   const api::PersistentVolumeClaim& claim,
                                                   const api::StorageClass& cls,
                                                   const DataSource& source) {
  const bool snapshot = source.kind == SourceKind::kSnapshot;
  auto got = snapshot ? FromSnapshot(client, claim, cls, source.name)
                      : FromClaim(client, claim, cls, source.name);
  if (got.ok()) return got;
  return Status(got.status().code(),
                std::string("error getting handle for DataSource Type ") +
                    (snapshot ? "VolumeSnapshot" : "PersistentVolumeClaim") + " by Name " +
                    source.name + ": " + got.status().message());
}

}  // namespace kvol::controller::provisioner
