// The ephemeral volume controller, as Kubernetes runs it: for each generic ephemeral volume of a
// pod (spec.volumes[].ephemeral), the claim "<pod>-<volume>" is made from the volume's
// volumeClaimTemplate, owned by the pod (controller, blockOwnerDeletion), so that it is bound
// and provisioned like any claim and goes with the pod through the garbage collector. A claim
// of that name the pod does not own is never used: the pod gets a FailedBinding event saying so.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "api/core.h"
#include "client/client.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "client/worker.h"
#include "client/workqueue.h"
#include "os/clock.h"

namespace kvol::controller::ephemeral {

struct Options {
  int workers = 2;
  os::Clock* clock = &os::RealClock();
  // Events about pods, from the "ephemeral_volume" component.
  client::EventSink events;
  // The process's informers, shared with its other controllers; its own when null.
  client::SharedInformers* informers = nullptr;
};

// The claim the ephemeral volume `v` of `pod` gets: its name, namespace, labels and annotations
// from the template, the pod as its controlling owner, and the template's spec.
api::PersistentVolumeClaim ClaimFor(const api::Pod& pod, const api::Volume& v);

class Controller {
 public:
  Controller(client::Client& client, Options options = {});
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();

  // One pass over `pod`: creates the claims its ephemeral volumes lack. An error (a claim of
  // that name another owner has, a create that failed) is also an event on the pod.
  Status SyncPod(const api::Pod& pod);

 private:
  client::Client& client_;
  const Options options_;
  std::unique_ptr<client::WorkQueue> queue_;
  std::unique_ptr<client::InformerScope> informers_;
  client::Informer<api::Pod>* pods_ = nullptr;
  client::Informer<api::PersistentVolumeClaim>* claims_ = nullptr;
  client::Workers workers_;
};

}  // namespace kvol::controller::ephemeral
