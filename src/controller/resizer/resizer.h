// kvol's built-in CSI resizer: what external-resizer does, for the CSI drivers registered on
// one node, beside that node's agent (as the built-in provisioner and attacher).
//
// The expand controller hands a claim of a CSI volume to a resizer by annotating it
// volume.kubernetes.io/storage-resizer: <driver>. When that driver is registered here and the
// volume is this node's (see VolumeServedBy), the resizer marks the claim Resizing, grows the
// volume (ControllerExpandVolume when the driver offers it; a driver that grows volumes only on
// the node needs nothing from the controller), writes the volume's new capacity, and then either
// marks the claim FileSystemResizePending for the node agent's NodeExpandVolume or gives it its
// new capacity. Events as external-resizer gives them: Resizing, FileSystemResizeRequired,
// VolumeResizeSuccessful, VolumeResizeFailed. Claims annotated for drivers not registered here
// are left to another node's agent or to an external-resizer.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "client/workqueue.h"
#include "os/clock.h"
#include "volume/plugins/csi/csi_drivers.h"

namespace kvol::controller::resizer {

// What growing a volume left: its size now, and whether its node must grow the filesystem.
struct Expanded {
  int64_t capacity_bytes = 0;
  bool node_expansion_required = false;
};

// Grows one volume through its driver.
class VolumeExpander {
 public:
  virtual ~VolumeExpander() = default;
  virtual StatusOr<Expanded> Expand(const volume::plugins::CsiDriver& driver,
                                    const api::PersistentVolume& pv, int64_t required_bytes,
                                    const std::map<std::string, std::string>& secrets) = 0;
};

// The one that calls the driver: ControllerExpandVolume when its controller service offers
// EXPAND_VOLUME; else, when its node service does, nothing (the node grows the volume);
// else FailedPrecondition.
std::unique_ptr<VolumeExpander> NewCsiExpander(std::chrono::milliseconds call_timeout);

struct Options {
  std::string node_name;
  volume::plugins::CsiDrivers* drivers = nullptr;
  bool central = false;
  int workers = 2;
  os::Clock* clock = &os::RealClock();
  std::chrono::milliseconds call_timeout{120'000};
  VolumeExpander* expander = nullptr;  // the CSI one when null
  client::EventSink events;            // a recorder of its own (component csi-resizer_<node>) when null
  // The process's informers, shared with its other controllers; its own when null.
  client::SharedInformers* informers = nullptr;
};

class Controller {
 public:
  Controller(client::Client& client, Options options);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();

  // One pass for one claim, with its volume read from the server. Tests call it.
  Status SyncClaim(const api::PersistentVolumeClaim& claim);

 private:
  // The driver registered here that the claim is annotated for; nullptr when none.
  std::shared_ptr<const volume::plugins::CsiDriver> DriverFor(
      const api::PersistentVolumeClaim& claim) const;
  Status Resize(const api::PersistentVolumeClaim& claim, const api::PersistentVolume& pv,
                const volume::plugins::CsiDriver& driver);
  void Event(const api::PersistentVolumeClaim& claim, std::string_view type,
             std::string_view reason, std::string message);
  void EnqueueAll();

  client::Client& client_;
  const Options options_;
  std::unique_ptr<VolumeExpander> own_expander_;
  VolumeExpander* expander_;
  std::unique_ptr<client::EventRecorder> recorder_;
  client::EventSink events_;
  std::unique_ptr<client::WorkQueue> queue_;
  std::unique_ptr<client::InformerScope> informers_;
  client::Informer<api::PersistentVolumeClaim>* claims_ = nullptr;
  std::vector<std::thread> threads_;
  // This controller while it runs, for the drivers table's callback, which may outlive it.
  struct Self {
    std::mutex mu;
    Controller* controller = nullptr;
  };
  std::shared_ptr<Self> self_ = std::make_shared<Self>();
};

}  // namespace kvol::controller::resizer
