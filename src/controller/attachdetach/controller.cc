#include "controller/attachdetach/controller.h"

#include <algorithm>

#include "api/api_error.h"
#include "base/log.h"
#include "base/thread.h"
#include "client/worker.h"
#include "controller/attachdetach/metrics.h"
#include "metrics/storage_operations.h"

namespace kvol::controller::attachdetach {
namespace {

std::string OperationKey(const std::string& unique, const std::string& node) {
  return unique + "@" + node;
}

// "<plugin>/<volume>" -> {plugin, volume}: plugin names have slashes, volume names none.
std::pair<std::string, std::string> SplitUnique(const std::string& unique) {
  const size_t slash = unique.rfind('/');
  if (slash == std::string::npos) return {std::string(), unique};
  return {unique.substr(0, slash), unique.substr(slash + 1)};
}

bool Managed(const api::Node& node) {
  auto it = node.metadata.annotations.find(std::string(api::kAnnControllerManagedAttachDetach));
  return it != node.metadata.annotations.end() && it->second == "true";
}

api::ObjectReference PodReference(const PodRef& pod) {
  api::ObjectReference ref;
  ref.api_version = "v1";
  ref.kind = "Pod";
  ref.namespace_ = pod.ns;
  ref.name = pod.name;
  ref.uid = pod.uid;
  return ref;
}

}  // namespace

// The operations the reconciler starts, on the executor: one per volume and node at a time.
class Controller::Ops final : public Operations {
 public:
  explicit Ops(Controller& c) : c_(c) {}

  bool IsPending(const std::string& unique, const std::string& node) const override {
    if (node.empty()) return c_.executor_->AnyPending(unique + "@");
    return c_.executor_->IsPending(OperationKey(unique, node));
  }

  void Attach(const VolumeToAttach& v, const std::string& node) override {
    Attacher* attacher = v.attacher;
    const std::string plugin(attacher->PluginName());
    auto device = std::make_shared<std::string>();
    const bool queued = c_.executor_->Run(
        OperationKey(v.unique_name, node),
        [this, attacher, v, node, plugin, device]() -> Status {
          // Recorded before it starts: from now on the volume may be attached there.
          c_.actual_.MarkUncertain(v.unique_name, plugin, v.spec.Name(), node);
          metrics::OperationTimer timer(plugin, "volume_attach");
          auto attached = attacher->Attach(v.spec, node);
          timer.Done(attached.ok());
          KVOL_ASSIGN_OR_RETURN(*device, std::move(attached));
          return OkStatus();
        },
        [this, v, node, plugin, device](Status s) {
          if (s.ok()) {
            c_.actual_.MarkAttached(v.unique_name, plugin, v.spec.Name(), node, *device);
            for (const auto& pod : v.pods) {
              PodEvent(pod, "Normal", "SuccessfulAttachVolume",
                       "AttachVolume.Attach succeeded for volume \"" + v.spec.Name() + "\" ");
            }
            return;
          }
          c_.actual_.MarkUncertain(v.unique_name, plugin, v.spec.Name(), node);
          for (const auto& pod : v.pods) {
            PodEvent(
                pod, "Warning", "FailedAttachVolume",
                "AttachVolume.Attach failed for volume \"" + v.spec.Name() + "\" : " + s.message());
          }
        },
        "attach");
    (void)queued;  // a backoff not yet over: the pass after it tries again
  }

  void Detach(const std::string& unique, const ActualVolume& v, const std::string& node,
              bool verify_safe) override {
    Attacher* attacher = c_.AttacherNamed(v.plugin);
    if (!attacher) {
      log::Warn("DetachVolume.Detach failed for volume \"" + unique + "\" from node " + node +
                ": no attacher for volume plugin " + v.plugin);
      c_.actual_.KeepAttached(unique, node);
      return;
    }
    const std::string volume_name = v.volume_name;
    c_.executor_->Run(
        OperationKey(unique, node),
        [this, attacher, unique, volume_name, node, verify_safe]() -> Status {
          if (verify_safe) KVOL_RETURN_IF_ERROR(VerifySafeToDetach(unique, node));
          metrics::OperationTimer timer(std::string(attacher->PluginName()), "volume_detach");
          Status s = attacher->Detach(volume_name, node);
          timer.Done(s.ok());
          return s;
        },
        [this, unique, node](Status s) {
          if (s.ok()) {
            c_.actual_.MarkDetached(unique, node);
            log::Info("DetachVolume.Detach succeeded for volume \"" + unique + "\" from node " +
                      node);
            return;
          }
          log::Warn("DetachVolume.Detach failed for volume \"" + unique + "\" from node " + node +
                    ": " + s.message());
          c_.actual_.KeepAttached(unique, node);  // reported attached again
        },
        "detach");
  }

  bool UpdateNodeStatus(const std::string& node) override { return c_.WriteNodeStatus(node); }

  void PodEvent(const PodRef& pod, std::string_view type, std::string_view reason,
                std::string message) override {
    if (c_.events_) c_.events_(PodReference(pod), type, reason, std::move(message));
  }

