#include "scheduler/scheduler.h"

#include <algorithm>

#include "api/node_selector.h"
#include "api/pod_status.h"
#include "api/well_known.h"
#include "base/thread.h"
#include "client/event_recorder.h"
#include "client/worker.h"

namespace kvol::scheduler {
namespace {

using client::ApiStatus;

// Sets PodScheduled=False, reason Unschedulable, with `message`; false if the pod says so
// already.
bool SetUnschedulable(api::Pod& pod, std::string_view message, const api::Time& now) {
  if (pod.status.phase.empty()) pod.status.phase = "Pending";
  return api::UpdatePodCondition(pod.status,
                                 {.type = "PodScheduled",
                                  .status = "False",
                                  .reason = "Unschedulable",
                                  .message = std::string(message)},
                                 now);
}

}  // namespace

Scheduler::Scheduler(client::Client& client, EventSink events, Options options)
    : client_(client), events_(std::move(events)), options_(options) {}

Scheduler::~Scheduler() { Stop(); }

bool Scheduler::Wants(const api::Pod& pod) {
  return pod.spec.node_name.empty() && !pod.metadata.deletion_timestamp &&
         (pod.spec.scheduler_name.empty() || pod.spec.scheduler_name == kDefaultSchedulerName) &&
         !client::PodIsShutDown(pod);
}

void Scheduler::Event(const api::Pod& pod, std::string_view type, std::string_view reason,
                      std::string message) {
  if (events_) events_(client::ReferenceTo(pod), type, reason, std::move(message));
}

void Scheduler::StorePod(const api::Pod& pod) {
  const std::string key = client::KeyOf(pod);
  cache_.UpsertPod(pod);
  std::lock_guard lock(mu_);
  if (Wants(pod)) {
    pending_[key] = std::make_shared<const api::Pod>(pod);
    users_.Upsert(pod);
  } else {
    pending_.erase(key);
    assumed_.erase(key);
    unschedulable_.erase(key);
    users_.Remove(pod.metadata.namespace_, pod.metadata.name);
  }
}

void Scheduler::ForgetPod(const std::string& key) {
  cache_.RemovePod(key);
  auto [ns, name] = client::SplitKey(key);
  {
    std::lock_guard lock(mu_);
    pending_.erase(key);
    assumed_.erase(key);
    unschedulable_.erase(key);
    users_.Remove(ns, name);
  }
  // What it held on its node (a CSI driver's volume count) is free for a pod that waits.
  RequeueUnschedulable();
}

void Scheduler::Requeue(const std::string& key) {
  if (queue_) queue_->Add(key);
}

void Scheduler::RequeueUnschedulable() {
  std::vector<std::string> keys;
  {
    std::lock_guard lock(mu_);
    keys.assign(unschedulable_.begin(), unschedulable_.end());
  }
  for (const auto& k : keys) Requeue(k);
}

void Scheduler::RequeueUsers(const std::string& claim_key) {
  for (const auto& pod : users_.PodsUsing(claim_key)) Requeue(client::KeyOf(*pod));
}

Status Scheduler::SyncPod(const std::string& key) {
  PodPtr pod;
  {
    std::lock_guard lock(mu_);
    auto it = pending_.find(key);
    if (it == pending_.end()) return OkStatus();  // placed, or gone
    pod = it->second;
  }
  return Place(pod);
}

Status Scheduler::Place(const PodPtr& pod) {
  const std::string key = client::KeyOf(*pod);
  std::optional<Assumed> assumed;
  {
    std::lock_guard lock(mu_);
    auto it = assumed_.find(key);
    if (it != assumed_.end() && it->second.uid == pod->metadata.uid) assumed = it->second;
  }
  if (assumed) {
    // Waiting for the pod's claims to be bound on the node chosen.
    std::string why;
    switch (CheckBindings(*pod, *assumed, &why)) {
      case Readiness::kReady:
        return Bind(pod, assumed->node);
      case Readiness::kWaiting: {
        const auto now = options_.clock->Monotonic();
        if (now < assumed->deadline) {
          if (queue_) queue_->AddAfter(key, assumed->deadline - now);
          return OkStatus();
        }
        why = "context deadline exceeded";
        break;
      }
      case Readiness::kFailed:
        break;
    }
    {
      std::lock_guard lock(mu_);
      assumed_.erase(key);
    }
    Event(*pod, "Warning", "FailedScheduling",
          "running PreBind plugin \"VolumeBinding\": binding volumes: " + why);
    // Schedule afresh below.
  }

  Decision d = Schedule(*pod, cache_);
  if (d.node.empty()) {
    {
      std::lock_guard lock(mu_);
      unschedulable_.insert(key);
    }
    return MarkUnschedulable(pod, d.message);
  }
  {
    std::lock_guard lock(mu_);
    unschedulable_.erase(key);
  }
  if (d.plan.empty()) return Bind(pod, d.node);
  if (Status s = Prepare(d.plan, d.node); !s.ok()) return s;
  Assumed a{pod->metadata.uid,
            d.node,
            {},
            options_.clock->Monotonic() +
                std::chrono::duration_cast<os::MonoTime::duration>(options_.bind_timeout)};
  for (const auto& c : d.plan.provisions) a.provisions.insert(client::KeyOf(*c));
  {
    std::lock_guard lock(mu_);
    assumed_[key] = a;
  }
  // Claim and volume events bring the pod back; this makes sure the wait ends.
  if (queue_) queue_->AddAfter(key, a.deadline - options_.clock->Monotonic());
  return OkStatus();
}

Status Scheduler::Prepare(const VolumePlan& plan, const std::string& node) {
  for (const auto& [claim, volume] : plan.bindings) {
    if (volume->spec.claim_ref) continue;  // pre-bound to this claim already
    api::PersistentVolume next = *volume;
    next.spec.claim_ref = client::ReferenceTo(*claim);
    next.metadata.annotations[std::string(api::kAnnBoundByController)] = "yes";
    auto written = client_.resource<api::PersistentVolume>().Update(next);
    if (!written.ok()) return ApiStatus(written.error());
    cache_.UpsertVolume(*written);
  }
  for (const auto& claim : plan.provisions) {
    auto& anns = claim->metadata.annotations;
    auto it = anns.find(std::string(api::kAnnSelectedNode));
    if (it != anns.end() && it->second == node) continue;
    api::PersistentVolumeClaim next = *claim;
    next.metadata.annotations[std::string(api::kAnnSelectedNode)] = node;
    auto written = client_.resource<api::PersistentVolumeClaim>().Update(next);
    if (!written.ok()) return ApiStatus(written.error());
    cache_.UpsertClaim(*written);
  }
  return OkStatus();
}

Scheduler::Readiness Scheduler::CheckBindings(const api::Pod& pod, const Assumed& a,
                                              std::string* why) const {
  NodePtr node = cache_.Node(a.node);
  if (!node) {
    *why = "node \"" + a.node + "\" not found";
    return Readiness::kFailed;
  }
  Readiness out = Readiness::kReady;
  for (const auto& key : client::ClaimKeysOfPod(pod)) {
    ClaimPtr claim = cache_.Claim(key);
    const std::string name = key.substr(key.find('/') + 1);
    if (!claim) {
      *why = "persistentvolumeclaim \"" + name + "\" not found";
      return Readiness::kFailed;
    }
    if (claim->spec.volume_name.empty() || claim->status.phase != "Bound") {
      if (a.provisions.count(key)) {
        auto sel = claim->metadata.annotations.find(std::string(api::kAnnSelectedNode));
        if (sel == claim->metadata.annotations.end() || sel->second != a.node) {
          *why = "provisioning failed for PVC \"" + name + "\"";
          return Readiness::kFailed;
        }
      }
      out = Readiness::kWaiting;
      continue;
    }
    VolumePtr v = cache_.Volume(claim->spec.volume_name);
    if (!v) {
      out = Readiness::kWaiting;
      continue;
    }
    if (!api::PersistentVolumeFitsNode(v->spec, *node)) {
      *why = "pv \"" + v->metadata.name + "\" node affinity doesn't match node \"" + a.node + "\"";
      return Readiness::kFailed;
    }
  }
  return out;
}

Status Scheduler::Bind(const PodPtr& pod, const std::string& node) {
  api::Binding b;
  b.metadata.namespace_ = pod->metadata.namespace_;
  b.metadata.name = pod->metadata.name;
  b.metadata.uid = pod->metadata.uid;
  b.target.kind = "Node";
  b.target.name = node;
  if (auto e = client_.BindPod(b)) {
    if (api::IsNotFound(*e)) return OkStatus();  // gone
    return ApiStatus(*e);  // a Conflict: the pod has a node already, or is going
  }
  // Placed: no longer this scheduler's, and counted on its node until the informer says more.
  api::Pod placed = *pod;
  placed.spec.node_name = node;
  StorePod(placed);
  Event(*pod, "Normal", "Scheduled",
        "Successfully assigned " + client::KeyOf(*pod) + " to " + node);
  return OkStatus();
}

Status Scheduler::MarkUnschedulable(const PodPtr& pod, const std::string& message) {
  api::Pod next = *pod;
  if (!SetUnschedulable(next, message, api::Time::FromTimePoint(options_.clock->Now()))) {
    return OkStatus();  // said so already
  }
  Event(*pod, "Warning", "FailedScheduling", message);
  auto written = client_.resource<api::Pod>().UpdateStatus(next);
  if (!written.ok()) {
    if (api::IsNotFound(written.error())) return OkStatus();
    return ApiStatus(written.error());
  }
  StorePod(*written);
  return OkStatus();
}

Status Scheduler::Start(std::chrono::milliseconds sync_timeout) {
  stopping_ = false;
  queue_ = std::make_unique<client::WorkQueue>(*options_.clock, client::WorkQueueOptions{.name = "scheduler"});
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  auto& nodes = informers_->Handle<api::Node>(
      {.on_add =
           [this](const auto& n) {
             cache_.UpsertNode(*n);
             RequeueUnschedulable();
           },
       .on_update =
           [this](const auto&, const auto& n) {
             cache_.UpsertNode(*n);
             RequeueUnschedulable();
           },
       .on_delete = [this](const auto& n) { cache_.RemoveNode(n->metadata.name); }});
  auto on_claim = [this](const std::shared_ptr<const api::PersistentVolumeClaim>& c) {
    cache_.UpsertClaim(c);
    RequeueUsers(client::KeyOf(*c));
  };
  auto& claims = informers_->Handle<api::PersistentVolumeClaim>(
      {.on_add = on_claim,
       .on_update = [on_claim](const auto&, const auto& c) { on_claim(c); },
       .on_delete =
           [this](const auto& c) {
             cache_.RemoveClaim(client::KeyOf(*c));
             RequeueUsers(client::KeyOf(*c));
           }});
  auto on_volume = [this](const std::shared_ptr<const api::PersistentVolume>& v) {
    cache_.UpsertVolume(v);
    if (v->spec.claim_ref) {
      RequeueUsers(volume::binding::ClaimRefKey(*v));
    } else {
      RequeueUnschedulable();  // a free volume may be what a pod waits for
    }
  };
  auto& volumes = informers_->Handle<api::PersistentVolume>(
      {.on_add = on_volume,
       .on_update = [on_volume](const auto&, const auto& v) { on_volume(v); },
       .on_delete = [this](const auto& v) { cache_.RemoveVolume(v->metadata.name); }});
  auto on_class = [this](const std::shared_ptr<const api::StorageClass>& c) {
    cache_.UpsertClass(*c);
    RequeueUnschedulable();
  };
  auto& classes = informers_->Handle<api::StorageClass>(
      {.on_add = on_class,
       .on_update = [on_class](const auto&, const auto& c) { on_class(c); },
       .on_delete = [this](const auto& c) { cache_.RemoveClass(c->metadata.name); }});

  auto on_csinode = [this](const std::shared_ptr<const api::CSINode>& c) {
    cache_.UpsertCSINode(*c);
    RequeueUnschedulable();  // a driver registered, or its limit grew
  };
  auto& csinodes = informers_->Handle<api::CSINode>(
      {.on_add = on_csinode,
       .on_update = [on_csinode](const auto&, const auto& c) { on_csinode(c); },
       .on_delete = [this](const auto& c) { cache_.RemoveCSINode(c->metadata.name); }});

  auto on_driver = [this](const std::shared_ptr<const api::CSIDriver>& d) {
    cache_.capacities().UpsertDriver(*d);
    RequeueUnschedulable();
  };
  auto& drivers = informers_->Handle<api::CSIDriver>(
      {.on_add = on_driver,
       .on_update = [on_driver](const auto&, const auto& d) { on_driver(d); },
       .on_delete = [this](const auto& d) { cache_.capacities().RemoveDriver(d->metadata.name); }});
  auto on_capacity = [this](const std::shared_ptr<const api::CSIStorageCapacity>& c) {
    cache_.capacities().Upsert(*c);
    RequeueUnschedulable();  // room appeared, perhaps
  };
  auto& capacities = informers_->Handle<api::CSIStorageCapacity>(
      {.on_add = on_capacity,
       .on_update = [on_capacity](const auto&, const auto& c) { on_capacity(c); },
       .on_delete = [this](const auto& c) { cache_.capacities().Remove(client::KeyOf(*c)); }});

  // Everything a decision reads fills before the pods arrive to be placed: the pod handlers
  // are added once the rest is synced (a shared pod informer already running hands them every
  // cached pod then).
  classes.Start();
  csinodes.Start();
  drivers.Start();
  capacities.Start();
  nodes.Start();
  volumes.Start();
  claims.Start();
  bool filled = classes.WaitForSync(sync_timeout) && csinodes.WaitForSync(sync_timeout) &&
                drivers.WaitForSync(sync_timeout) && capacities.WaitForSync(sync_timeout) &&
                nodes.WaitForSync(sync_timeout) && volumes.WaitForSync(sync_timeout) &&
                claims.WaitForSync(sync_timeout);
  if (filled) {
    auto on_pod = [this](const std::shared_ptr<const api::Pod>& p) {
      StorePod(*p);
      if (Wants(*p)) Requeue(client::KeyOf(*p));
    };
    auto& pods = informers_->Handle<api::Pod>(
        {.on_add = on_pod,
         .on_update = [on_pod](const auto&, const auto& p) { on_pod(p); },
         .on_delete = [this](const auto& p) { ForgetPod(client::KeyOf(*p)); }});
    pods.Start();
    filled = pods.WaitForSync(sync_timeout);
  }
  if (!filled) {
    Stop();
    return UnavailableError("scheduler: caches did not fill in time");
  }
  threads_.emplace_back([this] {
    SetThreadName("scheduler");
    client::RunWorker(
        *queue_, [this](const std::string& key) { return SyncPod(key); }, "scheduler");
  });
  threads_.emplace_back([this] {
    SetThreadName("sched-retry");
    std::unique_lock lock(stop_mu_);
    while (!stopping_) {
      options_.clock->WaitFor(stop_cv_, lock, options_.retry_unschedulable);
      if (stopping_) break;
      lock.unlock();
      RequeueUnschedulable();
      lock.lock();
    }
  });
  return OkStatus();
}

void Scheduler::Stop() {
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (informers_) informers_->Stop();  // no handler runs after this
  if (queue_) queue_->ShutDown();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

}  // namespace kvol::scheduler
