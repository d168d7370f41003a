// A node agent's own in-process provisioner (kvol.io/local-path), for its node: what the PV
// controller leaves to the agent of the node a claim was given to (volume::Provisioner::
// ServesNode), as it leaves CSI claims to the built-in CSI provisioner.
//
// A claim annotated for the provisioner (volume.kubernetes.io/storage-provisioner) and given to
// this node by the scheduler (volume.kubernetes.io/selected-node) gets its volume made here and
// a PersistentVolume pre-bound to it, which the PV controller binds. A Released volume with the
// Delete policy that the provisioner made on this node is removed here: the storage, then the
// object. Events in external-provisioner's words (Provisioning, ProvisioningSucceeded,
// ProvisioningFailed, VolumeFailedDelete), from component "<provisioner>_<node>".
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "client/client.h"
#include "client/informer.h"
#include "controller/provisioner/provisioning_loop.h"
#include "os/clock.h"
#include "volume/provisioner.h"

namespace kvol::controller::provisioner {

struct NodeLocalOptions {
  std::string node_name;
  volume::Provisioner* provisioner = nullptr;  // this node's instance
  int workers = 2;
  os::Clock* clock = &os::RealClock();
  // The process's informers, shared with its other controllers; its own when null.
  client::SharedInformers* informers = nullptr;
};

class NodeLocalController {
 public:
  NodeLocalController(client::Client& client, NodeLocalOptions options);
  ~NodeLocalController();
  NodeLocalController(const NodeLocalController&) = delete;
  NodeLocalController& operator=(const NodeLocalController&) = delete;

  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();

  // One pass for one claim, and for one volume. Tests call them without Start.
  Status SyncClaim(const api::PersistentVolumeClaim& claim);
  Status SyncVolume(const api::PersistentVolume& volume);

 private:
  // From the informer once started, else from the API.
  std::shared_ptr<const api::StorageClass> ClassOf(const std::string& name) const;
  bool ClaimIsMine(const api::PersistentVolumeClaim& claim) const;
  bool VolumeIsMine(const api::PersistentVolume& volume) const;
  Status Provision(const api::PersistentVolumeClaim& claim, const api::StorageClass& cls);

  client::Client& client_;
  const NodeLocalOptions options_;
  ProvisioningLoop loop_;
};

}  // namespace kvol::controller::provisioner
