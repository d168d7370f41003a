#include "controller/pv/controller.h"

#include <algorithm>
#include <charconv>

#include "api/well_known.h"
#include "base/thread.h"
#include "controller/util/meta.h"
#include "client/worker.h"

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

bool HasAnnotation(const api::ObjectMeta& m, std::string_view key) {
  return m.annotations.count(std::string(key)) > 0;
}

// resourceVersions are the store's revisions: decimal integers.
int64_t Version(const api::ObjectMeta& m) {
  int64_t v = 0;
  const auto& s = m.resource_version;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

// "a,b,c", as Kubernetes lists pods in its events.
std::string CommaJoined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

// The key of an object in the view and the queues: a volume's name, a claim's namespace/name.
std::string ViewKey(const PersistentVolume& v) { return v.metadata.name; }
std::string ViewKey(const PersistentVolumeClaim& c) { return client::KeyOf(c); }

// Whether the view should keep `cur` rather than take `next`: it is newer, or the same version
// (objects made without a resourceVersion, as tests make them, always replace each other).
bool KeepCurrent(const api::ObjectMeta& cur, const api::ObjectMeta& next) {
  const int64_t have = Version(cur), got = Version(next);
  return have > got || (have == got && got != 0);
}

}  // namespace

Controller::Controller(client::Client& client, EventSink events, ControllerOptions options)
    : client_(client), events_(std::move(events)), options_(options) {}

Controller::~Controller() { Stop(); }

template <class T>
void Controller::Event(const T& obj, std::string_view type, std::string_view reason,
                       std::string message) {
  if (events_) events_(client::ReferenceTo(obj), type, reason, std::move(message));
}

// ---- the view ------------------------------------------------------------------------------

void Controller::Remember(std::shared_ptr<const PersistentVolume> v) { StoreVolume(std::move(v)); }
void Controller::Remember(ClaimPtr c) { StoreClaim(std::move(c)); }

template <class T>
StatusOr<T> Controller::Write(T next, bool status) {
  KVOL_ASSIGN_OR_RETURN(auto written, WriteParts(std::move(next), !status, status));
  return *written;
}

template <class T>
FlatStringMap<Controller::InFlight>& Controller::InFlightOf() {
  if constexpr (std::is_same_v<T, PersistentVolume>) {
    return volumes_in_flight_;
  } else {
    return claims_in_flight_;
  }
}

template <class T>
void Controller::BeginWrites(const std::vector<std::string>& keys) {
  std::lock_guard lock(in_flight_mu_);
  auto& in_flight = InFlightOf<T>();
  for (const auto& key : keys) ++in_flight[key].writes;
}

template <class T>
void Controller::EndWrites(const std::vector<std::string>& keys,
                           const std::vector<int64_t>& written) {
  std::vector<size_t> waited;
  {
    std::lock_guard lock(in_flight_mu_);
    auto& in_flight = InFlightOf<T>();
    for (size_t i = 0; i < keys.size(); ++i) {
      auto it = in_flight.find(keys[i]);
      if (it == in_flight.end() || --it->second.writes > 0) continue;
      if (it->second.updated) waited.push_back(i);
      in_flight.erase(it);
    }
  }
  for (size_t i : waited) {
    // The view holds the newest version seen: the one written (its echo, nothing new) or a
    // later one (news).
    int64_t have = 0;
    if constexpr (std::is_same_v<T, PersistentVolume>) {
      if (auto v = volumes_.Get(keys[i])) have = Version(v->metadata);
      if (written[i] == 0 || have != written[i]) QueueVolume(keys[i]);
    } else {
      if (auto c = GetClaim(keys[i])) have = Version(c->metadata);
      if (written[i] == 0 || have != written[i]) QueueClaim(keys[i]);
    }
  }
}

template <class T>
bool Controller::DeferWhileWriting(const T& obj) {
  std::lock_guard lock(in_flight_mu_);
  auto& in_flight = InFlightOf<T>();
  auto it = in_flight.find(ViewKey(obj));
  if (it == in_flight.end()) return false;
  it->second.updated = true;
  return true;
}

void Controller::QueueOn(client::WorkQueue* queue, std::vector<std::string>& held,
                         const std::string& key) {
  if (queue) {
    queue->Add(key);
    return;
  }
  std::lock_guard lock(mu_);
  held.push_back(key);
}

