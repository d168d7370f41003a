#include "controller/protection/protection.h"

#include <algorithm>

#include "api/well_known.h"
#include "base/thread.h"
#include "controller/util/meta.h"
#include "client/worker.h"

namespace kvol::controller::protection {

using client::ApiStatus;
using client::ClaimKeysOfPod;
using client::PodIsShutDown;
using client::RunWorker;
namespace {

// What Kubernetes' protection controllers queue an object for: its finalizer to add, or to
// take off now that it is being deleted. Any other change needs no sync.
bool NeedsSync(const api::ObjectMeta& m, std::string_view finalizer) {
  const bool has = HasFinalizer(m, finalizer);
  return m.deletion_timestamp ? has : !has;
}

// Adds or removes `finalizer` and writes the object; NotFound means it is gone already.
template <class T>
Status SetFinalizer(client::Resource<T>& r, const T& obj, std::string_view finalizer, bool want) {
  T next = obj;
  auto& f = next.metadata.finalizers;
  if (want) {
    f.emplace_back(finalizer);
  } else {
    f.erase(std::remove(f.begin(), f.end(), finalizer), f.end());
  }
  auto written = r.Update(next);
  if (written.ok() || api::IsNotFound(written.error())) return OkStatus();
  return ApiStatus(written.error());
}

}  // namespace

Controller::Controller(client::Client& client, Options options)
    : client_(client), options_(options) {}

Controller::~Controller() { Stop(); }

void Controller::StorePod(const api::Pod& pod) { pods_.Upsert(pod); }

StatusOr<bool> Controller::ClaimInUse(const api::PersistentVolumeClaim& claim) {
  const std::string key = client::KeyOf(claim);
  for (const auto& pod : pods_.PodsUsing(key)) {
    if (!PodIsShutDown(*pod)) return true;
  }
  // The cache may not have a pod created a moment ago: ask the server before letting go.
  auto pods = client_.resource<api::Pod>().List(claim.metadata.namespace_);
  if (!pods.ok()) return ApiStatus(pods.error());
  for (const auto& pod : pods->items) {
    if (PodIsShutDown(pod)) continue;
    auto claims = ClaimKeysOfPod(pod);
    if (std::find(claims.begin(), claims.end(), key) != claims.end()) return true;
  }
  return false;
}

Status Controller::SyncClaim(const api::PersistentVolumeClaim& claim) {
  auto& r = client_.resource<api::PersistentVolumeClaim>();
  const bool has = HasFinalizer(claim.metadata, api::kPVCProtectionFinalizer);
  if (!claim.metadata.deletion_timestamp) {
    return has ? OkStatus() : SetFinalizer(r, claim, api::kPVCProtectionFinalizer, true);
  }
  if (!has) return OkStatus();
  auto in_use = ClaimInUse(claim);
  if (!in_use.ok()) return in_use.status();
  if (*in_use) return OkStatus();  // a pod event brings the claim back
  return SetFinalizer(r, claim, api::kPVCProtectionFinalizer, false);
}

Status Controller::SyncVolume(const api::PersistentVolume& volume) {
  auto& r = client_.resource<api::PersistentVolume>();
  const bool has = HasFinalizer(volume.metadata, api::kPVProtectionFinalizer);
  if (!volume.metadata.deletion_timestamp) {
    return has ? OkStatus() : SetFinalizer(r, volume, api::kPVProtectionFinalizer, true);
  }
  if (!has || volume.status.phase == "Bound") return OkStatus();
  return SetFinalizer(r, volume, api::kPVProtectionFinalizer, false);
}

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  claim_queue_ = std::make_unique<client::WorkQueue>(
      *options_.clock, client::WorkQueueOptions{.name = "pvcprotection"});
  volume_queue_ = std::make_unique<client::WorkQueue>(
      *options_.clock, client::WorkQueueOptions{.name = "pvprotection"});
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  auto claim_changed = [this](const auto& c) {
    if (NeedsSync(c->metadata, api::kPVCProtectionFinalizer)) {
      claim_queue_->Add(client::KeyOf(*c));
    }
  };
  claims_ = &informers_->Handle<api::PersistentVolumeClaim>(
      {.on_add = claim_changed,
       .on_update = [claim_changed](const auto&, const auto& c) { claim_changed(c); }});
  auto volume_changed = [this](const auto& v) {
    if (NeedsSync(v->metadata, api::kPVProtectionFinalizer)) {
      volume_queue_->Add(v->metadata.name);
    }
  };
  volumes_ = &informers_->Handle<api::PersistentVolume>(
      {.on_add = volume_changed,
       .on_update = [volume_changed](const auto&, const auto& v) { volume_changed(v); }});
  // A pod that goes away or finishes may free its claims.
  auto& pod_informer = informers_->Handle<api::Pod>(
      {.on_add = [this](const auto& p) { pods_.Upsert(p); },
       .on_update = [this](const auto&, const auto& p) {
         for (const auto& c : pods_.Upsert(p)) claim_queue_->Add(c);
       },
       .on_delete = [this](const auto& p) {
         for (const auto& c : pods_.Remove(p->metadata.namespace_, p->metadata.name)) {
           claim_queue_->Add(c);
         }
       }});
  pod_informer.Start();
  claims_->Start();
  volumes_->Start();
  if (!pod_informer.WaitForSync(sync_timeout) || !claims_->WaitForSync(sync_timeout) ||
      !volumes_->WaitForSync(sync_timeout)) {
    Stop();
    return UnavailableError("protection controllers: caches did not fill in time");
  }
  auto sync_claim = [this](const std::string& key) {
    auto [ns, name] = client::SplitKey(key);
    auto c = claims_->Get(ns, name);
    return c ? SyncClaim(*c) : OkStatus();
  };
  auto sync_volume = [this](const std::string& key) {
    auto v = volumes_->Get("", key);
    return v ? SyncVolume(*v) : OkStatus();
  };
  for (int i = 0; i < options_.workers; ++i) {
    threads_.emplace_back([this, sync_claim] {
      SetThreadName("pvc-protection");
      RunWorker(*claim_queue_, sync_claim, "pvc-protection-controller");
    });
    threads_.emplace_back([this, sync_volume] {
      SetThreadName("pv-protection");
      RunWorker(*volume_queue_, sync_volume, "pv-protection-controller");
    });
  }
  return OkStatus();
}

void Controller::Stop() {
  if (informers_) informers_->Stop();  // no handler runs after this
  if (claim_queue_) claim_queue_->ShutDown();
  if (volume_queue_) volume_queue_->ShutDown();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

}  // namespace kvol::controller::protection
