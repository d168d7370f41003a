// The expand controller: grows the volume of a Bound claim whose storage request has grown past
// its capacity, through the volume's plugin (ExpandableVolumePlugin), as Kubernetes' in-tree
// expand controller does. The claim has condition Resizing while the plugin works; then the
// PersistentVolume's capacity is the new size, and the claim either has it too (nothing more to
// do) or condition FileSystemResizePending until the node agent where the volume is mounted has
// grown its filesystem. Volumes no plugin of this process expands get the ExternalExpanding
// event (and CSI ones the volume.kubernetes.io/storage-resizer annotation) for an external
// resizer. Level-triggered: after a crash at any point, the next sync finishes the job, since
// each step is written before the next starts and expanding to a size reached is a no-op.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/core.h"
#include "api/well_known.h"
#include "client/client.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "client/workqueue.h"
#include "os/clock.h"
#include "volume/plugin.h"

namespace kvol::controller::expand {

struct Options {
  int workers = 2;
  os::Clock* clock = &os::RealClock();
  volume::PluginManager* plugins = nullptr;  // whose expandable plugins it runs
  // The process's informers, shared with its other controllers; its own when null.
  client::SharedInformers* informers = nullptr;
};

class Controller {
 public:
  Controller(client::Client& client, client::EventSink events, Options options);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();

  // One pass for one claim, with its volume read from the server. Tests call it.
  Status SyncClaim(const api::PersistentVolumeClaim& claim);

 private:
  Status Expand(const api::PersistentVolumeClaim& claim, const api::PersistentVolume& pv,
                const api::Quantity& requested);
  void Event(const api::PersistentVolumeClaim& claim, std::string_view type,
             std::string_view reason, std::string message);

  client::Client& client_;
  const client::EventSink events_;
  const Options options_;
  std::unique_ptr<client::WorkQueue> queue_;
  std::unique_ptr<client::InformerScope> informers_;
  client::Informer<api::PersistentVolumeClaim>* claims_ = nullptr;
  std::vector<std::thread> threads_;
};

}  // namespace kvol::controller::expand
