#include "controller/provisioner/node_local.h"

#include <algorithm>

#include "api/api_error.h"
#include "api/well_known.h"
#include "base/log.h"
#include "client/worker.h"
#include "controller/util/meta.h"
#include "volume/binding/matching.h"

namespace kvol::controller::provisioner {
namespace {

using client::ApiStatus;

}  // namespace

NodeLocalController::NodeLocalController(client::Client& client, NodeLocalOptions options)
    : client_(client),
      options_(std::move(options)),
      loop_(client, LoopOptions{.name = std::string(options_.provisioner->name()) + " provisioner",
                                .thread_name = "local-provision",
                                .component = std::string(options_.provisioner->name()) + "_" +
                                             options_.node_name,
                                .workers = options_.workers,
                                .clock = options_.clock,
                                .informers = options_.informers}) {}

NodeLocalController::~NodeLocalController() { Stop(); }

std::shared_ptr<const api::StorageClass> NodeLocalController::ClassOf(
    const std::string& name) const {
  if (auto* classes = loop_.classes()) return classes->Get("", name);
  auto cls = client_.resource<api::StorageClass>().Get("", name);
  return cls.ok() ? std::make_shared<const api::StorageClass>(*std::move(cls)) : nullptr;
}

bool NodeLocalController::ClaimIsMine(const api::PersistentVolumeClaim& claim) const {
  return claim.spec.volume_name.empty() && !claim.metadata.deletion_timestamp &&
         Annotation(claim.metadata, api::kAnnStorageProvisioner) ==
             options_.provisioner->name() &&
         Annotation(claim.metadata, api::kAnnSelectedNode) == options_.node_name;
}

bool NodeLocalController::VolumeIsMine(const api::PersistentVolume& volume) const {
  return volume.status.phase == api::kVolumeReleased &&
         volume.spec.persistent_volume_reclaim_policy == "Delete" &&
         Annotation(volume.metadata, api::kAnnDynamicallyProvisioned) ==
             options_.provisioner->name() &&
         options_.provisioner->VolumeNode(volume) == options_.node_name;
}

Status NodeLocalController::SyncClaim(const api::PersistentVolumeClaim& claim) {
  if (!ClaimIsMine(claim)) return OkStatus();
  const std::string pv_name = "pvc-" + claim.metadata.uid;
  if (loop_.volumes() && loop_.volumes()->Get("", pv_name)) return OkStatus();  // made; the PV controller binds
  auto cls = ClassOf(volume::binding::ClaimClass(claim));
  // OBSERVATION: without its class the PV controller has told the claim already.
  if (!cls || cls->provisioner != options_.provisioner->name()) return OkStatus();
  auto existing = client_.resource<api::PersistentVolume>().Get("", pv_name);
  if (existing.ok()) return OkStatus();
  if (!api::IsNotFound(existing.error())) return ApiStatus(existing.error());
  return Provision(claim, *cls);
}

Status NodeLocalController::Provision(const api::PersistentVolumeClaim& claim,
                                      const api::StorageClass& cls) {
  const auto ref = client::ReferenceTo(claim);
  const std::string pv_name = "pvc-" + claim.metadata.uid;
  auto node = client_.resource<api::Node>().Get("", options_.node_name);
  if (!node.ok()) return ApiStatus(node.error());
  loop_.Event(ref, "Normal", "Provisioning",
        "External provisioner is provisioning volume for claim \"" + client::KeyOf(claim) + "\"");
  auto spec = options_.provisioner->Provision({pv_name, &claim, &cls, &*node});
  if (!spec.ok()) {
    loop_.Event(ref, "Warning", "ProvisioningFailed",
          "failed to provision volume with StorageClass \"" + cls.metadata.name +
              "\": " + spec.status().message());
    // As the PV controller: the claim goes back to the scheduler, which may pick another node.
    auto unselected = client::Mutate<api::PersistentVolumeClaim>(
        client_.resource<api::PersistentVolumeClaim>(), claim.metadata.namespace_,
        claim.metadata.name, [&](api::PersistentVolumeClaim& c) {
          return c.metadata.uid == claim.metadata.uid &&
                 c.metadata.annotations.erase(std::string(api::kAnnSelectedNode)) > 0;
        });
    if (!unselected.ok() && !api::IsNotFound(unselected.error())) {
      return ApiStatus(unselected.error());
    }
    return spec.status().code() == StatusCode::kInvalidArgument ? OkStatus() : spec.status();
  }
  api::PersistentVolume pv = volume::ProvisionedVolume(pv_name, *std::move(spec), claim, cls,
                                                       options_.provisioner->name());
  auto created = client_.resource<api::PersistentVolume>().Create(pv);
  if (!created.ok() && !api::IsAlreadyExists(created.error())) {
    if (Status s = options_.provisioner->Delete(pv, &cls); !s.ok()) {
      log::Warn("provisioner " + std::string(options_.provisioner->name()) + ": volume " +
                pv_name + " could not be removed after its PV was refused: " + s.message());
    }
    loop_.Event(ref, "Warning", "ProvisioningFailed",
          "failed to provision volume with StorageClass \"" + cls.metadata.name +
              "\": error saving PersistentVolume " + pv_name + ": " + created.error().message);
    return ApiStatus(created.error());
  }
  loop_.Event(ref, "Normal", "ProvisioningSucceeded", "Successfully provisioned volume " + pv_name);
  return OkStatus();
}

Status NodeLocalController::SyncVolume(const api::PersistentVolume& volume) {
  if (!VolumeIsMine(volume)) return OkStatus();
  const auto about = client::ReferenceTo(volume);
  auto cls = ClassOf(volume.spec.storage_class_name);
  if (Status s = options_.provisioner->Delete(volume, cls.get()); !s.ok()) {
    loop_.Event(about, "Warning", "VolumeFailedDelete", s.message());
    return s;
  }
  // The storage is gone: the object may go too, without the PV controller's finalizer, which
  // that controller leaves to whoever deletes the storage.
  auto released = client::Mutate<api::PersistentVolume>(
      client_.resource<api::PersistentVolume>(), "", volume.metadata.name,
      [&](api::PersistentVolume& v) {
        return v.metadata.uid == volume.metadata.uid &&
               std::erase(v.metadata.finalizers, api::kPVControllerFinalizer) > 0;
      });
  if (!released.ok() && !api::IsNotFound(released.error())) return ApiStatus(released.error());
  auto gone = client_.resource<api::PersistentVolume>().Delete("", volume.metadata.name);
  if (!gone.ok() && !api::IsNotFound(gone.error())) return ApiStatus(gone.error());
  log::Info("provisioner " + std::string(options_.provisioner->name()) + ": deleted volume " +
            volume.metadata.name);
  return OkStatus();
}

Status NodeLocalController::Start(std::chrono::milliseconds sync_timeout) {
  return loop_.Start(
      LoopHandlers{.claim_wanted = [this](const auto& c) { return ClaimIsMine(c); },
                   .volume_wanted = [this](const auto& v) { return VolumeIsMine(v); },
                   .sync_claim = [this](const auto& c) { return SyncClaim(c); },
                   .sync_volume = [this](const auto& v) { return SyncVolume(v); }},
      sync_timeout);
}

void NodeLocalController::Stop() { loop_.Stop(); }

}  // namespace kvol::controller::provisioner
