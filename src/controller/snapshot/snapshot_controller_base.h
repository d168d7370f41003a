// The snapshot controller's wiring (external-snapshotter's snapshot-controller): informers on
// snapshots, contents and claims, one queue of keys ("vs/<ns>/<name>", "vsc/<name>"), and
// workers that sync each key against the API with SnapshotController's decisions. It starts
// working only once its caches have listed everything.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "client/workqueue.h"
#include "controller/snapshot/snapshot_controller.h"
#include "os/clock.h"

namespace kvol::controller::snapshot {

struct Options {
  int workers = 2;
  os::Clock* clock = &os::RealClock();
  client::EventSink events;  // a recorder of its own (component snapshot-controller) when null
  // The process's informers, shared with its other controllers; its own when null.
  client::SharedInformers* informers = nullptr;
};

class Controller {
 public:
  Controller(client::Client& client, Options options);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Unavailable when the caches do not fill within `sync_timeout`.
  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();

 private:
  Status Sync(const std::string& key);
  void EnqueueSnapshot(const std::string& ns, const std::string& name);
  // The snapshots of `pvc`, and those restoring into it.
  void EnqueueSnapshotsOf(const api::PersistentVolumeClaim& pvc);

  client::Client& client_;
  Options options_;
  std::unique_ptr<client::EventRecorder> recorder_;
  std::unique_ptr<client::WorkQueue> queue_;
  std::unique_ptr<SnapshotController> decisions_;
  std::unique_ptr<client::InformerScope> informers_;
  client::Informer<api::VolumeSnapshot>* snapshots_ = nullptr;
  client::Informer<api::VolumeSnapshotContent>* contents_ = nullptr;
  std::vector<std::thread> threads_;
};

}  // namespace kvol::controller::snapshot
