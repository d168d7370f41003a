// The agent's Node: registered at start (labels kubernetes.io/hostname, kubernetes.io/os,
// kubernetes.io/arch and the operator's own), its status (the pressure conditions and Ready,
// addresses, capacity, volumesInUse, volumesAttached) written when it changes and as a
// heartbeat, and its Lease in kube-node-lease renewed, as kubelet does. A pressure condition
// that changes is written at once, with kubelet's event ("Node n1 status is now:
// NodeHasDiskPressure").
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/core.h"
#include "client/client.h"
#include "client/event_recorder.h"
#include "os/clock.h"
#include "os/machine.h"

namespace kvol::node {

struct NodeStatusOptions {
  std::string node_name;
  std::map<std::string, std::string> labels;  // --node-labels, on top of the well-known ones
  os::MachineInfo machine;
  std::string version;  // kvol's, reported as the node's kubelet version
  // nodeInfo.containerRuntimeVersion: "containerd://1.6.20"; kvol's own runtime when empty.
  std::string runtime_version;
  std::map<std::string, std::string> annotations;  // set on the Node (others are left alone)
  std::vector<std::string> absent_annotations;     // removed from the Node
  // Whether the agent writes status.volumesAttached; not when the attach/detach controller
  // manages the node's attachments, since the controller writes it then.
  bool report_volumes_attached = true;
  int32_t daemon_port = 0;  // status.daemonEndpoints.kubeletEndpoint.Port, when not 0
  // MemoryPressure, DiskPressure and PIDPressure as they stand (node/pressure.h), asked each
  // round; none when empty.
  std::function<std::vector<api::NodeCondition>()> pressure;
  client::EventSink events;  // the node's events; none when empty
  int32_t lease_duration_seconds = 40;
  std::chrono::milliseconds renew_interval{10'000};
  std::chrono::milliseconds status_interval{60'000};  // heartbeat when nothing changed
};

class NodeStatusManager {
 public:
  NodeStatusManager(client::Client& client, const os::Clock& clock, NodeStatusOptions options);
  ~NodeStatusManager();
  NodeStatusManager(const NodeStatusManager&) = delete;
  NodeStatusManager& operator=(const NodeStatusManager&) = delete;

  // Registers the node (creating it, or adding its labels to an existing one) and writes its
  // status and Lease once; then keeps them current on a thread until Stop.
  Status Start();
  void Stop();

  // One round: register if needed, status if due or changed, renew the Lease. Tests call it.
  Status SyncOnce();
  // The volumes the node reports in use (status.volumesInUse); written at the next round.
  void SetVolumesInUse(std::vector<std::string> names);
  // The volumes attached to the node (status.volumesAttached); written at the next round.
  void SetVolumesAttached(std::vector<api::AttachedVolume> volumes);

  // The Node as this agent describes it (labels and status), for tests.
  api::Node Describe() const;

 private:
  Status Register();
  Status WriteStatus(const std::vector<api::NodeCondition>& pressure);
  // The conditions to write, each with its times, and kubelet's event for each whose status
  // changed.
  void MergeConditions(std::vector<api::NodeCondition>& have,
                       const std::vector<api::NodeCondition>& pressure, const api::Time& now,
                       std::vector<std::string>* events) const;
  Status RenewLease();
  void Loop();

  client::Client& client_;
  const os::Clock& clock_;
  const NodeStatusOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                              // guarded by mu_
  std::vector<std::string> volumes_in_use_;            // guarded by mu_
  std::vector<api::AttachedVolume> volumes_attached_;  // guarded by mu_
  bool volumes_changed_ = false;                       // guarded by mu_
  bool registered_ = false;                            // loop thread (and Start) only
  os::MonoTime next_status_{};                         // loop thread only
  std::vector<api::NodeCondition> pressure_written_;   // loop thread only
  std::thread thread_;
};

}  // namespace kvol::node
