#include "volume/plugins/csi/csi_drivers.h"

namespace kvol::volume::plugins {

void CsiDrivers::Add(std::shared_ptr<const CsiDriver> driver) {
  const std::string name = driver->name;
  std::vector<std::function<void(const std::string&)>> listeners;
  {
    std::lock_guard lock(mu_);
    drivers_[name] = std::move(driver);
    listeners = on_add_;
  }
  for (const auto& fn : listeners) fn(name);
}

void CsiDrivers::OnAdd(std::function<void(const std::string& name)> fn) {
  std::lock_guard lock(mu_);
  on_add_.push_back(std::move(fn));
}

bool CsiDrivers::Remove(std::string_view name, std::string_view endpoint) {
  std::lock_guard lock(mu_);
  auto it = drivers_.find(name);
  if (it == drivers_.end() || it->second->endpoint != endpoint) return false;
  drivers_.erase(it);
  return true;
}

std::shared_ptr<const CsiDriver> CsiDrivers::Find(std::string_view name) const {
  std::lock_guard lock(mu_);
  auto it = drivers_.find(name);
  return it == drivers_.end() ? nullptr : it->second;
}

std::vector<std::string> CsiDrivers::Names() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, d] : drivers_) out.push_back(name);
  return out;
}

}  // namespace kvol::volume::plugins
