// The attach/detach controller, as Kubernetes' (pkg/controller/volume/attachdetach): attaches
// the attachable volumes of pods to the nodes they are scheduled to, and detaches them once no
// pod there needs them and the node no longer uses them. It serves the nodes that ask for it
// with the annotation volumes.kubernetes.io/controller-managed-attach-detach: "true" (the node
// agent sets it unless --enable-controller-attach-detach=false); on other nodes the agent
// attaches for itself.
//
//   desired_state.h   the managed nodes' attachable volumes, from the pods (the populator)
//   actual_state.h    what is attached where; rebuilt at start from VolumeAttachments and
//                     nodes' status.volumesAttached
//   reconciler.h      detach first, then attach; Multi-Attach errors
//   csi_attacher.h    CSI: VolumeAttachments
//   controller.h      this file: the caches, the operations, and the node status updater that
//                     writes each node's status.volumesAttached
//
// Each pass recomputes the desired state from the caches and reconciles, woken by any change
// of a pod, node, claim, volume, VolumeAttachment or CSIDriver, by an operation finishing, or
// by a deadline (a backoff ending, a forced detach coming due).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/well_known.h"
#include "client/client.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "client/pod_claims.h"
#include "controller/attachdetach/actual_state.h"
#include "controller/attachdetach/metrics.h"
#include "controller/attachdetach/attacher.h"
#include "controller/attachdetach/csi_attacher.h"
#include "controller/attachdetach/plugin_attacher.h"
#include "controller/attachdetach/reconciler.h"
#include "os/clock.h"
#include "volume/util/operation_executor.h"

namespace kvol::controller::attachdetach {

struct Options {
  os::Clock* clock = &os::RealClock();
  // The process's informers, shared with its other controllers; its own when null.
  client::SharedInformers* informers = nullptr;
  ReconcilerOptions reconciler;
  // The process's plugins, whose attachable ones (FlexVolume drivers) the controller runs for
  // the nodes it manages; CSI volumes are attached through VolumeAttachments whatever this is.
  volume::PluginManager* plugins = nullptr;
  CsiAttacherOptions csi;
  // A pass runs at least this often.
  std::chrono::milliseconds period{std::chrono::seconds(10)};
  int max_operations = 64;  // attaches and detaches in flight at once
};

class Controller {
 public:
  Controller(client::Client& client, client::EventSink events, Options options);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Fills the caches (Unavailable when they do not fill in time), rebuilds the actual state,
  // and starts reconciling.
  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();

 private:
  class Ops;
  void Kick();
  void Loop();
  void ReconcileOnce();
  // The actual state from the VolumeAttachments and the managed nodes' status.volumesAttached.
  void Reconstruct();
  NodeInfo InfoOf(const std::string& node) const;
  Attacher* AttacherFor(const volume::Spec& spec) const;
  Attacher* AttacherNamed(std::string_view plugin) const;
  // Writes status.volumesAttached of the node from the actual state: whether it is written
  // (or need not be: the node is gone).
  bool WriteNodeStatus(const std::string& node);

  client::Client& client_;
  const client::EventSink events_;
  const Options options_;

  std::unique_ptr<client::InformerScope> informers_;
  client::Informer<api::Pod>* pods_ = nullptr;
  client::PodClaimIndex pod_claims_;  // kept by the pod handlers
  client::Informer<api::Node>* nodes_ = nullptr;
  client::Informer<api::PersistentVolumeClaim>* claims_ = nullptr;
  client::Informer<api::PersistentVolume>* volumes_ = nullptr;
  client::Informer<api::VolumeAttachment>* attachments_ = nullptr;
  client::Informer<api::CSIDriver>* drivers_ = nullptr;
  std::unique_ptr<CsiAttacher> csi_;
  std::unique_ptr<PluginAttachers> plugin_attachers_;  // when options_.plugins is set

  ActualState actual_;
  std::unique_ptr<volume::util::OperationExecutor> executor_;
  std::unique_ptr<Ops> ops_;
  std::unique_ptr<Reconciler> reconciler_;

  std::mutex mu_;
  std::condition_variable cv_;
  PluginCounts desired_counts_;  // of the last pass; guarded by mu_
  std::shared_ptr<metrics::Collector> collector_;  // attachdetach_controller_total_volumes
  bool kicked_ = false;    // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace kvol::controller::attachdetach
