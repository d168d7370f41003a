#include "scheduler/storage_capacity.h"

namespace kvol::scheduler {

void StorageCapacities::UpsertDriver(const api::CSIDriver& driver) {
  std::lock_guard lock(mu_);
  if (driver.spec.storage_capacity.value_or(false)) {
    tracked_.insert(driver.metadata.name);
  } else {
    tracked_.erase(driver.metadata.name);
  }
}

void StorageCapacities::RemoveDriver(const std::string& name) {
  std::lock_guard lock(mu_);
  tracked_.erase(name);
}

void StorageCapacities::Upsert(const api::CSIStorageCapacity& c) {
  Entry e;
  e.class_name = c.storage_class_name;
  auto selector = api::labels::FromLabelSelector(c.node_topology ? &*c.node_topology : nullptr);
  // A selector the API server accepted converts; one that does not selects no node.
  e.topology = selector.ok() ? *std::move(selector) : api::labels::Selector::Nothing();
  if (c.maximum_volume_size) {
    e.limit = c.maximum_volume_size->Value();
  } else if (c.capacity) {
    e.limit = c.capacity->Value();
  }
  std::lock_guard lock(mu_);
  capacities_[c.metadata.namespace_ + "/" + c.metadata.name] = std::move(e);
}

void StorageCapacities::Remove(const std::string& key) {
  std::lock_guard lock(mu_);
  capacities_.erase(key);
}

bool StorageCapacities::HasEnoughCapacity(const api::PersistentVolumeClaim& claim,
                                          const api::StorageClass& cls,
                                          const api::Node& node) const {
  auto request = claim.spec.resources.requests.find("storage");
  if (request == claim.spec.resources.requests.end() || request->second.IsZero()) return true;
  const int64_t bytes = request->second.Value();
  std::lock_guard lock(mu_);
  if (!tracked_.count(cls.provisioner)) return true;
  for (const auto& [key, e] : capacities_) {
    if (e.class_name == cls.metadata.name && e.limit && *e.limit >= bytes &&
        e.topology.Matches(node.metadata.labels)) {
      return true;
    }
  }
  return false;
}

}  // namespace kvol::scheduler
