#include "controller/attachdetach/reconciler.h"

#include <algorithm>

#include "base/log.h"

namespace kvol::controller::attachdetach {
namespace {

bool Wanted(const DesiredState& desired, const std::string& unique, const std::string& node) {
  auto n = desired.find(node);
  return n != desired.end() && n->second.volumes.count(unique) > 0;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

}  // namespace

Reconciler::Reconciler(ActualState& actual, Operations& operations, const os::Clock& clock,
                       std::function<NodeInfo(const std::string& node)> node_info,
                       ReconcilerOptions options)
    : actual_(actual),
      operations_(operations),
      clock_(clock),
      node_info_(std::move(node_info)),
      options_(options) {}

void Reconciler::Reconcile(const DesiredState& desired) {
  next_deadline_.reset();
  DetachVolumes(desired);
  AttachVolumes(desired);
}

void Reconciler::DetachVolumes(const DesiredState& desired) {
  const os::MonoTime now = clock_.Monotonic();
  for (const auto& [unique, v] : actual_.Volumes()) {
    for (const auto& [node, at] : v.nodes) {
      if (Wanted(desired, unique, node)) continue;
      // OBSERVATION: attached (or maybe) and not wanted there.
      const NodeInfo info = node_info_(node);
      // A node the controller does not manage attaches for itself.
      if (info.exists && !info.managed) continue;
      if (operations_.IsPending(unique, node)) continue;
      const os::MonoTime since = actual_.DetachRequested(unique, node, now);
      const bool timeout = now - since >= options_.max_wait_for_unmount;
      const bool force =
          (options_.force_detach_on_timeout && timeout && !info.ready) || info.out_of_service;
      // A node that is gone from the API may still use it: as in use, until forced.
      const bool in_use = !info.exists || info.volumes_in_use.count(unique) > 0;
      if (in_use && !force) {
        if (!info.ready && options_.force_detach_on_timeout) {
          const auto deadline = since + options_.max_wait_for_unmount;
          if (!next_deadline_ || deadline < *next_deadline_) next_deadline_ = deadline;
        }
        continue;
      }
      // OBSERVATION: the node does not use it, or it is forced away. The node stops listing it
      // as attached before the detach starts; if that cannot be written, it waits.
      actual_.MarkDetaching(unique, node);
      if (!operations_.UpdateNodeStatus(node)) continue;
      if (in_use) {
        log::Warn("force detaching volume " + unique + " from node " + node +
                  (info.out_of_service ? ": the node is out of service"
                                       : ": maxWaitForUnmountDuration expired"));
      }
      operations_.Detach(unique, v, node, /*verify_safe=*/!(timeout || info.out_of_service));
    }
  }
}

void Reconciler::AttachVolumes(const DesiredState& desired) {
  std::set<std::string> still_multi;
  for (const auto& [node, dn] : desired) {
    for (const auto& [unique, v] : dn.volumes) {
      // A volume for one node at a time has one operation at a time, whatever the node.
      if (operations_.IsPending(unique, v.multi_attach ? node : std::string())) continue;
      if (actual_.AttachedTo(unique, node)) {
        actual_.KeepAttached(unique, node);
        continue;
      }
      if (!v.multi_attach) {
        std::vector<std::string> others = actual_.NodesOf(unique);
        std::erase(others, node);
        if (!others.empty()) {
          const std::string key = unique + "@" + node;
          still_multi.insert(key);
          if (multi_attach_reported_.insert(key).second) {
            ReportMultiAttach(desired, v, others);
          }
          continue;
        }
      }
      operations_.Attach(v, node);
    }
  }
  std::erase_if(multi_attach_reported_, [&](const auto& k) { return !still_multi.count(k); });
}

// As Kubernetes' reportMultiAttachError: each pod learns which pods of its own namespace hold
// the volume on the other nodes, and only how many of other namespaces.
void Reconciler::ReportMultiAttach(const DesiredState& desired, const VolumeToAttach& v,
                                   const std::vector<std::string>& others) {
  std::vector<PodRef> holders;
  for (const auto& other : others) {
    auto n = desired.find(other);
    if (n == desired.end()) continue;
    auto w = n->second.volumes.find(v.unique_name);
    if (w == n->second.volumes.end()) continue;
    holders.insert(holders.end(), w->second.pods.begin(), w->second.pods.end());
  }
  const std::string prefix = "Multi-Attach error for volume \"" + v.spec.Name() + "\" ";
  for (const auto& pod : v.pods) {
    std::string msg;
    if (holders.empty()) {
      msg = "Volume is already exclusively attached to one node and can't be attached to another";
    } else {
      std::vector<std::string> local;
      int other_ns = 0;
      for (const auto& h : holders) {
        if (h.ns == pod.ns) {
          local.push_back(h.name);
        } else {
          ++other_ns;
        }
      }
      if (!local.empty()) {
        msg = "Volume is already used by pod(s) " + Join(local);
        if (other_ns > 0) {
          msg += " and " + std::to_string(other_ns) + " pod(s) in different namespaces";
        }
      } else {
        msg = "Volume is already used by " + std::to_string(other_ns) +
              " pod(s) in different namespaces";
      }
    }
    operations_.PodEvent(pod, "Warning", "FailedAttachVolume", prefix + msg);
  }
}

}  // namespace kvol::controller::attachdetach
