// A provisioner compatible with k8s-sigs.io/nfs-subdir-external-provisioner: one directory per
// volume on a shared directory (an NFS export mounted here, or any directory), named
// ${namespace}-${pvcName}-${pvName} or by the class's pathPattern. The volume is an nfs volume
// when the share is an NFS export (server and path given), a hostPath volume otherwise.
// Class parameters: onDelete (delete, retain), archiveOnDelete ("false" deletes), pathPattern
// (${.PVC.namespace}, ${.PVC.name}, ${.PVC.labels.KEY}, ${.PVC.annotations.KEY}).
#pragma once

#include "volume/provisioner.h"

namespace kvol::volume {

struct SubdirOptions {
  std::string share;       // where the share is mounted (or the directory itself)
  std::string nfs_server;  // empty: not NFS
  std::string nfs_path;    // the export's path on the server
};

class SubdirProvisioner final : public Provisioner {
 public:
  explicit SubdirProvisioner(SubdirOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "k8s-sigs.io/nfs-subdir-external-provisioner"; }
  StatusOr<api::PersistentVolumeSpec> Provision(const ProvisionRequest& request) override;
  Status Delete(const api::PersistentVolume& volume,
                const api::StorageClass* storage_class) override;

  // The directory (relative to the share) for a claim: exposed for tests.
  static StatusOr<std::string> DirectoryFor(const ProvisionRequest& request);

 private:
  SubdirOptions options_;
};

}  // namespace kvol::volume
