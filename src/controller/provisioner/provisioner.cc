#include "controller/provisioner/provisioner.h"

#include "api/api_error.h"
#include "api/well_known.h"
#include "base/log.h"
#include "base/thread.h"
#include "client/worker.h"
#include "controller/provisioner/create_volume.h"
#include "controller/util/csi_secrets.h"
#include "controller/util/meta.h"
#include "controller/util/volume_node.h"
#include "volume/binding/matching.h"

namespace kvol::controller::provisioner {
namespace {

namespace pb = ::csi::v1;
using client::ApiStatus;

constexpr std::string_view kClaimPrefix = "claim:";
constexpr std::string_view kVolumePrefix = "volume:";

}  // namespace

Controller::Controller(client::Client& client, Options options)
    : client_(client), options_(std::move(options)) {}

Controller::~Controller() { Stop(); }

void Controller::Event(const api::ObjectReference& about, std::string_view type,
                       std::string_view reason, std::string message) {
  if (recorder_) recorder_->Record(about, type, reason, std::move(message));
}

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
  auto driver = DriverFor(claim);
  if (!driver) return OkStatus();
  const std::string pv_name = "pvc-" + claim.metadata.uid;
  if (volumes_->Get("", pv_name)) return OkStatus();  // made; the PV controller binds it
  auto cls = classes_->Get("", volume::binding::ClaimClass(claim));
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
  Event(ref, "Normal", "Provisioning",
        "External provisioner is provisioning volume for claim \"" + client::KeyOf(claim) + "\"");
  const std::string failed =
      "failed to provision volume with StorageClass \"" + cls.metadata.name + "\": ";
  // Errors in the class or claim wait for them to change (and for the resync); errors of the
  // cluster or the driver are retried with backoff.
  auto fail = [&](const Status& s) {
    Event(ref, "Warning", "ProvisioningFailed", failed + s.message());
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
  CreateVolumeInput in{.pv_name = pv_name,
                       .claim = &claim,
                       .storage_class = &cls,
                       .topology_keys = {},
                       .selected_node = node ? &*node : nullptr,
                       .single_node_multi_writer = *multi,
                       .secrets = *provisioner_secret};
  for (const auto& [key, value] : driver.topology) in.topology_keys.push_back(key);
  auto req = MakeCreateVolumeRequest(in);
  if (!req.ok()) return fail(req.status());
  auto created =
      driver.client->Call(&pb::Controller::Stub::CreateVolume, *req, options_.call_timeout);
  if (!created.ok()) return fail(created.status());
  api::PersistentVolume pv = MakePersistentVolume(in, *secrets, created->volume());
  auto written = client_.resource<api::PersistentVolume>().Create(pv);
  if (!written.ok() && !api::IsAlreadyExists(written.error())) {
    // The volume goes again rather than leak; the next attempt makes it anew under its name.
    pb::DeleteVolumeRequest del;
    del.set_volume_id(created->volume().volume_id());
    for (const auto& [k, v] : *provisioner_secret) (*del.mutable_secrets())[k] = v;
    auto deleted =
        driver.client->Call(&pb::Controller::Stub::DeleteVolume, del, options_.call_timeout);
    if (!deleted.ok()) {
      log::Warn("csi-provisioner: volume " + created->volume().volume_id() + " of claim " +
                client::KeyOf(claim) +
                " could not be deleted after its PV was refused: " + deleted.status().message());
    }
    return fail(
        Status(ApiStatus(written.error()).code(),
               "error saving PersistentVolume " + pv_name + ": " + written.error().message));
  }
  Event(ref, "Normal", "ProvisioningSucceeded", "Successfully provisioned volume " + pv_name);
  if (options_.on_volumes_changed) options_.on_volumes_changed();
  return OkStatus();
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
    Event(about, "Warning", "VolumeFailedDelete", secrets.status().message());
    return secrets.status();
  }
  pb::DeleteVolumeRequest req;
  req.set_volume_id(volume.spec.csi->volume_handle);
  for (const auto& [k, v] : *secrets) (*req.mutable_secrets())[k] = v;
  auto deleted =
      driver->client->Call(&pb::Controller::Stub::DeleteVolume, req, options_.call_timeout);
  if (!deleted.ok()) {
    Event(about, "Warning", "VolumeFailedDelete", deleted.status().message());
    return deleted.status();
  }
  auto gone = client_.resource<api::PersistentVolume>().Delete("", volume.metadata.name);
  if (!gone.ok() && !api::IsNotFound(gone.error())) return ApiStatus(gone.error());
  log::Info("csi-provisioner: deleted volume " + volume.metadata.name + " (" +
            volume.spec.csi->volume_handle + ")");
  if (options_.on_volumes_changed) options_.on_volumes_changed();
  return OkStatus();
}