 private:
  // The node as the API server has it now must not list the volume in use.
  Status VerifySafeToDetach(const std::string& unique, const std::string& node) {
    auto n = c_.client_.resource<api::Node>().Get("", node);
    if (!n.ok()) {
      if (api::IsNotFound(n.error())) return OkStatus();
      return client::ApiStatus(n.error());
    }
    const auto& in_use = n->status.volumes_in_use;
    if (std::find(in_use.begin(), in_use.end(), unique) != in_use.end()) {
      return FailedPreconditionError("volume is still in use by node " + node);
    }
    return OkStatus();
  }

  Controller& c_;
};

Controller::Controller(client::Client& client, client::EventSink events, Options options)
    : client_(client), events_(std::move(events)), options_(std::move(options)) {}

Controller::~Controller() { Stop(); }

void Controller::Kick() {
  {
    std::lock_guard lock(mu_);
    kicked_ = true;
  }
  cv_.notify_all();
}

Attacher* Controller::AttacherFor(const volume::Spec& spec) const {
  if (csi_->NeedsAttach(spec)) return csi_.get();
  return plugin_attachers_ ? plugin_attachers_->For(spec) : nullptr;
}

Attacher* Controller::AttacherNamed(std::string_view plugin) const {
  if (plugin == kCsiPluginName) return csi_.get();
  return plugin_attachers_ ? plugin_attachers_->Named(plugin) : nullptr;
}

NodeInfo Controller::InfoOf(const std::string& name) const {
  NodeInfo info;
  auto node = nodes_->Get("", name);
  if (!node) return info;
  info.exists = true;
  info.managed = Managed(*node);
  for (const auto& c : node->status.conditions) {
    if (c.type == "Ready") info.ready = c.status == "True";
  }
  for (const auto& t : node->spec.taints) {
    if (t.key == kOutOfServiceTaint) info.out_of_service = true;
  }
  info.volumes_in_use.insert(node->status.volumes_in_use.begin(),
                             node->status.volumes_in_use.end());
  return info;
}

bool Controller::WriteNodeStatus(const std::string& node) {
  if (!nodes_->Get("", node)) return true;  // gone: nothing to report on
  const std::vector<api::AttachedVolume> want = actual_.ReportedAttached(node);
  auto written = client::Mutate<api::Node>(
      client_.resource<api::Node>(), "", node,
      [&](api::Node& n) {
        const auto& have = n.status.volumes_attached;
        const bool same =
            have.size() == want.size() &&
            std::equal(have.begin(), have.end(), want.begin(), [](const auto& a, const auto& b) {
              return a.name == b.name && a.device_path == b.device_path;
            });
        if (same) return false;
        n.status.volumes_attached = want;
        return true;
      },
      /*status=*/true);
  if (written.ok() || api::IsNotFound(written.error())) return true;
  log::Warn("attachdetach-controller: updating status.volumesAttached of node " + node + ": " +
            written.error().message);
  actual_.MarkNodeChanged(node);
  return false;
}

void Controller::Reconstruct() {
  for (const auto& va : attachments_->List()) {
    if (!va->spec.source.persistent_volume_name) continue;
    const std::string& node = va->spec.node_name;
    auto n = nodes_->Get("", node);
    if (!n || !Managed(*n)) continue;
    const std::string& pv = *va->spec.source.persistent_volume_name;
    const std::string unique = volume::UniqueVolumeName(kCsiPluginName, pv);
    if (va->status && va->status->attached && !va->metadata.deletion_timestamp) {
      actual_.MarkAttached(unique, std::string(kCsiPluginName), pv, node, "");
    } else {
      actual_.MarkUncertain(unique, std::string(kCsiPluginName), pv, node);
    }
  }
  // Other plugins' attachments are known from what each node reports; CSI ones from their
  // VolumeAttachments only.
  for (const auto& n : nodes_->List()) {
    if (!Managed(*n)) continue;
    for (const auto& av : n->status.volumes_attached) {
      auto [plugin, volume_name] = SplitUnique(av.name);
      if (plugin == kCsiPluginName || plugin.empty()) continue;
      actual_.MarkAttached(av.name, plugin, volume_name, n->metadata.name, av.device_path);
    }
    // Each node's report is brought in line with what is found: an attachment made just before
    // a crash may not be listed yet, and one deleted meanwhile still is.
    actual_.MarkNodeChanged(n->metadata.name);
  }
}

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  auto kick_on = [this]<class T>(client::Informer<T>*& slot) {
    auto kick = [this](const auto&) { Kick(); };
    slot = &informers_->Handle<T>({.on_add = kick,
                                   .on_update = [this](const auto&, const auto&) { Kick(); },
                                   .on_delete = kick});
  };
  kick_on(nodes_);
  kick_on(drivers_);
  // Pods are indexed by the claims they use: a claim or volume no pod uses changes nothing to
  // attach or detach, so its changes wake nothing.
  pods_ = &informers_->Handle<api::Pod>(
      {.on_add =
           [this](const auto& p) {
             pod_claims_.Upsert(p);
             Kick();
           },
       .on_update =
           [this](const auto&, const auto& p) {
             pod_claims_.Upsert(p);
             Kick();
           },
       .on_delete =
           [this](const auto& p) {
             pod_claims_.Remove(p->metadata.namespace_, p->metadata.name);
             Kick();
           }});
  claims_ = &informers_->Handle<api::PersistentVolumeClaim>(
      client::WhenClaimUsed(pod_claims_, [this] { Kick(); }));
  volumes_ = &informers_->Handle<api::PersistentVolume>(
      client::WhenVolumeUsed(pod_claims_, [this] { Kick(); }));
  attachments_ = &informers_->Get<api::VolumeAttachment>();
  csi_ = std::make_unique<CsiAttacher>(
      client_, *attachments_, [this](const std::string& name) { return drivers_->Get("", name); },
      options_.csi);
  if (options_.plugins) plugin_attachers_ = std::make_unique<PluginAttachers>(*options_.plugins);
  informers_->Handle<api::VolumeAttachment>(
      {.on_add =
           [this](const auto&) {
             csi_->Changed();
             Kick();
           },
       .on_update =
           [this](const auto&, const auto&) {
             csi_->Changed();
             Kick();
           },
       .on_delete =
           [this](const auto& va) {
             csi_->Changed();
             // Gone, whoever deleted it: attached there no more (attached again if wanted).
             if (va->spec.source.persistent_volume_name) {
               actual_.MarkDetached(volume::UniqueVolumeName(
                                        kCsiPluginName, *va->spec.source.persistent_volume_name),
                                    va->spec.node_name);
             }
             Kick();
           }});
  pods_->Start();
  nodes_->Start();
  claims_->Start();
  volumes_->Start();
  attachments_->Start();
  drivers_->Start();
  const bool synced = pods_->WaitForSync(sync_timeout) && nodes_->WaitForSync(sync_timeout) &&
                      claims_->WaitForSync(sync_timeout) && volumes_->WaitForSync(sync_timeout) &&
                      attachments_->WaitForSync(sync_timeout) &&
                      drivers_->WaitForSync(sync_timeout);
  if (!synced) {
    Stop();
    return UnavailableError("attachdetach-controller: caches did not fill in time");
  }
  Reconstruct();
  executor_ = std::make_unique<volume::util::OperationExecutor>(
      *options_.clock, volume::util::ExecutorOptions{.max_threads = options_.max_operations,
                                                     .on_finished = [this] { Kick(); }});
  ops_ = std::make_unique<Ops>(*this);
  reconciler_ = std::make_unique<Reconciler>(
      actual_, *ops_, *options_.clock, [this](const std::string& n) { return InfoOf(n); },
      options_.reconciler);
  collector_ = std::make_shared<metrics::Collector>([this] {
    PluginCounts desired;
    {
      std::lock_guard lock(mu_);
      desired = desired_counts_;
    }
    return std::vector{TotalVolumes(desired, CountActual(actual_.Volumes()))};
  });
  metrics::AddCollector(collector_);
  thread_ = std::thread([this] {
    SetThreadName("attachdetach");
    Loop();
  });
  return OkStatus();
}

