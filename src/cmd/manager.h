// The controllers and the scheduler `kvol server` runs, started while this server holds the Lease
// (kube-system/kvol-controller-manager) and stopped when it loses it, so that several servers
// sharing one etcd never run two copies. With the embedded store there is one server, which
// leads at once.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "client/event_recorder.h"
#include "client/leader_election.h"
#include "cmd/commands.h"
#include "controller/attachdetach/controller.h"
#include "controller/expand/expand.h"
#include "controller/ephemeral/ephemeral_controller.h"
#include "controller/garbagecollector/garbage_collector.h"
#include "controller/namespace/namespace_controller.h"
#include "controller/rootca/publisher.h"
#include "controller/serviceaccount/serviceaccount_controller.h"
#include "controller/protection/protection.h"
#include "controller/pv/controller.h"
#include "controller/snapshot/snapshot_controller_base.h"
#include "controller/workload/controller.h"
#include "scheduler/scheduler.h"
#include "volume/plugin.h"

namespace kvol::cmd {

struct ManagerOptions {
  std::string identity;  // unique per server
  int workers = 16;      // per queue; binds are write-bound, so more workers help up to the store
  // The process's plugins: the PV controller runs their provisioners, the expand controller
  // their expandable plugins. Outlives the manager.
  volume::PluginManager* plugins = nullptr;
  bool scheduler = true;  // also place pods (default-scheduler)
  // The CA bundle (PEM) that verifies the API server, published in every namespace as the
  // ConfigMap kube-root-ca.crt; none published when empty.
  std::string root_ca;
  controller::attachdetach::ReconcilerOptions attach_detach;
  // The process's informers, shared with the node agent (`kvol server`); outlives the manager.
  // When null, the controllers share informers of the manager's own, made each time it starts
  // leading and stopped when it stops.
  client::SharedInformers* informers = nullptr;
};

// The attach/detach controller's reconciler settings from its flags.
controller::attachdetach::ReconcilerOptions AttachDetachReconcilerOptions(
    const AttachDetachOptions& o);

class Manager {
 public:
  Manager(client::Client& client, ManagerOptions options);
  ~Manager();

  void Start();
  void Stop();

 private:
  void Lead();
  void Follow();

  client::Client& client_;
  ManagerOptions options_;
  client::EventRecorder pv_events_;
  client::EventRecorder expand_events_;
  client::EventRecorder attachdetach_events_;
  client::EventRecorder scheduler_events_;
  client::EventRecorder replicaset_events_;
  client::EventRecorder statefulset_events_;
  client::EventRecorder snapshot_events_;
  client::EventRecorder ephemeral_events_;
  std::unique_ptr<client::LeaderElector> elector_;

  std::mutex mu_;
  // This term's informers when options_.informers is null; declared first: destroyed last.
  std::unique_ptr<client::SharedInformers> own_informers_;
  // This term's controllers, in the order they started; each stops as it is destroyed.
  std::vector<std::shared_ptr<void>> running_;
  std::thread starter_;
};

}  // namespace kvol::cmd