void Controller::EnqueueAll() {
  for (const auto& c : claims_->List()) {
    if (DriverFor(*c)) queue_->Add(std::string(kClaimPrefix) + client::KeyOf(*c));
  }
  for (const auto& v : volumes_->List()) {
    if (v->status.phase == api::kVolumeReleased && v->spec.csi) {
      queue_->Add(std::string(kVolumePrefix) + v->metadata.name);
    }
  }
}

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  recorder_ = std::make_unique<client::EventRecorder>(
      client_.resource<api::Event>(),
      client::EventRecorderOptions{.component = "csi-provisioner_" + options_.node_name},
      *options_.clock);
  queue_ = std::make_unique<client::WorkQueue>(*options_.clock);
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  auto on_claim = [this](const std::shared_ptr<const api::PersistentVolumeClaim>& c) {
    if (DriverFor(*c)) queue_->Add(std::string(kClaimPrefix) + client::KeyOf(*c));
  };
  claims_ = &informers_->Handle<api::PersistentVolumeClaim>(
      {.on_add = on_claim, .on_update = [on_claim](const auto&, const auto& c) { on_claim(c); }});
  auto on_volume = [this](const std::shared_ptr<const api::PersistentVolume>& v) {
    if (v->status.phase == api::kVolumeReleased && v->spec.csi) {
      queue_->Add(std::string(kVolumePrefix) + v->metadata.name);
    }
  };
  volumes_ = &informers_->Handle<api::PersistentVolume>(
      {.on_add = on_volume,
       .on_update = [on_volume](const auto&, const auto& v) { on_volume(v); }});
  classes_ = &informers_->Get<api::StorageClass>();
  classes_->Start();
  claims_->Start();
  volumes_->Start();
  if (!classes_->WaitForSync(sync_timeout) || !claims_->WaitForSync(sync_timeout) ||
      !volumes_->WaitForSync(sync_timeout)) {
    Stop();
    return UnavailableError("csi-provisioner: caches did not fill in time");
  }
  // A driver that registers serves what waited for it at once.
  options_.drivers->OnAdd([kick = kick_](const std::string&) {
    std::lock_guard lock(kick->mu);
    kick->cv.notify_all();
  });
  auto sync = [this](const std::string& key) -> Status {
    if (key.rfind(kClaimPrefix, 0) == 0) {
      auto [ns, name] = client::SplitKey(key.substr(kClaimPrefix.size()));
      auto c = claims_->Get(ns, name);
      return c ? SyncClaim(*c) : OkStatus();
    }
    auto v = volumes_->Get("", key.substr(kVolumePrefix.size()));
    return v ? SyncVolume(*v) : OkStatus();
  };
  for (int i = 0; i < options_.workers; ++i) {
    threads_.emplace_back([this, sync] {
      SetThreadName("csi-provisioner");
      client::RunWorker(*queue_, sync, "csi-provisioner");
    });
  }
  threads_.emplace_back([this] {
    SetThreadName("csi-prov-resync");
    std::unique_lock lock(kick_->mu);
    while (!kick_->stopping) {
      lock.unlock();
      EnqueueAll();
      lock.lock();
      if (kick_->stopping) break;
      options_.clock->WaitFor(kick_->cv, lock, options_.resync);
    }
  });
  return OkStatus();
}

void Controller::Stop() {
  {
    std::lock_guard lock(kick_->mu);
    kick_->stopping = true;
  }
  kick_->cv.notify_all();
  if (informers_) informers_->Stop();
  if (queue_) queue_->ShutDown();
  for (auto& t : threads_) t.join();
  threads_.clear();
  if (recorder_) recorder_->Flush(std::chrono::seconds(2));
}

}  // namespace kvol::controller::provisioner
