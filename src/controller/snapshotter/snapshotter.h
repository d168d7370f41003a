// kvol's built-in CSI snapshotter: what external-snapshotter's csi-snapshotter sidecar does, for
// the CSI drivers registered on one node, beside that node's agent (as the built-in provisioner,
// attacher and resizer).
//
// It serves the VolumeSnapshotContents of a driver registered here that offers
// CREATE_DELETE_SNAPSHOT, and that this node may reach: contents labelled
// snapshot.storage.kubernetes.io/managed-by with this node, or, unlabelled, on the central agent
// (the one inside `kvol server`). For a dynamic content it calls CreateSnapshot (named
// snapshot-<snapshot uid>, so that a retry finds the same snapshot) until the driver says it is
// ready, and writes the content's status: snapshotHandle, readyToUse, restoreSize, creationTime.
// For a pre-provisioned one it checks with ListSnapshots that the snapshot exists. A content
// being deleted under the Delete policy has DeleteSnapshot called before its finalizer goes.
// Errors go to the content's status.error and events (SnapshotCreationFailed,
// SnapshotContentCheckandUpdateFailed, SnapshotDeleteError), in external-snapshotter's words.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/snapshot.h"
#include "client/client.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "client/workqueue.h"
#include "os/clock.h"
#include "volume/plugins/csi/csi_drivers.h"

namespace kvol::controller::snapshotter {

// The snapshot calls of one driver.
class SnapshotCalls {
 public:
  virtual ~SnapshotCalls() = default;
  // Whether the driver's controller service offers CREATE_DELETE_SNAPSHOT.
  virtual StatusOr<bool> Supported(const volume::plugins::CsiDriver& driver) = 0;
  virtual StatusOr<::csi::v1::Snapshot> Create(const volume::plugins::CsiDriver& driver,
                                               const ::csi::v1::CreateSnapshotRequest& req) = 0;
  // The snapshot `id` as ListSnapshots describes it; nullopt when the driver lists none.
  virtual StatusOr<std::optional<::csi::v1::Snapshot>> Get(
      const volume::plugins::CsiDriver& driver, const std::string& id,
      const std::map<std::string, std::string>& secrets) = 0;
  virtual Status Delete(const volume::plugins::CsiDriver& driver, const std::string& id,
                        const std::map<std::string, std::string>& secrets) = 0;
};

// The calls over gRPC to the driver's controller service.
std::unique_ptr<SnapshotCalls> NewCsiSnapshotCalls(std::chrono::milliseconds call_timeout);

struct Options {
  std::string node_name;
  volume::plugins::CsiDrivers* drivers = nullptr;
  bool central = false;
  int workers = 2;
  os::Clock* clock = &os::RealClock();
  std::chrono::milliseconds call_timeout{60'000};
  SnapshotCalls* calls = nullptr;  // the CSI ones when null
  client::EventSink events;        // a recorder of its own (component csi-snapshotter <node>) when null
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

  // One pass for one content. An error means: try again later. Tests call it.
  Status SyncContent(const api::VolumeSnapshotContent& content);

 private:
  // The driver registered here that serves the content on this node; nullptr when none.
  std::shared_ptr<const volume::plugins::CsiDriver> DriverFor(
      const api::VolumeSnapshotContent& content) const;
  Status Create(const api::VolumeSnapshotContent& content, const volume::plugins::CsiDriver& driver);
  Status Check(const api::VolumeSnapshotContent& content, const volume::plugins::CsiDriver& driver);
  Status Delete(const api::VolumeSnapshotContent& content, const volume::plugins::CsiDriver& driver);
  // The secret the content's deletion-secret annotations name; empty without them.
  StatusOr<std::map<std::string, std::string>> Secrets(const api::VolumeSnapshotContent& content);
  // Applies `change` to the content as the API has it now, and writes its status if it changed.
  Status WriteStatus(const api::VolumeSnapshotContent& content,
                     const std::function<void(api::VolumeSnapshotContent&)>& change);
  // status.error and readyToUse false, with a Warning event, unless the content says so already.
  Status ReportError(const api::VolumeSnapshotContent& content, std::string_view reason,
                     const std::string& message);
  Status SetAnnotation(const api::VolumeSnapshotContent& content, std::string_view key, bool on);
  void Event(const api::VolumeSnapshotContent& content, std::string_view type,
             std::string_view reason, std::string message);
  void EnqueueAll();

  client::Client& client_;
  const Options options_;
  std::unique_ptr<SnapshotCalls> own_calls_;
  SnapshotCalls* calls_;
  std::unique_ptr<client::EventRecorder> recorder_;
  client::EventSink events_;
  std::unique_ptr<client::WorkQueue> queue_;
  std::unique_ptr<client::InformerScope> informers_;
  client::Informer<api::VolumeSnapshotContent>* contents_ = nullptr;
  std::vector<std::thread> threads_;
  // This controller while it runs, for the drivers table's callback, which may outlive it.
  struct Self {
    std::mutex mu;
    Controller* controller = nullptr;
  };
  std::shared_ptr<Self> self_ = std::make_shared<Self>();
};

}  // namespace kvol::controller::snapshotter