std::vector<std::string> Controller::TakeHeld(std::vector<std::string>& held) {
  std::lock_guard lock(mu_);
  return std::exchange(held, {});
}

void Controller::QueueVolume(const std::string& name) {
  QueueOn(volume_queue_.get(), queued_volumes_, name);
}

std::vector<std::string> Controller::TakeQueuedVolumes() { return TakeHeld(queued_volumes_); }

template <class T>
StatusOr<std::shared_ptr<const T>> Controller::WriteParts(T next, bool main, bool status) {
  const std::vector<std::string> keys{ViewKey(next)};
  BeginWrites<T>(keys);
  auto write = [&]() -> StatusOr<std::shared_ptr<const T>> {
    auto& r = client_.resource<T>();
    if (main && status && !r.writes_with_status()) {
      // Two requests; a failure between them leaves the first written.
      auto first = r.UpdateShared(next, true, false);
      if (!first.ok()) return ApiStatus(first.error());
      Remember(*first);
      T with_status = **first;
      with_status.status = std::move(next.status);
      next = std::move(with_status);
      main = false;
    }
    auto written = r.UpdateShared(std::move(next), main, status);
    if (!written.ok()) return ApiStatus(written.error());
    Remember(*written);
    return *std::move(written);
  };
  auto written = write();
  EndWrites<T>(keys, {written.ok() ? Version((*written)->metadata) : 0});
  return written;
}

template <class T>
std::vector<StatusOr<std::shared_ptr<const T>>> Controller::WriteMany(
    std::vector<T> objs, const std::vector<std::pair<bool, bool>>& parts) {
  std::vector<StatusOr<std::shared_ptr<const T>>> out(objs.size(),
                                                      Status(StatusCode::kUnknown, "not written"));
  auto& r = client_.resource<T>();
  // One request per kind of write (object, status, both): nearly always one.
  for (auto [main, status] :
       {std::pair{true, true}, std::pair{true, false}, std::pair{false, true}}) {
    std::vector<T> group;
    std::vector<size_t> which;
    group.reserve(objs.size());
    for (size_t i = 0; i < objs.size(); ++i) {
      if (parts[i] != std::pair{main, status}) continue;
      group.push_back(std::move(objs[i]));
      which.push_back(i);
    }
    if (group.empty()) continue;
    if (main && status && !r.writes_with_status()) {
      for (size_t j = 0; j < group.size(); ++j) {
        out[which[j]] = WriteParts(std::move(group[j]), main, status);
      }
      continue;
    }
    std::vector<std::string> keys;
    keys.reserve(group.size());
    for (const T& obj : group) keys.push_back(ViewKey(obj));
    BeginWrites<T>(keys);
    auto written = Remembered<T>(keys, r.UpdateSharedMany(std::move(group), main, status));
    for (size_t j = 0; j < written.size(); ++j) out[which[j]] = std::move(written[j]);
  }
  return out;
}

void Controller::StoreVolume(const PersistentVolume& volume) {
  StoreVolume(std::make_shared<const PersistentVolume>(volume));
}

bool Controller::StoreVolume(std::shared_ptr<const PersistentVolume> volume) {
  auto cur = volumes_.Get(volume->metadata.name);
  // The very object the view holds (in process, the event of the controller's own write), or
  // the same version of it: nothing to index again.
  if (cur == volume) return false;
  if (cur && KeepCurrent(cur->metadata, volume->metadata)) return false;
  volumes_.Upsert(std::move(volume));
  return true;
}

// Unless news, only what the binding writes leave is left alone: Bound, not being deleted.
bool Controller::UpdateNeedsSync(bool stored, const PersistentVolume& v) {
  return stored || v.status.phase != "Bound" || !v.spec.claim_ref ||
         v.spec.claim_ref->uid.empty() || v.metadata.deletion_timestamp;
}

bool Controller::UpdateNeedsSync(bool stored, const PersistentVolumeClaim& c) {
  return stored || c.status.phase != "Bound" || c.spec.volume_name.empty() ||
         !HasAnnotation(c.metadata, api::kAnnBindCompleted) || c.metadata.deletion_timestamp;
}

