// The workload controllers' wiring: informers, one queue, workers, and writing a plan.
#include "controller/workload/controller.h"

#include <algorithm>
#include <set>

#include "base/log.h"
#include "base/thread.h"
#include "client/worker.h"

namespace kvol::controller::workload {

using client::ApiStatus;
namespace {

// The pods' index of their Deployment or StatefulSet (an informer shared with other controllers
// may have indexes of theirs).
constexpr const char* kOwnerIndex = "workload-owner";

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
  queue_ = std::make_unique<client::WorkQueue>(*options_.clock,
                                               client::WorkQueueOptions{.name = "workloads"});
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  pods_ = &informers_->Get<api::Pod>();
  claims_ = &informers_->Get<api::PersistentVolumeClaim>();
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
  informers_->Handle<api::Pod>({.on_add = on_pod,
                                .on_update = [on_pod](const auto&, const auto& p) { on_pod(p); },
                                .on_delete = on_pod});
  auto on_deployment = [this](const std::shared_ptr<const api::Deployment>& d) {
    queue_->Add(OwnerKey("Deployment", d->metadata.namespace_, d->metadata.name));
  };
  deployments_ = &informers_->Handle<api::Deployment>(
      {.on_add = on_deployment,
       .on_update = [on_deployment](const auto&, const auto& d) { on_deployment(d); },
       .on_delete = on_deployment});
  auto on_set = [this](const std::shared_ptr<const api::StatefulSet>& s) {
    queue_->Add(OwnerKey("StatefulSet", s->metadata.namespace_, s->metadata.name));
  };
  statefulsets_ = &informers_->Handle<api::StatefulSet>(
      {.on_add = on_set,
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
      SetThreadName("workload");
      RunWorker(
          *queue_, [this](const std::string& key) { return Sync(key); }, "workload-controller");
    });
  }
  return OkStatus();
}

void Controller::Stop() {
  if (informers_) informers_->Stop();  // no handler runs after this
  if (queue_) queue_->ShutDown();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

std::vector<PodPtr> Controller::PodsOf(const std::string& owner_key) const {
  return pods_->ByIndex(kOwnerIndex, owner_key);
}

template <class T>
StatusOr<Controller::Made> Controller::Apply(const T& owner, const Plan& plan,
                                             const client::EventSink& events) {
  auto event = [&](const std::string& reason, const std::string& message) {
    if (events) events(client::ReferenceTo(owner), "Normal", reason, message);
  };
  Made made;
  for (const auto& c : plan.create_claims) {
    auto created = client_.resource<api::PersistentVolumeClaim>().Create(c);
    if (!created.ok() && !api::IsAlreadyExists(created.error())) return ApiStatus(created.error());
  }
  for (const auto& p : plan.create_pods) {
    auto created = client_.resource<api::Pod>().Create(p);
    if (!created.ok() && !api::IsAlreadyExists(created.error())) return ApiStatus(created.error());
    if (!created.ok()) continue;
    made.created.push_back(created->metadata.name);
    if (!p.metadata.generate_name.empty()) {
      event("SuccessfulCreate", "Created pod: " + created->metadata.name);
    }
  }
  for (const auto& name : plan.delete_pods) {
    auto deleted = client_.resource<api::Pod>().Delete(owner.metadata.namespace_, name);
    if (!deleted.ok() && !api::IsNotFound(deleted.error())) return ApiStatus(deleted.error());
    made.deleted.push_back(name);
  }
  for (const auto& [reason, message] : plan.events) event(reason, message);
  if (plan.status != owner.status) {
    T next = owner;
    next.status = plan.status;
    auto written = client_.resource<T>().UpdateStatus(next);
    if (!written.ok() && !api::IsNotFound(written.error())) return ApiStatus(written.error());
  }
  return made;
}

int64_t Controller::ApplyExpectations(const std::string& owner_key, std::vector<PodPtr>& owned) {
  const os::MonoTime now = options_.clock->Monotonic();
  const os::MonoTime too_old = now - std::chrono::minutes(1);
  std::lock_guard lock(expectations_mu_);
  auto it = expectations_.find(owner_key);
  if (it == expectations_.end()) return 0;
  Expectations& e = it->second;
  std::set<std::string> seen;
  for (const auto& p : owned) seen.insert(p->metadata.name);
  for (auto c = e.created.begin(); c != e.created.end();) {
    c = seen.count(c->first) || c->second < too_old ? e.created.erase(c) : std::next(c);
  }
  for (auto d = e.deleted.begin(); d != e.deleted.end();) {
    d = !seen.count(d->first) || d->second < too_old ? e.deleted.erase(d) : std::next(d);
  }
  owned.erase(
      std::remove_if(owned.begin(), owned.end(),
                     [&](const PodPtr& p) { return e.deleted.count(p->metadata.name) > 0; }),
      owned.end());
  const int64_t pending = static_cast<int64_t>(e.created.size());
  if (e.created.empty() && e.deleted.empty()) expectations_.erase(it);
  return pending;
}

void Controller::Expect(const std::string& owner_key, const Made& made) {
  if (made.created.empty() && made.deleted.empty()) return;
  const os::MonoTime now = options_.clock->Monotonic();
  std::lock_guard lock(expectations_mu_);
  Expectations& e = expectations_[owner_key];
  for (const auto& n : made.created) e.created[n] = now;
  for (const auto& n : made.deleted) e.deleted[n] = now;
}

Status Controller::Sync(const std::string& key) {
  const size_t a = key.find('/'), b = key.find('/', a + 1);
  if (a == std::string::npos || b == std::string::npos) return OkStatus();
  const std::string kind = key.substr(0, a), ns = key.substr(a + 1, b - a - 1),
                    name = key.substr(b + 1);
  if (kind == "Deployment") {
    auto d = deployments_->Get(ns, name);
    // Gone or going: the garbage collector deletes (or orphans) its pods.
    if (!d || d->metadata.deletion_timestamp) return OkStatus();
    std::vector<PodPtr> owned;
    for (const auto& p : PodsOf(key)) {
      if (ControllerOf(*p)->uid == d->metadata.uid) owned.push_back(p);
    }
    const int64_t pending = ApplyExpectations(key, owned);
    auto plan = PlanDeployment(*d, owned, pending);
    if (!plan.ok()) {
      log::Warn("deployment " + ns + "/" + name + ": " + plan.status().message());
      return OkStatus();  // nothing to do until the spec changes, which brings it back
    }
    KVOL_ASSIGN_OR_RETURN(Made made, Apply(*d, *plan, deployment_events_));
    Expect(key, made);
    return OkStatus();
  }
  if (kind == "StatefulSet") {
    auto s = statefulsets_->Get(ns, name);
    if (!s || s->metadata.deletion_timestamp) return OkStatus();
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
    return Apply(*s, *plan, statefulset_events_).status();
  }
  return OkStatus();
}

}  // namespace kvol::controller::workload
