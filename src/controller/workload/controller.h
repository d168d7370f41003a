// The workload controllers: apps/v1 Deployments and StatefulSets turned into pods (and a
// StatefulSet's claims), following plan.h's decisions. Level-triggered: any change to a
// workload or to a pod it owns brings the workload back to its worker, which compares what
// exists with what should and writes the difference. A workload being deleted is left alone:
// the garbage collector deletes its pods (or orphans them), as in Kubernetes; a StatefulSet's
// claims, which it does not own, are kept.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/generic.h"
#include "client/client.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "client/workqueue.h"
#include "controller/workload/plan.h"
#include "os/clock.h"

namespace kvol::controller::workload {

struct Options {
  int workers = 2;
  os::Clock* clock = &os::RealClock();
  // The process's informers, shared with its other controllers; its own when null.
  client::SharedInformers* informers = nullptr;
};

class Controller {
 public:
  // Events about Deployments go to `deployment_events` (as the replicaset-controller words
  // them), about StatefulSets to `statefulset_events`.
  Controller(client::Client& client, client::EventSink deployment_events,
             client::EventSink statefulset_events, Options options = {});
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();

  // One pass for "Deployment/<ns>/<name>" or "StatefulSet/<ns>/<name>".
  Status Sync(const std::string& key);

 private:
  std::vector<PodPtr> PodsOf(const std::string& owner_key) const;
  // What Apply made and removed, for `owner_key`'s next passes: see expectations_.
  struct Made {
    std::vector<std::string> created, deleted;
  };
  template <class T>
  StatusOr<Made> Apply(const T& owner, const Plan& plan, const client::EventSink& events);
  // Removes from `owned` the pods this controller deleted and the cache still shows, and
  // returns how many pods it created that the cache does not show yet.
  int64_t ApplyExpectations(const std::string& owner_key, std::vector<PodPtr>& owned);
  void Expect(const std::string& owner_key, const Made& made);

  client::Client& client_;
  const client::EventSink deployment_events_, statefulset_events_;
  const Options options_;
  std::unique_ptr<client::WorkQueue> queue_;
  std::unique_ptr<client::InformerScope> informers_;
  client::Informer<api::Deployment>* deployments_ = nullptr;
  client::Informer<api::StatefulSet>* statefulsets_ = nullptr;
  client::Informer<api::Pod>* pods_ = nullptr;
  client::Informer<api::PersistentVolumeClaim>* claims_ = nullptr;
  std::vector<std::thread> threads_;

  // A Deployment's creations and deletions that the pod cache has not shown yet, by owner key
  // and pod name, with when they were made; forgotten once seen or after a minute. Without
  // them a pass running before the cache catches up would create (or delete) pods twice.
  struct Expectations {
    std::map<std::string, os::MonoTime> created, deleted;
  };
  std::mutex expectations_mu_;
  std::map<std::string, Expectations> expectations_;  // guarded by expectations_mu_
};

}  // namespace kvol::controller::workload