bool Controller::OnUpdate(std::shared_ptr<const PersistentVolume> volume) {
  const bool stored = StoreVolume(volume);
  if (!UpdateNeedsSync(stored, *volume)) return false;
  return UpdateNeedsSync(false, *volume) || !DeferWhileWriting(*volume);
}

bool Controller::OnUpdate(ClaimPtr claim) {
  const bool stored = StoreClaim(claim);
  if (!UpdateNeedsSync(stored, *claim)) return false;
  return UpdateNeedsSync(false, *claim) || !DeferWhileWriting(*claim);
}

void Controller::StoreClaim(const PersistentVolumeClaim& claim) {
  StoreClaim(std::make_shared<const PersistentVolumeClaim>(claim));
}

bool Controller::StoreClaim(ClaimPtr claim) {
  thread_local std::string key;
  client::KeyInto(key, *claim);
  std::lock_guard lock(mu_);
  auto& slot = claims_.try_emplace(std::string_view(key)).first->second;
  if (slot == claim) return false;
  if (slot && KeepCurrent(slot->metadata, claim->metadata)) return false;
  slot = std::move(claim);
  return true;
}

void Controller::StoreClass(const api::StorageClass& cls) {
  std::lock_guard lock(mu_);
  classes_[cls.metadata.name] = std::make_shared<const api::StorageClass>(cls);
}

void Controller::StorePod(const api::Pod& pod) {
  if (pod.metadata.deletion_timestamp && pod.metadata.finalizers.empty()) {
    pods_.Remove(pod.metadata.namespace_, pod.metadata.name);
  } else {
    pods_.Upsert(pod);
  }
}

void Controller::ForgetVolume(const std::string& name) { volumes_.Remove(name); }

void Controller::ForgetClaim(const std::string& key) {
  std::lock_guard lock(mu_);
  claims_.erase(key);
}

Controller::ClaimPtr Controller::GetClaim(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = claims_.find(key);
  return it == claims_.end() ? nullptr : it->second;
}

std::shared_ptr<const api::StorageClass> Controller::GetClass(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = classes_.find(name);
  return it == classes_.end() ? nullptr : it->second;
}

std::vector<std::string> Controller::UnscheduledPodsUsing(const PersistentVolumeClaim& claim) const {
  std::vector<std::string> names;
  for (const auto& pod : pods_.PodsUsing(client::KeyOf(claim))) {
    if (pod->spec.node_name.empty()) names.push_back(pod->metadata.name);
  }
  return names;
}

void Controller::QueueClaim(const std::string& key) {
  QueueOn(claim_queue_.get(), queued_claims_, key);
}

std::vector<std::string> Controller::TakeQueuedClaims() { return TakeHeld(queued_claims_); }

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

