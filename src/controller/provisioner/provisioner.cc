#include "controller/provisioner/provisioner.h"

#include "api/api_error.h"
#include "api/well_known.h"
#include "base/log.h"
#include "client/worker.h"
#include "controller/provisioner/create_volume.h"
#include "controller/provisioner/data_source.h"
#include "controller/util/csi_secrets.h"
#include "controller/util/meta.h"
#include "controller/util/volume_node.h"
#include "metrics/storage_operations.h"
#include "volume/binding/matching.h"

namespace kvol::controller::provisioner {
namespace {

namespace pb = ::csi::v1;
using client::ApiStatus;

}  // namespace

Controller::Controller(client::Client& client, Options options)
    : client_(client),
      options_(std::move(options)),
      loop_(client, LoopOptions{.name = "csi-provisioner",
                                .thread_name = "csi-provisioner",
                                .component = "csi-provisioner_" + options_.node_name,
                                .workers = options_.workers,
                                .clock = options_.clock,
                                .informers = options_.informers,
                                .resync = options_.resync}) {}

Controller::~Controller() { Stop(); }

std::shared_ptr<const volume::plugins::CsiDriver> Controller::DriverFor(
    const api::PersistentVolumeClaim& claim) const {
  if (!claim.spec.volume_name.empty() || claim.metadata.deletion_timestamp) return nullptr;
  const std::string driver = Annotation(claim.metadata, api::kAnnStorageProvisioner);
  if (driver.empty()) return nullptr;
  const std::string selected = Annotation(claim.metadata, api::kAnnSelectedNode);
  if (selected.empty() ? !options_.central : selected != options_.node_name) return nullptr;
  return options_.drivers->Find(driver);
}

Status Controller::SyncClaim(const api::PersistentVolumeClaim& claim) {
  if (ReleasesClones(claim)) {
    ReleaseCloneSource(claim.metadata.namespace_, claim.metadata.name, "");
    return OkStatus();
  }
  auto driver = DriverFor(claim);
  if (!driver) return OkStatus();
  const std::string pv_name = "pvc-" + claim.metadata.uid;
  if (loop_.volumes()->Get("", pv_name)) return OkStatus();  // made; the PV controller binds
  auto cls = loop_.classes()->Get("", volume::binding::ClaimClass(claim));
  // OBSERVATION: without its class the PV controller has told the claim already.
  if (!cls || cls->provisioner != driver->name) return OkStatus();
  // A class that binds at once is provisioned without a node, by the central provisioner only.
  const bool delayed = cls->volume_binding_mode.value_or("Immediate") == "WaitForFirstConsumer";
  if (delayed && Annotation(claim.metadata, api::kAnnSelectedNode).empty()) return OkStatus();
  auto existing = client_.resource<api::PersistentVolume>().Get("", pv_name);
  if (existing.ok()) return OkStatus();
  if (!api::IsNotFound(existing.error())) return ApiStatus(existing.error());
  return Provision(claim, *cls, *driver);
}

Status Controller::Provision(const api::PersistentVolumeClaim& claim, const api::StorageClass& cls,
                             const volume::plugins::CsiDriver& driver) {
  const auto ref = client::ReferenceTo(claim);
  const std::string pv_name = "pvc-" + claim.metadata.uid;
  const DataSource source = DataSourceOf(claim);
  if (source.kind == SourceKind::kOther) {
    loop_.Event(ref, "Normal", "Provisioning",
                "Assuming an external populator will provision the volume");
    return OkStatus();
  }
  loop_.Event(ref, "Normal", "Provisioning",
        "External provisioner is provisioning volume for claim \"" + client::KeyOf(claim) + "\"");
  const std::string failed =
      "failed to provision volume with StorageClass \"" + cls.metadata.name + "\": ";
  // Errors in the class or claim wait for them to change (and for the resync); errors of the
  // cluster or the driver are retried with backoff.
  auto fail = [&](const Status& s) {
    loop_.Event(ref, "Warning", "ProvisioningFailed", failed + s.message());
    return s.code() == StatusCode::kInvalidArgument ? OkStatus() : s;
  };
  auto secrets = ResolveSecrets(cls, claim, pv_name);
  if (!secrets.ok()) return fail(secrets.status());
  auto provisioner_secret = controller::CsiSecretsOf(client_, secrets->provisioner);
  if (!provisioner_secret.ok()) return fail(provisioner_secret.status());
  std::optional<api::Node> node;
  if (const std::string selected = Annotation(claim.metadata, api::kAnnSelectedNode);
      !selected.empty()) {
    auto n = client_.resource<api::Node>().Get("", selected);
    if (!n.ok()) return fail(Status(ApiStatus(n.error()).code(), n.error().message));
    node = *n;
  }
  auto multi = driver.client->ControllerSupports(
      pb::ControllerServiceCapability::RPC::SINGLE_NODE_MULTI_WRITER);
  if (!multi.ok()) return fail(multi.status());
  std::optional<pb::VolumeContentSource> content_source;
  if (source.kind != SourceKind::kNone) {
    auto from = ContentSource(claim, cls, driver, source);
    if (!from.ok()) return fail(from.status());
    content_source = *std::move(from);
  }
  CreateVolumeInput in{.pv_name = pv_name,
                       .claim = &claim,
                       .storage_class = &cls,
                       .topology_keys = {},
                       .selected_node = node ? &*node : nullptr,
                       .single_node_multi_writer = *multi,
                       .secrets = *provisioner_secret,
                       .content_source = content_source ? &*content_source : nullptr};
  for (const auto& [key, value] : driver.topology) in.topology_keys.push_back(key);
  auto req = MakeCreateVolumeRequest(in);
  if (!req.ok()) return fail(req.status());
  metrics::OperationTimer timer(metrics::CsiPluginName(cls.provisioner), "volume_provision");
  auto created =
      driver.client->Call(&pb::Controller::Stub::CreateVolume, *req, options_.call_timeout);
  timer.Done(created.ok());
  if (!created.ok()) return fail(created.status());
  if (content_source && !created->volume().has_content_source()) {
    DeleteCreated(created->volume().volume_id(), *provisioner_secret, driver, claim);
    return fail(UnavailableError("volume content source missing"));
  }
  api::PersistentVolume pv = MakePersistentVolume(in, *secrets, created->volume());
  auto written = client_.resource<api::PersistentVolume>().Create(pv);
  if (!written.ok() && !api::IsAlreadyExists(written.error())) {
    // The volume goes again rather than leak; the next attempt makes it anew under its name.
    DeleteCreated(created->volume().volume_id(), *provisioner_secret, driver, claim);
    return fail(
        Status(ApiStatus(written.error()).code(),
               "error saving PersistentVolume " + pv_name + ": " + written.error().message));
  }
  loop_.Event(ref, "Normal", "ProvisioningSucceeded", "Successfully provisioned volume " + pv_name);
  if (options_.on_volumes_changed) options_.on_volumes_changed();
  if (source.kind == SourceKind::kClaim) {
    ReleaseCloneSource(claim.metadata.namespace_, source.name, claim.metadata.uid);
  }
  return OkStatus();
}

void Controller::DeleteCreated(const std::string& volume_id,
                               const std::map<std::string, std::string>& secrets,
                               const volume::plugins::CsiDriver& driver,
                               const api::PersistentVolumeClaim& claim) {
  pb::DeleteVolumeRequest del;
  del.set_volume_id(volume_id);
  for (const auto& [k, v] : secrets) (*del.mutable_secrets())[k] = v;
  auto deleted = driver.client->Call(&pb::Controller::Stub::DeleteVolume, del, options_.call_timeout);
  if (!deleted.ok()) {
    log::Warn("csi-provisioner: volume " + volume_id + " of claim " + client::KeyOf(claim) +
              " could not be deleted after it was refused: " + deleted.status().message());
  }
}

StatusOr<pb::VolumeContentSource> Controller::ContentSource(const api::PersistentVolumeClaim& claim,
                                                            const api::StorageClass& cls,
                                                            const volume::plugins::CsiDriver& driver,
                                                            const DataSource& source) {
  const bool snapshot = source.kind == SourceKind::kSnapshot;
  KVOL_ASSIGN_OR_RETURN(
      bool able, driver.client->ControllerSupports(
                     snapshot ? pb::ControllerServiceCapability::RPC::CREATE_DELETE_SNAPSHOT
                              : pb::ControllerServiceCapability::RPC::CLONE_VOLUME));
  if (!able) {
    return InvalidArgumentError(
        snapshot ? "CSI driver does not support snapshot restore: controller "
                   "CREATE_DELETE_SNAPSHOT capability is not reported"
                 : "CSI driver does not support clone operations: controller CLONE_VOLUME "
                   "capability is not reported");
  }
  KVOL_ASSIGN_OR_RETURN(auto from, ContentSourceFor(client_, claim, cls, source));
  if (!snapshot) {
    // The source claim stays until the clone is made.
    auto& claims = client_.resource<api::PersistentVolumeClaim>();
    auto src = claims.Get(claim.metadata.namespace_, source.name);
    if (!src.ok()) return ApiStatus(src.error());
    if (!HasFinalizer(src->metadata, kCloningProtectionFinalizer)) {
      src->metadata.finalizers.emplace_back(kCloningProtectionFinalizer);
      auto written = claims.Update(*src);
      if (!written.ok()) return ApiStatus(written.error());
    }
  }
  return from;
}

bool Controller::ReleasesClones(const api::PersistentVolumeClaim& claim) const {
  return claim.metadata.deletion_timestamp &&
         HasFinalizer(claim.metadata, kCloningProtectionFinalizer);
}

void Controller::ReleaseCloneSource(const std::string& ns, const std::string& source,
                                    const std::string& made_uid) {
  auto& claims = client_.resource<api::PersistentVolumeClaim>();
  auto all = claims.List(ns);
  if (!all.ok()) return;  // kept: the source's next sync lets it go
  for (const auto& other : all->items) {
    if (other.metadata.uid == made_uid || !other.spec.volume_name.empty() ||
        other.metadata.deletion_timestamp) {
      continue;
    }
    const DataSource s = DataSourceOf(other);
    if (s.kind == SourceKind::kClaim && s.name == source) return;  // another clone waits
  }
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto src = claims.Get(ns, source);
    if (!src.ok() || !HasFinalizer(src->metadata, kCloningProtectionFinalizer)) return;
    std::erase(src->metadata.finalizers, std::string(kCloningProtectionFinalizer));
    auto written = claims.Update(*src);
    if (written.ok() || !api::IsConflict(written.error())) return;
  }
}

