#include "controller/resourcequota/resource_quota_controller.h"

#include "api/scheme.h"

namespace kvol::controller::resourcequota {

using client::ApiStatus;

Controller::Controller(client::Client& client, Options options)
    : client_(client), options_(options) {}

Controller::~Controller() { Stop(); }

Status Controller::CollectItems(const std::string& ns,
                                const std::set<std::pair<std::string, std::string>>& sources,
                                std::vector<api::QuotaItem>* items) {
  Status status = OkStatus();
  api::ForEachKind([&](auto t) {
    using T = typename decltype(t)::type;
    const api::KindInfo& k = api::KindInfoOf<T>();
    if (!status.ok() || !sources.count({std::string(k.resource), std::string(k.group)})) return;
    // A live list: the informers may not have the objects admission has just charged for.
    auto list = client_.resource<T>().ListShared(ns);
    if (!list.ok()) {
      status = ApiStatus(list.error());
      return;
    }
    for (const auto& obj : list->items) items->push_back(api::QuotaItemOf(*obj));
  });
  return status;
}

Status Controller::Sync(const std::string& ns) {
  auto quotas = client_.resource<api::ResourceQuota>().List(ns);
  if (!quotas.ok()) return ApiStatus(quotas.error());
  if (quotas->items.empty()) return OkStatus();
  std::set<std::pair<std::string, std::string>> sources;
  for (const auto& q : quotas->items) {
    for (const auto& [name, _] : q.spec.hard) {
      if (auto source = api::QuotaSourceOf(name)) sources.insert(*source);
    }
  }
  std::vector<api::QuotaItem> items;
  KVOL_RETURN_IF_ERROR(CollectItems(ns, sources, &items));
  Status result = OkStatus();
  for (auto& q : quotas->items) {
    api::ResourceList used = api::QuotaUsed(q, items);
    if (q.status.hard == q.spec.hard && q.status.used == used &&
        q.status.used.size() == used.size()) {
      continue;
    }
    q.status.hard = q.spec.hard;
    q.status.used = std::move(used);
    auto written = client_.resource<api::ResourceQuota>().UpdateStatus(q);
    // A quota changed since the list (admission charged it, or it was edited) is counted
    // again on the next pass, which its update event queues.
    if (!written.ok() && !api::IsNotFound(written.error()) && written.error().code != 409) {
      result = ApiStatus(written.error());
    }
  }
  if (result.ok() && queue_) queue_->AddAfter(ns, options_.resync);
  return result;
}

bool Controller::HasQuotas(const std::string& ns) {
  std::lock_guard lock(mu_);
  auto it = quotas_per_namespace_.find(ns);
  return it != quotas_per_namespace_.end() && it->second > 0;
}

// As Kubernetes' replenishment: an object that goes, or whose usage changes (a pod that
// finishes, a claim that grows), has the namespace counted again. One created was charged by
// admission; counting then could miss another being created, charged but not yet stored.
template <class T>
void Controller::Watch() {
  auto& informer = informers_->Handle<T>(
      {.on_update =
           [this](const auto& old, const auto& now) {
             const std::string& ns = now->metadata.namespace_;
             if (HasQuotas(ns) && api::QuotaItemOf(*old).usage != api::QuotaItemOf(*now).usage) {
               queue_->Add(ns);
             }
           },
       .on_delete =
           [this](const auto& o) {
             if (HasQuotas(o->metadata.namespace_)) queue_->Add(o->metadata.namespace_);
           }});
  informer.Start();
  synced_.push_back([&informer](std::chrono::milliseconds t) { return informer.WaitForSync(t); });
}

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  queue_ = std::make_unique<client::WorkQueue>(*options_.clock,
                                               client::WorkQueueOptions{.name = "resourcequota"});
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  auto count = [this](const std::string& ns, int delta) {
    std::lock_guard lock(mu_);
    if ((quotas_per_namespace_[ns] += delta) <= 0) quotas_per_namespace_.erase(ns);
  };
  auto& quotas = informers_->Handle<api::ResourceQuota>(
      {.on_add =
           [this, count](const auto& q) {
             count(q->metadata.namespace_, 1);
             queue_->Add(q->metadata.namespace_);
           },
       // A quota whose spec.hard its status does not show yet; not its status updates (the
       // charges admission makes).
       .on_update =
           [this](const auto&, const auto& q) {
             if (q->spec.hard != q->status.hard) queue_->Add(q->metadata.namespace_);
           },
       .on_delete =
           [this, count](const auto& q) {
             count(q->metadata.namespace_, -1);
             // The others count one quota less.
             if (HasQuotas(q->metadata.namespace_)) queue_->Add(q->metadata.namespace_);
           }});
  quotas.Start();
  synced_.push_back([&quotas](std::chrono::milliseconds t) { return quotas.WaitForSync(t); });
  Watch<api::PersistentVolumeClaim>();
  Watch<api::Pod>();
  Watch<api::Service>();
  Watch<api::ConfigMap>();
  Watch<api::Secret>();
  Watch<api::ReplicationController>();
  for (const auto& synced : synced_) {
    if (!synced(sync_timeout)) {
      Stop();
      return UnavailableError("resourcequota controller: caches did not fill in time");
    }
  }
  workers_.Start(
      *queue_, options_.workers, "resourcequota",
      [this](const std::string& ns) { return Sync(ns); }, "resourcequota-controller");
  return OkStatus();
}

void Controller::Stop() {
  if (informers_) informers_->Stop();
  workers_.Stop();
}

}  // namespace kvol::controller::resourcequota
