#include "controller/ephemeral/ephemeral_controller.h"

#include "api/volume_sources.h"
#include "client/worker.h"

namespace kvol::controller::ephemeral {

using client::ApiStatus;

namespace {

bool HasEphemeral(const api::Pod& pod) {
  for (const auto& v : pod.spec.volumes) {
    if (v.ephemeral) return true;
  }
  return false;
}

}  // namespace

api::PersistentVolumeClaim ClaimFor(const api::Pod& pod, const api::Volume& v) {
  api::PersistentVolumeClaim claim;
  claim.metadata.namespace_ = pod.metadata.namespace_;
  claim.metadata.name = *api::ClaimNameOf(pod, v);
  api::OwnerReference owner;
  owner.api_version = "v1";
  owner.kind = "Pod";
  owner.name = pod.metadata.name;
  owner.uid = pod.metadata.uid;
  owner.controller = true;
  owner.block_owner_deletion = true;
  claim.metadata.owner_references = {std::move(owner)};
  if (v.ephemeral->volume_claim_template) {
    const auto& t = *v.ephemeral->volume_claim_template;
    claim.metadata.labels = t.metadata.labels;
    claim.metadata.annotations = t.metadata.annotations;
    claim.spec = t.spec;
  }
  return claim;
}

Controller::Controller(client::Client& client, Options options)
    : client_(client), options_(std::move(options)) {}

Controller::~Controller() { Stop(); }

Status Controller::SyncPod(const api::Pod& pod) {
  // A pod being deleted needs no new claim.
  if (pod.metadata.deletion_timestamp) return OkStatus();
  auto& claims = client_.resource<api::PersistentVolumeClaim>();
  auto refuse = [&](const api::Volume& v, const std::string& why) {
    if (options_.events) {
      options_.events(client::ReferenceTo(pod), "Warning", "FailedBinding",
                      "ephemeral volume " + v.name + ": " + why);
    }
    return FailedPreconditionError("pod " + pod.metadata.namespace_ + "/" + pod.metadata.name +
                                   ", ephemeral volume " + v.name + ": " + why);
  };
  for (const auto& v : pod.spec.volumes) {
    if (!v.ephemeral) continue;
    const std::string name = *api::ClaimNameOf(pod, v);
    std::shared_ptr<const api::PersistentVolumeClaim> existing =
        claims_ ? claims_->Get(pod.metadata.namespace_, name) : nullptr;
    if (!existing) {
      auto got = claims.Get(pod.metadata.namespace_, name);
      if (got.ok()) {
        existing = std::make_shared<const api::PersistentVolumeClaim>(*std::move(got));
      } else if (!api::IsNotFound(got.error())) {
        return ApiStatus(got.error());
      }
    }
    if (existing) {
      if (auto why = api::EphemeralClaimNotForPod(pod, *existing)) return refuse(v, *why);
      continue;  // made already
    }
    auto created = claims.Create(ClaimFor(pod, v));
    if (!created.ok() && !api::IsAlreadyExists(created.error())) {
      return refuse(v, "create PVC " + name + ": " + created.error().message);
    }
  }
  return OkStatus();
}

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  queue_ = std::make_unique<client::WorkQueue>(
      *options_.clock, client::WorkQueueOptions{.name = "ephemeral_volume"});
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  auto pod_changed = [this](const auto& p) {
    if (HasEphemeral(*p) && !p->metadata.deletion_timestamp) queue_->Add(client::KeyOf(*p));
  };
  pods_ = &informers_->Handle<api::Pod>(
      {.on_add = pod_changed,
       .on_update = [pod_changed](const auto&, const auto& p) { pod_changed(p); }});
  // A claim deleted under a pod that still exists is made again.
  claims_ = &informers_->Handle<api::PersistentVolumeClaim>({.on_delete = [this](const auto& c) {
    for (const auto& ref : c->metadata.owner_references) {
      if (ref.kind == "Pod" && ref.controller.value_or(false)) {
        queue_->Add(c->metadata.namespace_ + "/" + ref.name);
      }
    }
  }});
  pods_->Start();
  claims_->Start();
  if (!pods_->WaitForSync(sync_timeout) || !claims_->WaitForSync(sync_timeout)) {
    Stop();
    return UnavailableError("ephemeral volume controller: caches did not fill in time");
  }
  auto sync = [this](const std::string& key) {
    auto [ns, name] = client::SplitKey(key);
    auto pod = pods_->Get(ns, name);
    return pod ? SyncPod(*pod) : OkStatus();
  };
  workers_.Start(*queue_, options_.workers, "ephemeral", sync, "ephemeral-volume-controller");
  return OkStatus();
}

void Controller::Stop() {
  if (informers_) informers_->Stop();
  workers_.Stop();
}

}  // namespace kvol::controller::ephemeral
