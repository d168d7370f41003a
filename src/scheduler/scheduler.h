// The scheduler: gives every pod without spec.nodeName (and with schedulerName
// "default-scheduler" or none) a node, as Kubernetes' kube-scheduler does for what kvol models
// (algorithm.h says which rules).
//
// One pod at a time, level-triggered:
// - a pod that fits nowhere gets condition PodScheduled=False, reason Unschedulable, with
//   Kubernetes' message, and a FailedScheduling event; it is tried again when a node, volume,
//   claim or class changes (and every `retry_unschedulable` regardless);
// - a pod that fits and needs nothing done to its volumes is bound at once (spec.nodeName,
//   PodScheduled=True, a Scheduled event);
// - a pod with unbound WaitForFirstConsumer claims first has them sent to the node: a free
//   volume chosen on the node gets the claim in spec.claimRef (the PV controller completes the
//   binding), a claim to provision gets the volume.kubernetes.io/selected-node annotation (its
//   provisioner makes the volume there). The pod is bound once every claim is Bound to a volume
//   the node can use; if that does not happen within `bind_timeout`, or provisioning gives the
//   claim back (the annotation is removed), the pod is scheduled afresh.
// The decision in flight lives in memory only: after a restart the pod is scheduled again,
// and what was already written (pre-bound volumes, selected nodes) steers it to the same node.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api/core.h"
#include "client/client.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "client/workqueue.h"
#include "client/pod_claims.h"
#include "os/clock.h"
#include "scheduler/algorithm.h"
#include "scheduler/cache.h"

namespace kvol::scheduler {

using client::EventSink;

inline constexpr std::string_view kDefaultSchedulerName = "default-scheduler";

struct Options {
  std::chrono::seconds bind_timeout{600};  // Kubernetes' default
  std::chrono::seconds retry_unschedulable{60};
  os::Clock* clock = &os::RealClock();
  // The process's informers, shared with its controllers; its own when null.
  client::SharedInformers* informers = nullptr;
};

class Scheduler {
 public:
  Scheduler(client::Client& client, EventSink events, Options options = {});
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Starts informers (pods, nodes, claims, volumes, classes) and the worker; Unavailable if
  // the caches do not fill within `sync_timeout`.
  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();

  // One pass for one pod, as the worker runs it.
  Status SyncPod(const std::string& key);

  // The scheduler's view, filled by the informers once started; tests fill it directly.
  Cache& cache() { return cache_; }
  void StorePod(const api::Pod& pod);
  void ForgetPod(const std::string& key);

  // Whether `pod` is this scheduler's to place.
  static bool Wants(const api::Pod& pod);

 private:
  using PodPtr = std::shared_ptr<const api::Pod>;
  struct Assumed {
    std::string uid;
    std::string node;
    std::set<std::string> provisions;  // claim keys sent to the node's provisioner
    os::MonoTime deadline;
  };
  enum class Readiness { kReady, kWaiting, kFailed };

  Status Place(const PodPtr& pod);
  // Writes what the plan needs (pre-bound volumes, selected nodes).
  Status Prepare(const VolumePlan& plan, const std::string& node);
  Readiness CheckBindings(const api::Pod& pod, const Assumed& a, std::string* why) const;
  Status Bind(const PodPtr& pod, const std::string& node);
  Status MarkUnschedulable(const PodPtr& pod, const std::string& message);
  void Requeue(const std::string& key);
  void RequeueUnschedulable();
  void RequeueUsers(const std::string& claim_key);
  void Event(const api::Pod& pod, std::string_view type, std::string_view reason,
             std::string message);

  client::Client& client_;
  EventSink events_;
  Options options_;
  Cache cache_;

  mutable std::mutex mu_;
  std::unordered_map<std::string, PodPtr> pending_;  // pods to place, by key
  std::unordered_map<std::string, Assumed> assumed_;
  std::set<std::string> unschedulable_;
  client::PodClaimIndex users_;  // which pending pods use which claims

  std::unique_ptr<client::WorkQueue> queue_;
  std::unique_ptr<client::InformerScope> informers_;
  std::vector<std::thread> threads_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  std::atomic<bool> stopping_{false};
};

}  // namespace kvol::scheduler
