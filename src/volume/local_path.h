// kvol.io/local-path: one directory per volume under a base directory of the node the volume
// is for, exposed as a hostPath volume (DirectoryOrCreate) with node affinity to that node, as
// k3s's local-path provisioner does. Made for WaitForFirstConsumer classes: the directory is
// made on the node the scheduler picked, by the process that runs there: a node agent runs its
// own instance for its node (and says so with the annotation kvol.io/local-path-root on its
// Node); the one beside the PV controller serves that process's node, claims bound at once
// (without a node), and nodes without such an agent, whose directories their agent's hostPath
// mount then creates.
#pragma once

#include "volume/provisioner.h"

namespace kvol::volume {

struct LocalPathOptions {
  std::string root;       // base directory on every node, e.g. <data-dir>/storage
  std::string this_node;  // the node this process runs on
};

class LocalPathProvisioner final : public Provisioner {
 public:
  explicit LocalPathProvisioner(LocalPathOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "kvol.io/local-path"; }
  StatusOr<api::PersistentVolumeSpec> Provision(const ProvisionRequest& request) override;
  Status Delete(const api::PersistentVolume& volume,
                const api::StorageClass* storage_class) override;
  bool ServesNode(const api::Node* node) const override;
  std::string VolumeNode(const api::PersistentVolume& volume) const override;

 private:
  LocalPathOptions options_;
};

}  // namespace kvol::volume