void Controller::WriteBindings(std::vector<PendingBind>& binds, std::vector<Status>& results) {
  // The volumes' writes (claimRef and phase) and the claims' (volumeName and status). Where
  // the client can (in process) they are one store write, each claim's made only if its
  // volume's is. Elsewhere the volumes first, then the claims whose volume is bound, each kind
  // in one request where the client can: a crash in between is finished by the next sync.
  // Objects already bound (most syncs of a bound claim) are not copied at all. What a claim's
  // binding takes from its volume (name, capacity, access modes) the volume's write leaves as
  // it is.
  client::VolumeClaimUpdates u;
  std::vector<size_t> volume_of, claim_of;  // the bind each write is for
  std::vector<int> volume_write(binds.size(), -1);
  u.volumes.reserve(binds.size());
  for (size_t i = 0; i < binds.size(); ++i) {
    const PendingBind& b = binds[i];
    if (VolumeBindingDone(*b.volume, *b.claim)) continue;
    PersistentVolume v = *b.volume;
    const bool spec = SetClaimRef(v, *b.claim);
    const bool status = SetVolumePhase(v, "Bound", {});
    if (!spec && !status) continue;
    volume_write[i] = static_cast<int>(u.volumes.size());
    u.volumes.push_back(std::move(v));
    u.volume_parts.emplace_back(spec, status);
    volume_of.push_back(i);
  }
  u.claims.reserve(binds.size());
  for (size_t i = 0; i < binds.size(); ++i) {
    const PendingBind& b = binds[i];
    if (ClaimBindingDone(*b.claim, *b.volume)) continue;
    PersistentVolumeClaim c = *b.claim;
    const bool spec = SetVolumeName(c, *b.volume);
    auto status = SetClaimStatus(c, "Bound", b.volume.get());
    if (!status.ok()) {
      results[b.slot] = status.status();
      continue;
    }
    if (!spec && !*status) continue;
    u.claims.push_back(std::move(c));
    u.claim_parts.emplace_back(spec, *status);
    u.claim_after.push_back(volume_write[i]);
    claim_of.push_back(i);
  }

  std::vector<StatusOr<VolumePtr>> volumes_written;
  std::vector<StatusOr<ClaimPtr>> claims_written;
  if (!WriteTogether(u, volumes_written, claims_written)) {
    volumes_written = WriteMany(std::move(u.volumes), u.volume_parts);
    // The claims whose volume's write failed are not written.
    std::vector<bool> failed(binds.size(), false);
    for (size_t j = 0; j < volumes_written.size(); ++j) {
      failed[volume_of[j]] = !volumes_written[j].ok();
    }
    std::vector<PersistentVolumeClaim> claims;
    std::vector<std::pair<bool, bool>> parts;
    std::vector<size_t> which;
    for (size_t j = 0; j < u.claims.size(); ++j) {
      if (failed[claim_of[j]]) continue;
      claims.push_back(std::move(u.claims[j]));
      parts.push_back(u.claim_parts[j]);
      which.push_back(j);
    }
    auto written = WriteMany(std::move(claims), parts);
    claims_written.assign(claim_of.size(), Status(StatusCode::kAborted, "volume not bound"));
    for (size_t n = 0; n < written.size(); ++n) claims_written[which[n]] = std::move(written[n]);
  }
  // A failed volume write is its claim's result; else a failed claim write.
  for (size_t j = 0; j < claims_written.size(); ++j) {
    if (!claims_written[j].ok()) results[binds[claim_of[j]].slot] = claims_written[j].status();
  }
  for (size_t j = 0; j < volumes_written.size(); ++j) {
    if (!volumes_written[j].ok()) results[binds[volume_of[j]].slot] = volumes_written[j].status();
  }
  for (const PendingBind& b : binds) {
    if (b.reserved) volumes_.Unreserve(b.volume->metadata.name);
  }
}

bool Controller::WriteTogether(client::VolumeClaimUpdates& u,
                               std::vector<StatusOr<VolumePtr>>& volumes,
                               std::vector<StatusOr<ClaimPtr>>& claims) {
  // One kind only: nothing to order.
  if (!client_.writes_volumes_with_claims() || u.volumes.empty() || u.claims.empty()) {
    return false;
  }
  std::vector<std::string> volume_keys, claim_keys;
  volume_keys.reserve(u.volumes.size());
  for (const auto& v : u.volumes) volume_keys.push_back(ViewKey(v));
  claim_keys.reserve(u.claims.size());
  for (const auto& c : u.claims) claim_keys.push_back(ViewKey(c));
  BeginWrites<PersistentVolume>(volume_keys);
  BeginWrites<PersistentVolumeClaim>(claim_keys);
  auto written = client_.UpdateVolumesThenClaims(u);
  volumes = Remembered<PersistentVolume>(volume_keys, std::move(written.volumes));
  claims = Remembered<PersistentVolumeClaim>(claim_keys, std::move(written.claims));
  return true;
}

