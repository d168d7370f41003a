// What the scheduler knows of the cluster: nodes, claims, volumes, classes and how many pods
// each node runs. The running scheduler fills it from informers (and from its own writes as
// they succeed); tests fill it directly. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/core.h"
#include "api/storage.h"
#include "scheduler/storage_capacity.h"
#include "volume/binding/matching.h"

namespace kvol::scheduler {

using NodePtr = std::shared_ptr<const api::Node>;
using ClaimPtr = std::shared_ptr<const api::PersistentVolumeClaim>;
using ClassPtr = std::shared_ptr<const api::StorageClass>;
using volume::binding::VolumePtr;

class Cache {
 public:
  void UpsertNode(const api::Node& node);
  void RemoveNode(const std::string& name);
  // The shared object is kept as it is (an informer's, without a copy); the others copy.
  void UpsertClaim(ClaimPtr claim);
  void UpsertClaim(const api::PersistentVolumeClaim& claim);
  void RemoveClaim(const std::string& key);
  void UpsertVolume(VolumePtr volume);
  void UpsertVolume(const api::PersistentVolume& volume);
  void RemoveVolume(const std::string& name);
  void UpsertClass(const api::StorageClass& cls);
  void RemoveClass(const std::string& name);
  void UpsertCSINode(const api::CSINode& csinode);
  void RemoveCSINode(const std::string& name);
  // Pods count against the node they are assigned to, until they finish or go.
  void UpsertPod(const api::Pod& pod);
  void RemovePod(const std::string& key);

  // Every node, ordered by name.
  std::vector<NodePtr> Nodes() const;
  NodePtr Node(const std::string& name) const;
  ClaimPtr Claim(const std::string& key) const;
  VolumePtr Volume(const std::string& name) const { return volumes_.Get(name); }
  ClassPtr Class(const std::string& name) const;
  int PodsOn(const std::string& node) const;
  // The claims (namespace/name) of the pods that count against the node.
  std::vector<std::string> ClaimsOn(const std::string& node) const;
  // The node's CSI volume limits by driver: its CSINode's allocatable counts.
  std::map<std::string, int> VolumeLimits(const std::string& node) const;

  // The CSI drivers' reported capacities, for claims to be provisioned.
  StorageCapacities& capacities() { return capacities_; }
  const StorageCapacities& capacities() const { return capacities_; }

  // The volumes, indexed for matching; the scheduler reserves the ones it is choosing.
  volume::binding::VolumeIndex& volumes() { return volumes_; }
  const volume::binding::VolumeIndex& volumes() const { return volumes_; }

 private:
  mutable std::mutex mu_;
  std::map<std::string, NodePtr> nodes_;
  std::unordered_map<std::string, ClaimPtr> claims_;
  std::unordered_map<std::string, ClassPtr> classes_;
  std::unordered_map<std::string, std::string> pod_node_;                 // pod key -> node
  std::unordered_map<std::string, int> pods_on_;                          // node -> pods
  std::unordered_map<std::string, std::vector<std::string>> pod_claims_;  // pod key -> claims
  std::unordered_map<std::string, std::map<std::string, int>> limits_;    // node -> driver -> count
  volume::binding::VolumeIndex volumes_;
  StorageCapacities capacities_;
};

}  // namespace kvol::scheduler
