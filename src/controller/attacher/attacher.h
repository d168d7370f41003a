// kvol's built-in CSI attacher: what external-attacher does, for the CSI drivers registered on
// this node. For each VolumeAttachment of such a driver to this node it adds the
// external-attacher/<driver> finalizer, calls ControllerPublishVolume (the node ID from the
// node's CSINode, the capability and read-only flag from the PersistentVolume, the
// controller-publish secrets) and writes status.attached with the attachmentMetadata, or
// attachError. When the VolumeAttachment is being deleted it calls ControllerUnpublishVolume,
// writes detachError if that fails, and removes its finalizer. A driver without
// PUBLISH_UNPUBLISH_VOLUME is marked attached without a call. VolumeAttachments of other
// drivers are left alone, for an external-attacher to serve. Level-triggered and idempotent.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/storage.h"
#include "client/client.h"
#include "client/informer.h"
#include "client/workqueue.h"
#include "os/clock.h"
#include "volume/plugins/csi/csi_drivers.h"

namespace kvol::controller::attacher {

struct Options {
  std::string node_name;  // the VolumeAttachments to this node
  volume::plugins::CsiDrivers* drivers = nullptr;
  int workers = 4;
  os::Clock* clock = &os::RealClock();
  std::chrono::milliseconds call_timeout{120'000};
  // How often every attachment to the node is looked at again (a driver registered after its
  // attachment was made, a failure to retry).
  std::chrono::milliseconds resync{5'000};
};

class Controller {
 public:
  Controller(client::Client& client, Options options);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();

  // One pass for one VolumeAttachment. Tests call it.
  Status SyncAttachment(const api::VolumeAttachment& va);

 private:
  Status Attach(const api::VolumeAttachment& va, const volume::plugins::CsiDriver& driver);
  Status Detach(const api::VolumeAttachment& va, const volume::plugins::CsiDriver& driver);
  // The driver's node ID for the attachment's node (CSINode).
  StatusOr<std::string> NodeIdOf(const std::string& driver, const std::string& node);
  // The PersistentVolume spec the attachment is of.
  StatusOr<api::PersistentVolumeSpec> VolumeOf(const api::VolumeAttachment& va);
  // Writes attachError or detachError.
  Status WriteError(const api::VolumeAttachment& va, bool attach, const Status& s);

  client::Client& client_;
  const Options options_;
  std::unique_ptr<client::WorkQueue> queue_;
  std::unique_ptr<client::Informer<api::VolumeAttachment>> attachments_;
  std::vector<std::thread> threads_;
  // Wakes the pass over every attachment: stopping, or a driver registered.
  struct Kick {
    std::mutex mu;
    std::condition_variable cv;
    bool stopping = false;
    bool kicked = false;
  };
  std::shared_ptr<Kick> kick_ = std::make_shared<Kick>();
};

}  // namespace kvol::controller::attacher
