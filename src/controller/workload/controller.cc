// The workload controllers' wiring: informers, one queue, workers, and writing a plan.
#include "controller/workload/controller.h"

#include "base/log.h"
#include "controller/util/worker.h"

namespace kvol::controller::workload {
namespace {

constexpr const char* kOwnerIndex = "controller";

std::string OwnerKey(std::string_view kind, const std::string& ns, const std::string& name) {
  return std::string(kind) + "/" + ns + "/" + name;
}

}  // namespace

Controller::Controller(client::Client& client, client::EventSink deployment_events,
                       client::EventSink statefulset_events, Options options)
    : client_(client),
      deployment_events_(std::move(deployment_events)),
      statefulset_events_(std::move(statefulset_events)),
      options_(options) {}

Controller::~Controller() { Stop(); }

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  queue_ = std::make_unique<client::WorkQueue>(*options_.clock);
  client::InformerOptions io;
  io.clock = options_.clock;
  deployments_ =
      std::make_unique<client::Informer<api::Deployment>>(client_.resource<api::Deployment>(), io);
  statefulsets_ = std::make_unique<client::Informer<api::StatefulSet>>(
      client_.resource<api::StatefulSet>(), io);
  pods_ = std::make_unique<client::Informer<api::Pod>>(client_.resource<api::Pod>(), io);
  claims_ = std::make_unique<client::Informer<api::PersistentVolumeClaim>>(
      client_.resource<api::PersistentVolumeClaim>(), io);

  pods_->AddIndex(kOwnerIndex, [](const api::Pod& p) -> std::vector<std::string> {
    const api::OwnerReference* ref = ControllerOf(p);
    if (!ref || (ref->kind != "Deployment" && ref->kind != "StatefulSet")) return {};
    return {OwnerKey(ref->kind, p.metadata.namespace_, ref->name)};
  });
  auto on_pod = [this](const std::shared_ptr<const api::Pod>& p) {
    const api::OwnerReference* ref = ControllerOf(*p);
    if (ref && (ref->kind == "Deployment" || ref->kind == "StatefulSet")) {
      queue_->Add(OwnerKey(ref->kind, p->metadata.namespace_, ref->name));
    }
  };
  pods_->AddHandlers({.on_add = on_pod,
                      .on_update = [on_pod](const auto&, const auto& p) { on_pod(p); },
                      .on_delete = on_pod});
  auto on_deployment = [this](const std::shared_ptr<const api::Deployment>& d) {
    queue_->Add(OwnerKey("Deployment", d->metadata.namespace_, d->metadata.name));
  };
  deployments_->AddHandlers(
      {.on_add = on_deployment,
       .on_update = [on_deployment](const auto&, const auto& d) { on_deployment(d); },
       .on_delete = on_deployment});
  auto on_set = [this](const std::shared_ptr<const api::StatefulSet>& s) {
    queue_->Add(OwnerKey("StatefulSet", s->metadata.namespace_, s->metadata.name));
  };
  statefulsets_->AddHandlers({.on_add = on_set,
                              .on_update = [on_set](const auto&, const auto& s) { on_set(s); },
                              .on_delete = on_set});
  pods_->Start();
  claims_->Start();
  deployments_->Start();
  statefulsets_->Start();
  if (!pods_->WaitForSync(sync_timeout) || !claims_->WaitForSync(sync_timeout) ||
      !deployments_->WaitForSync(sync_timeout) || !statefulsets_->WaitForSync(sync_timeout)) {
    Stop();
    return UnavailableError("workload controllers: caches did not fill in time");
  }
  for (int i = 0; i < options_.workers; ++i) {
    threads_.emplace_back([this] {
      RunWorker(
          *queue_, [this](const std::string& key) { return Sync(key); }, "workload-controller");
    });
  }
  return OkStatus();
}

void Controller::Stop() {
  if (queue_) queue_->ShutDown();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  if (deployments_) deployments_->Stop();
  if (statefulsets_) statefulsets_->Stop();
  if (pods_) pods_->Stop();
  if (claims_) claims_->Stop();
}

std::vector<PodPtr> Controller::PodsOf(const std::string& owner_key) const {
  return pods_->ByIndex(kOwnerIndex, owner_key);
}