void Controller::Loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    kicked_ = false;
    lock.unlock();
    ReconcileOnce();
    lock.lock();
    if (stopping_ || kicked_) continue;
    os::MonoTime next = options_.clock->Monotonic() +
                        std::chrono::duration_cast<os::MonoTime::duration>(options_.period);
    if (auto retry = executor_->NextRetry(); retry && *retry < next) next = *retry;
    if (auto due = reconciler_->NextDeadline(); due && *due < next) next = *due;
    options_.clock->WaitUntil(cv_, lock, next);
  }
}

void Controller::ReconcileOnce() {
  PopulateSources sources;
  sources.pods = pods_->List();
  sources.managed = [this](const std::string& node) {
    auto n = nodes_->Get("", node);
    return n && Managed(*n);
  };
  sources.claim = [this](const std::string& ns, const std::string& name) {
    return claims_->Get(ns, name);
  };
  sources.volume = [this](const std::string& name) { return volumes_->Get("", name); };
  sources.attacher_for = [this](const volume::Spec& spec) { return AttacherFor(spec); };
  const DesiredState desired = Populate(sources);
  {
    std::lock_guard lock(mu_);
    desired_counts_ = CountDesired(desired);
  }
  reconciler_->Reconcile(desired);
  for (const auto& node : actual_.TakeChangedNodes()) WriteNodeStatus(node);
}

void Controller::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (collector_) collector_->Detach();
  if (thread_.joinable()) thread_.join();
  if (informers_) informers_->Stop();
  if (csi_) csi_->Cancel();  // operations waiting on attachments give up
  executor_.reset();         // waits for the operations in flight
}

}  // namespace kvol::controller::attachdetach