template <class T>
std::vector<StatusOr<std::shared_ptr<const T>>> Controller::Remembered(
    const std::vector<std::string>& keys, std::vector<api::ApiOr<std::shared_ptr<const T>>> written) {
  std::vector<StatusOr<std::shared_ptr<const T>>> out;
  out.reserve(written.size());
  std::vector<int64_t> versions(keys.size(), 0);
  for (size_t j = 0; j < written.size(); ++j) {
    if (!written[j].ok()) {
      out.push_back(ApiStatus(written[j].error()));
      continue;
    }
    Remember(*written[j]);
    versions[j] = Version((*written[j])->metadata);
    out.push_back(*std::move(written[j]));
  }
  EndWrites<T>(keys, versions);
  return out;
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
      const bool is_default = (it != a.end() && it->second == "true") ||
                              (beta != a.end() && beta->second == "true");
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
    Event(claim, "Normal", "WaitForPodScheduled", "waiting for pod " + pods[0] + " to be scheduled");
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
  Event(current, "Normal", "ExternalProvisioning",
        "waiting for a volume to be created, either by external provisioner \"" + provisioner +
            "\" or manually created by system administrator");
  return OkStatus();
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
      Event(claim, "Warning", "ProvisioningFailed", "Failed to get target node: " + n.error().message);
      return api::IsNotFound(n.error()) ? OkStatus() : ApiStatus(n.error());
    }
    node = *n;
  }
  volume::ProvisionRequest req{pv_name, &claim, &cls, node ? &*node : nullptr};
  auto spec = provisioner.Provision(req);
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
  PersistentVolume pv;
  pv.metadata.name = pv_name;
  pv.metadata.annotations[std::string(api::kAnnBoundByController)] = "yes";
  pv.metadata.annotations[std::string(api::kAnnDynamicallyProvisioned)] = std::string(provisioner.name());
  pv.spec = *std::move(spec);
  pv.spec.storage_class_name = cls.metadata.name;
  pv.spec.persistent_volume_reclaim_policy = cls.reclaim_policy.value_or("Delete");
  pv.spec.mount_options = cls.mount_options;
  pv.spec.claim_ref = client::ReferenceTo(claim);
  if (pv.spec.persistent_volume_reclaim_policy == "Delete") {
    pv.metadata.finalizers.emplace_back(api::kPVControllerFinalizer);
  }
  auto created = client_.resource<PersistentVolume>().CreateShared(pv);
  if (!created.ok() && !api::IsAlreadyExists(created.error())) {
    Event(claim, "Warning", "ProvisioningFailed",
          "Error creating provisioned PV object for claim " + client::KeyOf(claim) + ": " +
              created.error().message + ". Deleting the volume.");
    if (Status s = provisioner.Delete(pv, &cls); !s.ok()) {
      Event(claim, "Warning", "ProvisioningCleanupFailed",
            "Error cleaning provisioned volume for claim " + client::KeyOf(claim) + ": " + s.message() +
                ". Please delete manually.");
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
    return UpdateClaimStatus(claim, "Pending", nullptr).status();
  }

  // The claim asks for one volume by name.
  VolumePtr volume = volumes_.Get(claim.spec.volume_name);
  if (!volume) {
    // Not there (yet): stay Pending and look again at the next sync.
    return UpdateClaimStatus(claim, "Pending", nullptr).status();
  }
  if (!volume->spec.claim_ref) {
    if (auto why = CheckVolumeSatisfiesClaim(*volume, claim)) {
      Event(claim, "Warning", "VolumeMismatch",
            "Cannot bind to requested volume \"" + volume->metadata.name + "\": " + *why);
      return UpdateClaimStatus(claim, "Pending", nullptr).status();
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
    return FailedPreconditionError("invalid binding of claim \"" + client::KeyOf(claim) +
                                   "\" to volume \"" + claim.spec.volume_name +
                                   "\": volume already claimed by \"" + ClaimRefKey(*volume) + "\"");
  }
  return UpdateClaimStatus(claim, "Pending", nullptr).status();
}

Status Controller::SyncBoundClaim(const PersistentVolumeClaim& claim, Deferral* defer) {
  if (claim.spec.volume_name.empty()) {
    return UpdateClaimStatusWithEvent(
        claim, "Lost", "Warning", "ClaimLost",
        "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!").status();
  }
  VolumePtr volume = volumes_.Get(claim.spec.volume_name);
  if (!volume) {
    return UpdateClaimStatusWithEvent(
        claim, "Lost", "Warning", "ClaimLost",
        "Bound claim has lost its PersistentVolume. Data on the volume is lost!").status();
  }
  if (!volume->spec.claim_ref || volume->spec.claim_ref->uid == claim.metadata.uid) {
    // Unbound volume (or our own write not seen yet), or all is well: Bind sets what is
    // missing and writes nothing when everything is in place.
    return BindOrDefer(volume, claim, false, defer);
  }
  return UpdateClaimStatusWithEvent(
      claim, "Lost", "Warning", "ClaimMisbound",
      "Two claims are bound to the same volume, this one is bound incorrectly").status();
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
         ref->uid == claim.metadata.uid && volume.status.phase == "Bound";
}

bool Controller::ClaimBindingDone(const PersistentVolumeClaim& claim,
                                  const PersistentVolume& volume) {
  // What SetVolumeName and SetClaimStatus(Bound) would leave unchanged.
  return claim.spec.volume_name == volume.metadata.name &&
         HasAnnotation(claim.metadata, api::kAnnBindCompleted) && claim.status.phase == "Bound" &&
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
    return UpdateVolumePhaseOrDefer(volume, "Available", batch);
  }
  if (volume.spec.claim_ref->uid.empty()) {
    // Reserved for a claim that has not bound yet: the claim sync binds it.
    return UpdateVolumePhaseOrDefer(volume, "Available", batch);
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
    return UpdateVolumePhaseOrDefer(volume, "Bound", batch);
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
  if (volume.status.phase == "Released" || volume.status.phase == "Failed") {
    return ReclaimVolume(volume);
  }
  PersistentVolume next = volume;
  SetVolumePhase(next, "Released", {});
  KVOL_ASSIGN_OR_RETURN(auto released, WriteParts(std::move(next), false, true));
  return ReclaimVolume(*released);
}

StatusOr<Controller::ClaimPtr> Controller::FindClaimOfVolume(const PersistentVolume& volume) {
  const auto& ref = *volume.spec.claim_ref;
  ClaimPtr claim = GetClaim(ref.namespace_ + "/" + ref.name);
  if (!claim && volume.status.phase != "Released" && volume.status.phase != "Failed") {
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

Status Controller::UpdateVolumePhaseOrDefer(const PersistentVolume& volume,
                                            std::string_view phase, PhaseBatch* batch) {
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
  return UpdateVolumePhase(written, "Available");
}

Status Controller::ReclaimVolume(const PersistentVolume& volume) {
  const std::string& policy = volume.spec.persistent_volume_reclaim_policy;
  if (policy == "Retain") return OkStatus();  // Released, and kept for its owner
  if (policy == "Delete") return DeleteVolume(volume);
  if (policy == "Recycle") return RecycleVolume(volume);
  return UpdateVolumePhaseWithEvent(volume, "Failed", "Warning", "VolumeUnknownReclaimPolicy",
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
    return UpdateVolumePhaseWithEvent(
        volume, "Failed", "Warning", "VolumeFailedDelete",
        "error getting deleter volume plugin for volume \"" + volume.metadata.name +
            "\": no deletable volume plugin matched");
  }
  auto cls = GetClass(VolumeClass(volume));
  if (Status s = provisioner->Delete(volume, cls.get()); !s.ok()) {
    // Failed, visibly; every later sync tries again.
    Status failed = UpdateVolumePhaseWithEvent(volume, "Failed", "Warning", "VolumeFailedDelete",
                                               s.message());
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
    return UpdateVolumePhaseWithEvent(volume, "Failed", "Warning", "VolumeFailedRecycle",
                                        "No recycler plugin found for the volume!");
  }
  if (Status s = volume::ScrubDirectory(volume.spec.host_path->path, options_.recycle_timeout);
      !s.ok()) {
    return UpdateVolumePhaseWithEvent(volume, "Failed", "Warning", "VolumeFailedRecycle",
                                             "Recycle failed: " + s.message());
  }
  Event(volume, "Normal", "VolumeRecycled", "Volume recycled");
  return UnbindVolume(volume);
}

// ---- running -------------------------------------------------------------------------------

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  client::WorkQueueOptions qo;
  claim_queue_ = std::make_unique<client::WorkQueue>(*options_.clock, qo);
  volume_queue_ = std::make_unique<client::WorkQueue>(*options_.clock, qo);
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  volume_informer_ = &informers_->Handle<PersistentVolume>(
      {.on_add = [this](const auto& v) { StoreVolume(v); volume_queue_->Add(v->metadata.name); },
       .on_update = [this](const auto&, const auto& v) {
         if (OnUpdate(v)) volume_queue_->Add(v->metadata.name);
       },
       .on_delete = [this](const auto& v) {
         ForgetVolume(v->metadata.name);
         // Its claim, if any, now has a missing volume.
         if (v->spec.claim_ref) claim_queue_->Add(ClaimRefKey(*v));
       }});
  claim_informer_ = &informers_->Handle<PersistentVolumeClaim>(
      {.on_add = [this](const auto& c) { StoreClaim(c); claim_queue_->Add(client::KeyOf(*c)); },
       .on_update = [this](const auto&, const auto& c) {
         if (OnUpdate(c)) claim_queue_->Add(client::KeyOf(*c));
       },
       .on_delete = [this](const auto& c) {
         ForgetClaim(client::KeyOf(*c));
         // Its volume is released.
         if (!c->spec.volume_name.empty()) volume_queue_->Add(c->spec.volume_name);
       }});
  auto& class_informer = informers_->Handle<api::StorageClass>(
      {.on_add = [this](const auto& c) { StoreClass(*c); },
       .on_update = [this](const auto&, const auto& c) { StoreClass(*c); },
       .on_delete = [this](const auto& c) {
         std::lock_guard lock(mu_);
         classes_.erase(c->metadata.name);
       }});
  auto& pod_informer = informers_->Handle<api::Pod>(
      {.on_add = [this](const auto& p) { StorePod(*p); },
       .on_update = [this](const auto&, const auto& p) { StorePod(*p); },
       .on_delete = [this](const auto& p) { pods_.Remove(p->metadata.namespace_, p->metadata.name); }});
  class_informer.Start();
  pod_informer.Start();
  volume_informer_->Start();
  claim_informer_->Start();
  if (!class_informer.WaitForSync(sync_timeout) || !pod_informer.WaitForSync(sync_timeout) ||
      !volume_informer_->WaitForSync(sync_timeout) || !claim_informer_->WaitForSync(sync_timeout)) {
    Stop();
    return UnavailableError("persistentvolume-controller: caches did not fill in time");
  }
  auto sync_volumes = [this](const std::vector<std::string>& keys) {
    std::vector<VolumePtr> volumes;
    volumes.reserve(keys.size());
    for (const auto& key : keys) volumes.push_back(volumes_.Get(key));
    return SyncVolumes(volumes);
  };
  auto sync_claims = [this](const std::vector<std::string>& keys) {
    std::vector<ClaimPtr> claims;
    claims.reserve(keys.size());
    for (const auto& key : keys) claims.push_back(GetClaim(key));
    return SyncClaims(claims);
  };
  for (int i = 0; i < options_.workers; ++i) {
    threads_.emplace_back([this, sync_claims] {
      SetThreadName("pv-claim");
      RunBatchWorker(*claim_queue_, options_.claim_batch, sync_claims,
                     "persistentvolume-controller: claim");
    });
    threads_.emplace_back([this, sync_volumes] {
      SetThreadName("pv-volume");
      RunBatchWorker(*volume_queue_, options_.volume_batch, sync_volumes,
                     "persistentvolume-controller: volume");
    });
  }
  // Resync: every object again, periodically, fed to the queues in 100 slices over half the
  // period, so that a large cluster's resync does not stand in front of new claims all at once.
  threads_.emplace_back([this] {
    SetThreadName("pv-resync");
    std::unique_lock lock(stop_mu_);
    while (!stopping_) {
      options_.clock->WaitFor(stop_cv_, lock, options_.resync);
      if (stopping_) break;
      std::vector<std::pair<client::WorkQueue*, std::string>> keys;
      for (const auto& c : claim_informer_->List()) keys.emplace_back(claim_queue_.get(), client::KeyOf(*c));
      for (const auto& v : volume_informer_->List()) keys.emplace_back(volume_queue_.get(), v->metadata.name);
      constexpr size_t kSlices = 100;
      const size_t slice = std::max<size_t>(1, (keys.size() + kSlices - 1) / kSlices);
      for (size_t i = 0; i < keys.size() && !stopping_; i += slice) {
        for (size_t j = i; j < std::min(keys.size(), i + slice); ++j) keys[j].first->Add(keys[j].second);
        options_.clock->WaitFor(stop_cv_, lock, options_.resync / (2 * kSlices));
      }
    }
  });
  return OkStatus();
}

void Controller::Stop() {
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  // No handler runs after this, so the queues and the view stay as the workers left them.
  if (informers_) informers_->Stop();
  if (claim_queue_) claim_queue_->ShutDown();
  if (volume_queue_) volume_queue_->ShutDown();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

}  // namespace kvol::controller::pv
