// The PersistentVolume controller's base, as Kubernetes' pv_controller_base.go: the view of
// volumes, claims, classes and pods that the informers fill and the controller's own writes
// update; the writes in flight; the batching of bindings into few store writes; and the
// informers, queues and workers (Start, Stop). The decisions are in controller.cc.
#include <algorithm>
#include <charconv>

#include "api/well_known.h"
#include "base/log.h"
#include "base/thread.h"
#include "client/worker.h"
#include "controller/pv/controller.h"
#include "controller/util/meta.h"

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

void Controller::Remember(std::shared_ptr<const PersistentVolume> v) {
  if (Tombstoned(volume_tombstones_, ViewKey(*v), v->metadata.uid)) return;
  StoreVolume(std::move(v));
}

void Controller::Remember(ClaimPtr c) {
  if (Tombstoned(claim_tombstones_, ViewKey(*c), c->metadata.uid)) return;
  StoreClaim(std::move(c));
}

bool Controller::Tombstones::Has(const std::string& key, const std::string& uid) const {
  for (const auto* m : {&current, &previous}) {
    auto it = m->find(key);
    if (it != m->end() && it->second == uid) return true;
  }
  return false;
}

bool Controller::Tombstoned(const Tombstones& t, const std::string& key, const std::string& uid) {
  std::lock_guard lock(tombstones_mu_);
  return !uid.empty() && t.Has(key, uid);
}

void Controller::Bury(Tombstones& t, std::string key, std::string uid) {
  if (uid.empty()) return;
  std::lock_guard lock(tombstones_mu_);
  t.current[std::move(key)] = std::move(uid);
}

void Controller::AgeTombstones() {
  std::lock_guard lock(tombstones_mu_);
  for (auto* t : {&volume_tombstones_, &claim_tombstones_}) {
    t->previous = std::move(t->current);
    t->current.clear();
  }
}

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
  return stored || v.status.phase != api::kVolumeBound || !v.spec.claim_ref ||
         v.spec.claim_ref->uid.empty() || v.metadata.deletion_timestamp;
}

