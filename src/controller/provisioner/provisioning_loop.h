// ProvisioningLoop: what a provisioner runs on, whatever makes its volumes. The informers of
// claims, volumes and classes (the process's shared ones when given); a queue of the claims to
// provision and the released volumes to delete that the provisioner says are its own; workers
// that sync each from the informers' copy; an event recorder under the provisioner's name; and
// a pass over every claim and volume at the start, at each resync and when kicked.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/core.h"
#include "api/storage.h"
#include "client/client.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "client/workqueue.h"
#include "os/clock.h"

namespace kvol::controller::provisioner {

struct LoopOptions {
  std::string name;         // in logs: "csi-provisioner"
  std::string thread_name;  // the workers' (at most 15 characters)
  std::string component;    // the events' source: "csi-provisioner_node-1"
  int workers = 2;
  os::Clock* clock = &os::RealClock();
  // The process's informers, shared with its other controllers; its own when null.
  client::SharedInformers* informers = nullptr;
  // How often every claim and volume is looked at again; never when zero (then only at the
  // start, on changes, and when kicked).
  std::chrono::milliseconds resync{0};
};

struct LoopHandlers {
  // Whether a claim or volume is the provisioner's to sync (queued when it is).
  std::function<bool(const api::PersistentVolumeClaim&)> claim_wanted;
  std::function<bool(const api::PersistentVolume&)> volume_wanted;
  std::function<Status(const api::PersistentVolumeClaim&)> sync_claim;
  std::function<Status(const api::PersistentVolume&)> sync_volume;
};

class ProvisioningLoop {
 public:
  ProvisioningLoop(client::Client& client, LoopOptions options);
  ~ProvisioningLoop();
  ProvisioningLoop(const ProvisioningLoop&) = delete;
  ProvisioningLoop& operator=(const ProvisioningLoop&) = delete;

  // Starts the informers, waits for them to fill (Unavailable if they do not within
  // `sync_timeout`), then the workers.
  Status Start(LoopHandlers handlers, std::chrono::milliseconds sync_timeout);
  void Stop();

  // Something that asks for a pass over every claim and volume now (a driver registered). It may
  // be called after this loop is gone.
  std::function<void()> Kicker() const;

  // Records an event (nothing before Start).
  void Event(const api::ObjectReference& about, std::string_view type, std::string_view reason,
             std::string message);

  // The informers; null before Start.
  client::Informer<api::PersistentVolumeClaim>* claims() const { return claims_; }
  client::Informer<api::PersistentVolume>* volumes() const { return volumes_; }
  client::Informer<api::StorageClass>* classes() const { return classes_; }

 private:
  void EnqueueAll();

  client::Client& client_;
  const LoopOptions options_;
  LoopHandlers handlers_;
  std::unique_ptr<client::EventRecorder> recorder_;
  std::unique_ptr<client::WorkQueue> queue_;
  std::unique_ptr<client::InformerScope> informers_;
  client::Informer<api::PersistentVolumeClaim>* claims_ = nullptr;
  client::Informer<api::PersistentVolume>* volumes_ = nullptr;
  client::Informer<api::StorageClass>* classes_ = nullptr;
  std::vector<std::thread> threads_;
  // Wakes the pass over everything: stopping, or a Kick. Shared with kickers, which may
  // outlive the loop.
  struct Kick {
    std::mutex mu;
    std::condition_variable cv;
    bool stopping = false;
    bool kicked = false;
  };
  std::shared_ptr<Kick> kick_ = std::make_shared<Kick>();
};

}  // namespace kvol::controller::provisioner
