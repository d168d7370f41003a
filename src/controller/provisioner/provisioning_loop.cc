// ProvisioningLoop: informers, a queue keyed "claim:ns/name" or "volume:name", and workers.
#include "controller/provisioner/provisioning_loop.h"

#include "base/thread.h"
#include "client/worker.h"

namespace kvol::controller::provisioner {
namespace {

constexpr std::string_view kClaimPrefix = "claim:";
constexpr std::string_view kVolumePrefix = "volume:";

}  // namespace

ProvisioningLoop::ProvisioningLoop(client::Client& client, LoopOptions options)
    : client_(client), options_(std::move(options)) {}

ProvisioningLoop::~ProvisioningLoop() { Stop(); }

void ProvisioningLoop::Event(const api::ObjectReference& about, std::string_view type,
                             std::string_view reason, std::string message) {
  if (recorder_) recorder_->Record(about, type, reason, std::move(message));
}

std::function<void()> ProvisioningLoop::Kicker() const {
  return [kick = kick_] {
    std::lock_guard lock(kick->mu);
    kick->kicked = true;
    kick->cv.notify_all();
  };
}

void ProvisioningLoop::EnqueueAll() {
  for (const auto& c : claims_->List()) {
    if (handlers_.claim_wanted(*c)) queue_->Add(std::string(kClaimPrefix) + client::KeyOf(*c));
  }
  for (const auto& v : volumes_->List()) {
    if (handlers_.volume_wanted(*v)) queue_->Add(std::string(kVolumePrefix) + v->metadata.name);
  }
}

Status ProvisioningLoop::Start(LoopHandlers handlers, std::chrono::milliseconds sync_timeout) {
  handlers_ = std::move(handlers);
  recorder_ = std::make_unique<client::EventRecorder>(
      client_.resource<api::Event>(),
      client::EventRecorderOptions{.component = options_.component}, *options_.clock);
  queue_ = std::make_unique<client::WorkQueue>(
      *options_.clock, client::WorkQueueOptions{.name = options_.component + "-claims"});
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  auto on_claim = [this](const std::shared_ptr<const api::PersistentVolumeClaim>& c) {
    if (handlers_.claim_wanted(*c)) queue_->Add(std::string(kClaimPrefix) + client::KeyOf(*c));
  };
  claims_ = &informers_->Handle<api::PersistentVolumeClaim>(
      {.on_add = on_claim, .on_update = [on_claim](const auto&, const auto& c) { on_claim(c); }});
  auto on_volume = [this](const std::shared_ptr<const api::PersistentVolume>& v) {
    if (handlers_.volume_wanted(*v)) queue_->Add(std::string(kVolumePrefix) + v->metadata.name);
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
    return UnavailableError(options_.name + ": caches did not fill in time");
  }
  auto sync = [this](const std::string& key) -> Status {
    if (key.rfind(kClaimPrefix, 0) == 0) {
      auto [ns, name] = client::SplitKey(key.substr(kClaimPrefix.size()));
      auto c = claims_->Get(ns, name);
      return c ? handlers_.sync_claim(*c) : OkStatus();
    }
    auto v = volumes_->Get("", key.substr(kVolumePrefix.size()));
    return v ? handlers_.sync_volume(*v) : OkStatus();
  };
  for (int i = 0; i < options_.workers; ++i) {
    threads_.emplace_back([this, sync] {
      SetThreadName(options_.thread_name);
      client::RunWorker(*queue_, sync, options_.name);
    });
  }
  // Passes over everything: one now, then at each resync (if any) and each kick; a kick that
  // comes during a pass brings another.
  threads_.emplace_back([this] {
    SetThreadName(options_.thread_name);
    const bool periodic = options_.resync > std::chrono::milliseconds(0);
    std::unique_lock lock(kick_->mu);
    while (!kick_->stopping) {
      kick_->kicked = false;
      lock.unlock();
      EnqueueAll();
      lock.lock();
      const auto deadline = options_.clock->Monotonic() + options_.resync;
      while (!kick_->stopping && !kick_->kicked &&
             (!periodic || options_.clock->Monotonic() < deadline)) {
        if (periodic) {
          options_.clock->WaitUntil(kick_->cv, lock, deadline);
        } else {
          kick_->cv.wait(lock);
        }
      }
    }
  });
  return OkStatus();
}

void ProvisioningLoop::Stop() {
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
