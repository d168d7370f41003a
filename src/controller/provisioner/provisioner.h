// kvol's built-in CSI provisioner: what external-provisioner does in its distributed mode, for
// the CSI drivers registered on one node, beside that node's agent (as the built-in attacher).
//
// A claim whose class names such a driver, and which the scheduler gave to this node
// (volume.kubernetes.io/selected-node), gets a volume from the driver: CreateVolume named
// pvc-<claim uid> (so a retry never makes a second one) with the class's parameters, secrets
// and the node's topology, then a PersistentVolume pre-bound to the claim, which the PV
// controller binds. Events as external-provisioner gives them: Provisioning,
// ProvisioningSucceeded, ProvisioningFailed. A Released volume of such a driver with the Delete
// policy whose node affinity admits this node is deleted (DeleteVolume, then the object).
//
// The agent inside `kvol server` (`central`) also serves claims no node was selected for
// (Immediate binding) and deletes volumes without node affinity. Claims of drivers not
// registered here are left alone, for another node's agent or an external-provisioner.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "client/client.h"
#include "client/informer.h"
#include "controller/provisioner/data_source.h"
#include "controller/provisioner/provisioning_loop.h"
#include "os/clock.h"
#include "volume/plugins/csi/csi_drivers.h"

namespace kvol::controller::provisioner {

struct Options {
  std::string node_name;
  volume::plugins::CsiDrivers* drivers = nullptr;
  bool central = false;
  // Claims provisioned at once. A worker mostly waits on the driver, as external-provisioner's
  // (100 by default) do; more at once also share more of the store's syncs.
  int workers = 16;
  os::Clock* clock = &os::RealClock();
  std::chrono::milliseconds call_timeout{120'000};
  // How often every claim and volume is looked at again (a driver that registered later, a
  // failure to retry).
  std::chrono::milliseconds resync{10'000};
  // The process's informers, shared with its other controllers; its own when null.
  client::SharedInformers* informers = nullptr;
  // Called after a volume was made or deleted (the node's free space changed).
  std::function<void()> on_volumes_changed;
};

class Controller {
 public:
  Controller(client::Client& client, Options options);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();

  // One pass for one claim, and for one volume. Tests call them.
  Status SyncClaim(const api::PersistentVolumeClaim& claim);
  Status SyncVolume(const api::PersistentVolume& volume);

 private:
  // The driver this node serves the claim with; nullptr when the claim is not this node's.
  std::shared_ptr<const volume::plugins::CsiDriver> DriverFor(
      const api::PersistentVolumeClaim& claim) const;
  Status Provision(const api::PersistentVolumeClaim& claim, const api::StorageClass& cls,
                   const volume::plugins::CsiDriver& driver);
  // What a claim with a data source is made from, once the driver can and the source is
  // ready; a clone's source claim is protected meanwhile.
  StatusOr<::csi::v1::VolumeContentSource> ContentSource(const api::PersistentVolumeClaim& claim,
                                                         const api::StorageClass& cls,
                                                         const volume::plugins::CsiDriver& driver,
                                                         const DataSource& source);
  // Whether a deleted claim still holds the cloning-protection finalizer, for this provisioner
  // to let go once no clone of it waits.
  bool ReleasesClones(const api::PersistentVolumeClaim& claim) const;
  // Lets the source claim `ns`/`source` of clones go, unless a clone of it (other than the one
  // just made, `made_uid`) is still to be made.
  void ReleaseCloneSource(const std::string& ns, const std::string& source,
                          const std::string& made_uid);
  // Deletes a volume whose PV could not be made, rather than leak it.
  void DeleteCreated(const std::string& volume_id,
                     const std::map<std::string, std::string>& secrets,
                     const volume::plugins::CsiDriver& driver,
                     const api::PersistentVolumeClaim& claim);
  bool VolumeWanted(const api::PersistentVolume& volume) const;

  client::Client& client_;
  const Options options_;
  ProvisioningLoop loop_;
};

}  // namespace kvol::controller::provisioner
