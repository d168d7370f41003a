// The provision/delete capability of volume plugins, as the PV controller uses it: a
// Provisioner makes the storage for a claim and describes it as a PersistentVolume, and removes
// it again when the volume's reclaim policy is Delete.
#pragma once

#include <string>
#include <string_view>

#include "api/core.h"
#include "api/storage.h"
#include "base/status.h"

namespace kvol::volume {

struct ProvisionRequest {
  std::string pv_name;  // "pvc-<claim uid>": a retry finds the same name
  const api::PersistentVolumeClaim* claim = nullptr;
  const api::StorageClass* storage_class = nullptr;
  // The node the claim's pod goes to (delayed binding); nullptr when there is none yet.
  const api::Node* selected_node = nullptr;
};

class Provisioner {
 public:
  virtual ~Provisioner() = default;
  // The StorageClass provisioner name it serves, e.g. "kvol.io/local-path".
  virtual std::string_view name() const = 0;
  // Makes the storage and returns the volume's spec: source, capacity, access modes, volume
  // mode and node affinity (the caller sets name, class, claimRef, reclaim policy, mount options
  // and annotations). InvalidArgument when the claim asks for what it cannot make.
  virtual StatusOr<api::PersistentVolumeSpec> Provision(const ProvisionRequest& request) = 0;
  // Removes (or archives, as the class asked) the storage behind a volume it made.
  // `storage_class` is the volume's class, nullptr when it no longer exists.
  virtual Status Delete(const api::PersistentVolume& volume,
                        const api::StorageClass* storage_class) = 0;

  // Whether this process makes volumes for claims the scheduler gave to `node` (nullptr: none
  // was given) and removes the volumes it made there. A node-local provisioner leaves a node
  // whose own agent runs it to that agent. Others serve every node.
  virtual bool ServesNode(const api::Node* node) const { return true; }
  // The node a volume it made belongs to (its node affinity's); empty when it has none.
  virtual std::string VolumeNode(const api::PersistentVolume& volume) const { return {}; }
};

// The PersistentVolume of a volume `provisioner` made for `claim` of class `cls`: named
// `pv_name`, with `spec` from Provision, the class's reclaim policy (with the PV controller's
// deletion finalizer for Delete) and mount options, pre-bound to the claim, annotated as
// provisioned by it.
api::PersistentVolume ProvisionedVolume(std::string pv_name, api::PersistentVolumeSpec spec,
                                        const api::PersistentVolumeClaim& claim,
                                        const api::StorageClass& cls,
                                        std::string_view provisioner);

// The part of a new volume's spec every provisioner fills the same way: the claim's requested
// storage as capacity, its access modes, volume mode Filesystem.
api::PersistentVolumeSpec FilesystemSpecFor(const api::PersistentVolumeClaim& claim);

// Removes everything inside `dir` (not `dir` itself), as a recycler scrubs a volume; gives up
// with DeadlineExceeded after `timeout`.
Status ScrubDirectory(const std::string& dir, std::chrono::milliseconds timeout);

}  // namespace kvol::volume
