#include "node/volumemanager/desired_state_of_world.h"

#include <algorithm>

namespace kvol::node::volumemanager {

void DesiredStateOfWorld::Set(DesiredPods pods) {
  std::lock_guard lock(mu_);
  pods_.swap(pods);
}

std::optional<DesiredPod> DesiredStateOfWorld::Pod(const std::string& uid) const {
  std::lock_guard lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

DesiredPods DesiredStateOfWorld::Pods() const {
  std::lock_guard lock(mu_);
  return pods_;
}

bool DesiredStateOfWorld::AnyMissingPlugin() const {
  std::lock_guard lock(mu_);
  return std::any_of(pods_.begin(), pods_.end(),
                     [](const auto& kv) { return kv.second.missing_plugin; });
}

}  // namespace kvol::node::volumemanager
