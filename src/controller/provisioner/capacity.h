// CSIStorageCapacity objects for the CSI drivers registered on one node, as external-provisioner
// keeps them when it runs on every node (--enable-capacity with --node-deployment).
//
// For each StorageClass whose provisioner is a driver registered here whose CSIDriver says
// `storageCapacity: true` (and whose controller service offers GET_CAPACITY), one object in
// kube-system: nodeTopology is the node's topology segment of that driver, capacity and
// maximumVolumeSize are GetCapacity's answer for the class's parameters in that segment. They
// are labelled csi.storage.k8s.io/drivername and csi.storage.k8s.io/managed-by
// (kvol-provisioner-<node>) and owned by the Node. Refreshed every poll interval, when a class
// or CSIDriver changes, and when Refresh() is called (the node made or deleted a volume), at
// most once a second; objects of classes or drivers gone are deleted.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/storage.h"
#include "client/client.h"
#include "client/informer.h"
#include "csi/proto/csi.pb.h"
#include "os/clock.h"
#include "volume/plugins/csi/csi_drivers.h"

namespace kvol::controller::provisioner {

inline constexpr std::string_view kLabelDriverName = "csi.storage.k8s.io/drivername";
inline constexpr std::string_view kLabelManagedBy = "csi.storage.k8s.io/managed-by";

// One object this node keeps: a class of a driver registered here, in the node's segment.
struct CapacitySegment {
  std::string class_name;
  std::string driver;
  std::map<std::string, std::string> topology;
  bool operator==(const CapacitySegment&) const = default;
};

// The segments for `classes`, given the drivers registered here (name -> this node's topology)
// and the drivers whose CSIDriver tracks capacity; ordered by class name.
std::vector<CapacitySegment> WantedSegments(
    const std::vector<std::shared_ptr<const api::StorageClass>>& classes,
    const std::map<std::string, std::map<std::string, std::string>>& drivers_here,
    const std::set<std::string>& tracked);

// GetCapacity for a class in a segment: the class's parameters without csi.storage.k8s.io/*,
// the segment as accessible topology.
::csi::v1::GetCapacityRequest MakeGetCapacityRequest(const api::StorageClass& cls,
                                                    const CapacitySegment& segment);

// The managed-by label of `node`'s objects (at most 63 characters, as a label value).
std::string ManagedBy(const std::string& node);

// Whether an existing object is the one of `segment`.
bool IsObjectOf(const api::CSIStorageCapacity& object, const CapacitySegment& segment);

// The object for `segment` with the driver's answer (a new one: generateName csisc-).
api::CSIStorageCapacity MakeCapacityObject(const CapacitySegment& segment,
                                           const std::string& node, const std::string& ns,
                                           const ::csi::v1::GetCapacityResponse& resp);

struct CapacityOptions {
  std::string node_name;
  volume::plugins::CsiDrivers* drivers = nullptr;
  std::string namespace_ = "kube-system";
  std::chrono::milliseconds poll{60'000};
  // The least time between two passes, however often Refresh is called.
  std::chrono::milliseconds min_interval{1'000};
  std::chrono::milliseconds call_timeout{10'000};
  os::Clock* clock = &os::RealClock();
  // The process's informers, shared with its other controllers; its own when null.
  client::SharedInformers* informers = nullptr;
};

class CapacityPublisher {
 public:
  CapacityPublisher(client::Client& client, CapacityOptions options);
  ~CapacityPublisher();
  CapacityPublisher(const CapacityPublisher&) = delete;
  CapacityPublisher& operator=(const CapacityPublisher&) = delete;

  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();
  // Asks for a pass soon (the node's free space changed).
  void Refresh();

  // One pass: every object made, updated or deleted as wanted. Tests call it.
  Status Sync();

 private:
  client::Client& client_;
  const CapacityOptions options_;
  std::unique_ptr<client::InformerScope> informers_;
  client::Informer<api::StorageClass>* classes_ = nullptr;
  client::Informer<api::CSIDriver>* csidrivers_ = nullptr;
  client::Informer<api::CSIStorageCapacity>* capacities_ = nullptr;
  std::thread thread_;
  // Wakes the loop: stopping, a change, or a driver registered. Shared with callbacks that may
  // outlive this publisher.
  struct Kick {
    std::mutex mu;
    std::condition_variable cv;
    bool stopping = false;
    bool wanted = false;
  };
  std::shared_ptr<Kick> kick_ = std::make_shared<Kick>();
};

}  // namespace kvol::controller::provisioner
