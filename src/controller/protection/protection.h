// The protection controllers: a claim keeps its kubernetes.io/pvc-protection finalizer while a
// pod that has not finished (not Succeeded or Failed) uses it, and a volume keeps
// kubernetes.io/pv-protection while it is Bound, so that deleting either leaves it Terminating
// until it is no longer needed, as in Kubernetes. Objects that lack the finalizer (created
// before admission added it) get it.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/core.h"
#include "client/client.h"
#include "client/informer.h"
#include "client/workqueue.h"
#include "client/pod_claims.h"
#include "os/clock.h"

namespace kvol::controller::protection {

using client::PodClaimIndex;

struct Options {
  int workers = 2;
  os::Clock* clock = &os::RealClock();
  // The process's informers, shared with its other controllers; its own when null.
  client::SharedInformers* informers = nullptr;
};

class Controller {
 public:
  Controller(client::Client& client, Options options = {});
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();

  // One pass for one object; tests call these with the pods given through StorePod.
  Status SyncClaim(const api::PersistentVolumeClaim& claim);
  Status SyncVolume(const api::PersistentVolume& volume);
  void StorePod(const api::Pod& pod);

 private:
  // A pod in the index or, to be sure before removing the finalizer, on the server uses it.
  StatusOr<bool> ClaimInUse(const api::PersistentVolumeClaim& claim);

  client::Client& client_;
  Options options_;
  PodClaimIndex pods_;

  std::unique_ptr<client::WorkQueue> claim_queue_, volume_queue_;
  std::unique_ptr<client::InformerScope> informers_;
  client::Informer<api::PersistentVolumeClaim>* claims_ = nullptr;
  client::Informer<api::PersistentVolume>* volumes_ = nullptr;
  std::vector<std::thread> threads_;
};

}  // namespace kvol::controller::protection
