#include "controller/attachdetach/actual_state.h"

#include <algorithm>

namespace kvol::controller::attachdetach {

void ActualState::MarkAttached(const std::string& unique, const std::string& plugin,
                               const std::string& volume_name, const std::string& node,
                               const std::string& device_path) {
  std::lock_guard lock(mu_);
  ActualVolume& v = volumes_[unique];
  v.plugin = plugin;
  v.volume_name = volume_name;
  NodeAttachment& n = v.nodes[node];
  if (!n.attached || !n.reported || n.device_path != device_path) changed_nodes_.insert(node);
  n.attached = true;
  n.reported = true;
  n.device_path = device_path;
  n.detach_requested.reset();
}

void ActualState::MarkUncertain(const std::string& unique, const std::string& plugin,
                                const std::string& volume_name, const std::string& node) {
  std::lock_guard lock(mu_);
  ActualVolume& v = volumes_[unique];
  v.plugin = plugin;
  v.volume_name = volume_name;
  auto [it, added] = v.nodes.try_emplace(node);
  if (!added && it->second.attached) changed_nodes_.insert(node);
  it->second.attached = false;
}

void ActualState::MarkDetached(const std::string& unique, const std::string& node) {
  std::lock_guard lock(mu_);
  auto v = volumes_.find(unique);
  if (v == volumes_.end()) return;
  auto n = v->second.nodes.find(node);
  if (n == v->second.nodes.end()) return;
  if (n->second.attached && n->second.reported) changed_nodes_.insert(node);
  v->second.nodes.erase(n);
  if (v->second.nodes.empty()) volumes_.erase(v);
}

void ActualState::MarkDetaching(const std::string& unique, const std::string& node) {
  std::lock_guard lock(mu_);
  auto v = volumes_.find(unique);
  if (v == volumes_.end()) return;
  auto n = v->second.nodes.find(node);
  if (n == v->second.nodes.end() || !n->second.reported) return;
  if (n->second.attached) changed_nodes_.insert(node);
  n->second.reported = false;
}

void ActualState::KeepAttached(const std::string& unique, const std::string& node) {
  std::lock_guard lock(mu_);
  auto v = volumes_.find(unique);
  if (v == volumes_.end()) return;
  auto n = v->second.nodes.find(node);
  if (n == v->second.nodes.end()) return;
  n->second.detach_requested.reset();
  if (n->second.reported) return;
  if (n->second.attached) changed_nodes_.insert(node);
  n->second.reported = true;
}

os::MonoTime ActualState::DetachRequested(const std::string& unique, const std::string& node,
                                          os::MonoTime now) {
  std::lock_guard lock(mu_);
  auto v = volumes_.find(unique);
  if (v == volumes_.end()) return now;
  auto n = v->second.nodes.find(node);
  if (n == v->second.nodes.end()) return now;
  if (!n->second.detach_requested) n->second.detach_requested = now;
  return *n->second.detach_requested;
}

std::vector<std::string> ActualState::NodesOf(const std::string& unique) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  auto v = volumes_.find(unique);
  if (v == volumes_.end()) return out;
  for (const auto& [node, n] : v->second.nodes) out.push_back(node);
  return out;
}

bool ActualState::AttachedTo(const std::string& unique, const std::string& node) const {
  std::lock_guard lock(mu_);
  auto v = volumes_.find(unique);
  if (v == volumes_.end()) return false;
  auto n = v->second.nodes.find(node);
  return n != v->second.nodes.end() && n->second.attached;
}

std::map<std::string, ActualVolume> ActualState::Volumes() const {
  std::lock_guard lock(mu_);
  return volumes_;
}

std::vector<api::AttachedVolume> ActualState::ReportedAttached(const std::string& node) const {
  std::lock_guard lock(mu_);
  std::vector<api::AttachedVolume> out;
  for (const auto& [unique, v] : volumes_) {
    auto n = v.nodes.find(node);
    if (n != v.nodes.end() && n->second.attached && n->second.reported) {
      out.push_back({unique, n->second.device_path});
    }
  }
  return out;  // sorted: volumes_ is
}

std::set<std::string> ActualState::TakeChangedNodes() {
  std::lock_guard lock(mu_);
  return std::exchange(changed_nodes_, {});
}

void ActualState::MarkNodeChanged(const std::string& node) {
  std::lock_guard lock(mu_);
  changed_nodes_.insert(node);
}

}  // namespace kvol::controller::attachdetach
