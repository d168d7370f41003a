// kube-scheduler's storage capacity check, part of VolumeBinding: a claim that is to be
// provisioned for a node, of a class whose CSI driver says `storageCapacity: true`, needs a
// CSIStorageCapacity of that class whose nodeTopology selects the node and whose
// maximumVolumeSize (else capacity) holds the claim's request. Claims of other drivers, or
// without a storage request, always fit. Thread-safe; the scheduler fills it from informers.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "api/core.h"
#include "api/labels.h"
#include "api/storage.h"

namespace kvol::scheduler {

inline constexpr std::string_view kReasonNotEnoughSpace =
    "node(s) did not have enough free storage";

class StorageCapacities {
 public:
  void UpsertDriver(const api::CSIDriver& driver);
  void RemoveDriver(const std::string& name);
  // Keyed namespace/name.
  void Upsert(const api::CSIStorageCapacity& capacity);
  void Remove(const std::string& key);

  // Whether `node` has room for `claim` of class `cls` (see above).
  bool HasEnoughCapacity(const api::PersistentVolumeClaim& claim, const api::StorageClass& cls,
                         const api::Node& node) const;

 private:
  struct Entry {
    std::string class_name;
    api::labels::Selector topology;  // Nothing() without nodeTopology: no node has access
    std::optional<int64_t> limit;    // maximumVolumeSize, else capacity, in bytes
  };
  mutable std::mutex mu_;
  std::set<std::string, std::less<>> tracked_;  // drivers with storageCapacity: true
  std::map<std::string, Entry> capacities_;
};

}  // namespace kvol::scheduler