Status Controller::DeleteOrphans(const std::string& owner_key, const std::string& uid) {
  for (const auto& p : PodsOf(owner_key)) {
    const api::OwnerReference* ref = ControllerOf(*p);
    if (!ref || ref->uid == uid || p->metadata.deletion_timestamp) continue;
    auto deleted = client_.resource<api::Pod>().Delete(p->metadata.namespace_, p->metadata.name);
    if (!deleted.ok() && !api::IsNotFound(deleted.error())) return ApiStatus(deleted.error());
  }
  return OkStatus();
}

template <class T>
Status Controller::Apply(const T& owner, const Plan& plan, const client::EventSink& events) {
  auto event = [&](const std::string& reason, const std::string& message) {
    if (events) events(client::ReferenceTo(owner), "Normal", reason, message);
  };
  size_t next_event = 0;
  for (const auto& c : plan.create_claims) {
    auto made = client_.resource<api::PersistentVolumeClaim>().Create(c);
    if (!made.ok() && !api::IsAlreadyExists(made.error())) return ApiStatus(made.error());
  }
  for (const auto& p : plan.create_pods) {
    auto made = client_.resource<api::Pod>().Create(p);
    if (!made.ok() && !api::IsAlreadyExists(made.error())) return ApiStatus(made.error());
    if (made.ok() && !p.metadata.generate_name.empty()) {
      event("SuccessfulCreate", "Created pod: " + made->metadata.name);
    }
  }
  for (const auto& name : plan.delete_pods) {
    auto deleted = client_.resource<api::Pod>().Delete(owner.metadata.namespace_, name);
    if (!deleted.ok() && !api::IsNotFound(deleted.error())) return ApiStatus(deleted.error());
  }
  for (; next_event < plan.events.size(); ++next_event) {
    event(plan.events[next_event].first, plan.events[next_event].second);
  }
  if (plan.status != owner.status) {
    T next = owner;
    next.status = plan.status;
    auto written = client_.resource<T>().UpdateStatus(next);
    if (!written.ok() && !api::IsNotFound(written.error())) return ApiStatus(written.error());
  }
  return OkStatus();
}

Status Controller::Sync(const std::string& key) {
  const size_t a = key.find('/'), b = key.find('/', a + 1);
  if (a == std::string::npos || b == std::string::npos) return OkStatus();
  const std::string kind = key.substr(0, a), ns = key.substr(a + 1, b - a - 1),
                    name = key.substr(b + 1);
  if (kind == "Deployment") {
    auto d = deployments_->Get(ns, name);
    if (!d) return DeleteOrphans(key, "");
    KVOL_RETURN_IF_ERROR(DeleteOrphans(key, d->metadata.uid));
    std::vector<PodPtr> owned;
    for (const auto& p : PodsOf(key)) {
      if (ControllerOf(*p)->uid == d->metadata.uid) owned.push_back(p);
    }
    auto plan = PlanDeployment(*d, owned);
    if (!plan.ok()) {
      log::Warn("deployment " + ns + "/" + name + ": " + plan.status().message());
      return OkStatus();  // nothing to do until the spec changes, which brings it back
    }
    return Apply(*d, *plan, deployment_events_);
  }
  if (kind == "StatefulSet") {
    auto s = statefulsets_->Get(ns, name);
    if (!s) return DeleteOrphans(key, "");
    KVOL_RETURN_IF_ERROR(DeleteOrphans(key, s->metadata.uid));
    std::vector<PodPtr> owned;
    for (const auto& p : PodsOf(key)) {
      if (ControllerOf(*p)->uid == s->metadata.uid) owned.push_back(p);
    }
    auto plan = PlanStatefulSet(
        *s, owned, [&](const std::string& claim) { return claims_->Get(ns, claim) != nullptr; });
    if (!plan.ok()) {
      log::Warn("statefulset " + ns + "/" + name + ": " + plan.status().message());
      return OkStatus();  // nothing to do until the spec changes, which brings it back
    }
    return Apply(*s, *plan, statefulset_events_);
  }
  return OkStatus();
}

}  // namespace kvol::controller::workload