Status Controller::SyncVolume(const api::PersistentVolume& volume) {
  if (!volume.spec.csi || volume.status.phase != api::kVolumeReleased ||
      volume.spec.persistent_volume_reclaim_policy != "Delete" ||
      volume.metadata.deletion_timestamp) {
    return OkStatus();
  }
  const std::string by = Annotation(volume.metadata, api::kAnnDynamicallyProvisioned);
  auto driver = options_.drivers->Find(by);
  if (!driver || by != volume.spec.csi->driver || !VolumeServedBy(client_, volume, options_.node_name, options_.central)) return OkStatus();
  std::optional<api::SecretReference> ref;
  const std::string secret_name = Annotation(volume.metadata, kAnnDeletionSecretName);
  if (!secret_name.empty()) {
    ref = api::SecretReference{
        .name = secret_name,
        .namespace_ = Annotation(volume.metadata, kAnnDeletionSecretNamespace)};
  }
  const auto about = client::ReferenceTo(volume);
  auto secrets = controller::CsiSecretsOf(client_, ref);
  if (!secrets.ok()) {
    loop_.Event(about, "Warning", "VolumeFailedDelete", secrets.status().message());
    return secrets.status();
  }
  pb::DeleteVolumeRequest req;
  req.set_volume_id(volume.spec.csi->volume_handle);
  for (const auto& [k, v] : *secrets) (*req.mutable_secrets())[k] = v;
  metrics::OperationTimer timer(metrics::CsiPluginName(volume.spec.csi->driver), "volume_delete");
  auto deleted =
      driver->client->Call(&pb::Controller::Stub::DeleteVolume, req, options_.call_timeout);
  timer.Done(deleted.ok());
  if (!deleted.ok()) {
    loop_.Event(about, "Warning", "VolumeFailedDelete", deleted.status().message());
    return deleted.status();
  }
  auto gone = client_.resource<api::PersistentVolume>().Delete("", volume.metadata.name);
  if (!gone.ok() && !api::IsNotFound(gone.error())) return ApiStatus(gone.error());
  log::Info("csi-provisioner: deleted volume " + volume.metadata.name + " (" +
            volume.spec.csi->volume_handle + ")");
  if (options_.on_volumes_changed) options_.on_volumes_changed();
  return OkStatus();
}

bool Controller::VolumeWanted(const api::PersistentVolume& volume) const {
  return volume.status.phase == api::kVolumeReleased && volume.spec.csi;
}

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  KVOL_RETURN_IF_ERROR(loop_.Start(
      LoopHandlers{
          .claim_wanted = [this](const auto& c) { return DriverFor(c) != nullptr || ReleasesClones(c); },
          .volume_wanted = [this](const auto& v) { return VolumeWanted(v); },
          .sync_claim = [this](const auto& c) { return SyncClaim(c); },
          .sync_volume = [this](const auto& v) { return SyncVolume(v); }},
      sync_timeout));
  // A driver that registers serves what waited for it at once.
  options_.drivers->OnAdd([kick = loop_.Kicker()](const std::string&) { kick(); });
  return OkStatus();
}

void Controller::Stop() { loop_.Stop(); }

}  // namespace kvol::controller::provisioner