bool Controller::UpdateNeedsSync(bool stored, const PersistentVolumeClaim& c) {
  return stored || c.status.phase != api::kClaimBound || c.spec.volume_name.empty() ||
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

void Controller::ForgetVolume(const PersistentVolume& volume) {
  Bury(volume_tombstones_, ViewKey(volume), volume.metadata.uid);
  volumes_.Remove(volume.metadata.name);
}

void Controller::ForgetClaim(const PersistentVolumeClaim& claim) {
  std::string key = ViewKey(claim);
  Bury(claim_tombstones_, key, claim.metadata.uid);
  std::lock_guard lock(mu_);
  claims_.erase(key);
}

void Controller::PruneClaims() {
  if (!claim_informer_) return;
  std::vector<std::string> keys;
  {
    std::lock_guard lock(mu_);
    keys.reserve(claims_.size());
    for (const auto& [key, claim] : claims_) keys.push_back(key);
  }
  for (const auto& key : keys) {
    if (claim_informer_->GetByKey(key)) continue;
    {
      std::lock_guard lock(in_flight_mu_);
      auto it = claims_in_flight_.find(key);
      if (it != claims_in_flight_.end() && it->second.writes > 0) continue;
    }
    log::Warn("persistentvolume-controller: claim " + key +
              " is gone from the informer's cache; dropped from the view");
    std::lock_guard lock(mu_);
    claims_.erase(key);
  }
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

std::vector<std::string> Controller::UnscheduledPodsUsing(
    const PersistentVolumeClaim& claim) const {
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

void Controller::WriteBindings(std::vector<PendingBind>& binds, std::vector<Status>& results) {
  // The volumes' writes (claimRef and phase) and the claims' (volumeName and status), written
  // together (Client::UpdateTogether): in process one store commit, each claim's made only if
  // its volume's is, so a claim is never bound to a volume that is not bound to it. Objects
  // already bound (most syncs of a bound claim) are not copied at all. What a claim's binding
  // takes from its volume (name, capacity, access modes) the volume's write leaves as it is.
  std::vector<api::ObjectUpdate> updates;
  updates.reserve(2 * binds.size());
  std::vector<std::string> volume_keys, claim_keys;
  std::vector<size_t> volume_of, claim_of;  // the bind each write is for
  std::vector<int> volume_write(binds.size(), -1);
  for (size_t i = 0; i < binds.size(); ++i) {
    const PendingBind& b = binds[i];
    if (VolumeBindingDone(*b.volume, *b.claim)) continue;
    PersistentVolume v = *b.volume;
    const bool spec = SetClaimRef(v, *b.claim);
    const bool status = SetVolumePhase(v, api::kVolumeBound, {});
    if (!spec && !status) continue;
    volume_write[i] = static_cast<int>(updates.size());
    volume_keys.push_back(ViewKey(v));
    updates.push_back(api::UpdateOf(std::move(v), spec, status));
    volume_of.push_back(i);
  }
  for (size_t i = 0; i < binds.size(); ++i) {
    const PendingBind& b = binds[i];
    if (ClaimBindingDone(*b.claim, *b.volume)) continue;
    PersistentVolumeClaim c = *b.claim;
    const bool spec = SetVolumeName(c, *b.volume);
    auto status = SetClaimStatus(c, api::kClaimBound, b.volume.get());
    if (!status.ok()) {
      results[b.slot] = status.status();
      continue;
    }
    if (!spec && !*status) continue;
    claim_keys.push_back(ViewKey(c));
    updates.push_back(api::UpdateOf(std::move(c), spec, *status, volume_write[i]));
    claim_of.push_back(i);
  }

  if (!updates.empty()) {
    BeginWrites<PersistentVolume>(volume_keys);
    BeginWrites<PersistentVolumeClaim>(claim_keys);
    auto written = client_.UpdateTogether(std::move(updates));
    const size_t nv = volume_of.size();
    auto volumes_written = Remembered<PersistentVolume>(
        volume_keys, Typed<PersistentVolume>(written.begin(), written.begin() + nv));
    auto claims_written = Remembered<PersistentVolumeClaim>(
        claim_keys, Typed<PersistentVolumeClaim>(written.begin() + nv, written.end()));
    // A failed volume write is its claim's result; else a failed claim write.
    for (size_t j = 0; j < claims_written.size(); ++j) {
      if (!claims_written[j].ok()) results[binds[claim_of[j]].slot] = claims_written[j].status();
    }
    for (size_t j = 0; j < volumes_written.size(); ++j) {
      if (!volumes_written[j].ok()) {
        results[binds[volume_of[j]].slot] = volumes_written[j].status();
      }
    }
  }
  for (const PendingBind& b : binds) {
    if (b.reserved) volumes_.Unreserve(b.volume->metadata.name);
  }
}

template <class T, class It>
std::vector<api::ApiOr<std::shared_ptr<const T>>> Controller::Typed(It begin, It end) {
  std::vector<api::ApiOr<std::shared_ptr<const T>>> out;
  out.reserve(end - begin);
  for (It it = begin; it != end; ++it) out.push_back(api::FromAny<T>(*it));
  return out;
}

template <class T>
std::vector<StatusOr<std::shared_ptr<const T>>> Controller::Remembered(
    const std::vector<std::string>& keys,
    std::vector<api::ApiOr<std::shared_ptr<const T>>> written) {
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

// ---- running -------------------------------------------------------------------------------

void Controller::StartWorkers() {
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
}

// Resync: every object again, periodically, fed to the queues in 100 slices over half the
// period, so that a large cluster's resync does not stand in front of new claims all at once.
void Controller::ResyncLoop() {
  std::unique_lock lock(stop_mu_);
  while (!stopping_) {
    options_.clock->WaitFor(stop_cv_, lock, options_.resync);
    if (stopping_) break;
    AgeTombstones();
    PruneClaims();
    std::vector<std::pair<client::WorkQueue*, std::string>> keys;
    for (const auto& c : claim_informer_->List())
      keys.emplace_back(claim_queue_.get(), client::KeyOf(*c));
    for (const auto& v : volume_informer_->List())
      keys.emplace_back(volume_queue_.get(), v->metadata.name);
    constexpr size_t kSlices = 100;
    const size_t slice = std::max<size_t>(1, (keys.size() + kSlices - 1) / kSlices);
    for (size_t i = 0; i < keys.size() && !stopping_; i += slice) {
      for (size_t j = i; j < std::min(keys.size(), i + slice); ++j)
        keys[j].first->Add(keys[j].second);
      options_.clock->WaitFor(stop_cv_, lock, options_.resync / (2 * kSlices));
    }
  }
}

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  // kube-controller-manager's names for the PV controller's queues.
  claim_queue_ =
      std::make_unique<client::WorkQueue>(*options_.clock, client::WorkQueueOptions{.name = "claims"});
  volume_queue_ = std::make_unique<client::WorkQueue>(*options_.clock,
                                                      client::WorkQueueOptions{.name = "volumes"});
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  volume_informer_ =
      &informers_->Handle<PersistentVolume>({.on_add =
                                                 [this](const auto& v) {
                                                   StoreVolume(v);
                                                   volume_queue_->Add(v->metadata.name);
                                                 },
                                             .on_update =
                                                 [this](const auto&, const auto& v) {
                                                   if (OnUpdate(v))
                                                     volume_queue_->Add(v->metadata.name);
                                                 },
                                             .on_delete =
                                                 [this](const auto& v) {
                                                   ForgetVolume(*v);
                                                   // Its claim, if any, now has a missing volume.
                                                   if (v->spec.claim_ref)
                                                     claim_queue_->Add(ClaimRefKey(*v));
                                                 }});
  claim_informer_ =
      &informers_->Handle<PersistentVolumeClaim>({.on_add =
                                                      [this](const auto& c) {
                                                        StoreClaim(c);
                                                        claim_queue_->Add(client::KeyOf(*c));
                                                      },
                                                  .on_update =
                                                      [this](const auto&, const auto& c) {
                                                        if (OnUpdate(c))
                                                          claim_queue_->Add(client::KeyOf(*c));
                                                      },
                                                  .on_delete =
                                                      [this](const auto& c) {
                                                        ForgetClaim(*c);
                                                        // Its volume is released.
                                                        if (!c->spec.volume_name.empty())
                                                          volume_queue_->Add(c->spec.volume_name);
                                                      }});
  auto& class_informer = informers_->Handle<api::StorageClass>(
      {.on_add = [this](const auto& c) { StoreClass(*c); },
       .on_update = [this](const auto&, const auto& c) { StoreClass(*c); },
       .on_delete =
           [this](const auto& c) {
             std::lock_guard lock(mu_);
             classes_.erase(c->metadata.name);
           }});
  auto& pod_informer = informers_->Handle<api::Pod>(
      {.on_add = [this](const auto& p) { StorePod(*p); },
       .on_update = [this](const auto&, const auto& p) { StorePod(*p); },
       .on_delete =
           [this](const auto& p) { pods_.Remove(p->metadata.namespace_, p->metadata.name); }});
  class_informer.Start();
  pod_informer.Start();
  volume_informer_->Start();
  claim_informer_->Start();
  if (!class_informer.WaitForSync(sync_timeout) || !pod_informer.WaitForSync(sync_timeout) ||
      !volume_informer_->WaitForSync(sync_timeout) || !claim_informer_->WaitForSync(sync_timeout)) {
    Stop();
    return UnavailableError("persistentvolume-controller: caches did not fill in time");
  }
  collector_ = std::make_shared<metrics::Collector>(
      [this] { return CollectPvMetrics(volume_informer_->List(), claim_informer_->List()); });
  metrics::AddCollector(collector_);
  StartWorkers();
  threads_.emplace_back([this] {
    SetThreadName("pv-resync");
    ResyncLoop();
  });
  return OkStatus();
}

void Controller::Stop() {
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (collector_) collector_->Detach();
  // No handler runs after this, so the queues and the view stay as the workers left them.
  if (informers_) informers_->Stop();
  if (claim_queue_) claim_queue_->ShutDown();
  if (volume_queue_) volume_queue_->ShutDown();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

// What the decisions (controller.cc) use, for the two kinds they write.
template void Controller::Event(const PersistentVolume&, std::string_view, std::string_view,
                                std::string);
template void Controller::Event(const PersistentVolumeClaim&, std::string_view, std::string_view,
                                std::string);
template StatusOr<PersistentVolume> Controller::Write(PersistentVolume, bool);
template StatusOr<PersistentVolumeClaim> Controller::Write(PersistentVolumeClaim, bool);
template std::vector<StatusOr<std::shared_ptr<const PersistentVolume>>> Controller::WriteMany(
    std::vector<PersistentVolume>, const std::vector<std::pair<bool, bool>>&);

}  // namespace kvol::controller::pv