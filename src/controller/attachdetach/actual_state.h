// The attach/detach controller's actual state of the world: which volume is attached to which
// node, as its operations have left it. Rebuilt at start from the VolumeAttachments and every
// node's status.volumesAttached; from then on the operations mark what they did. What each
// node reports as attached (status.volumesAttached) comes from here. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/core.h"
#include "os/clock.h"

namespace kvol::controller::attachdetach {

struct NodeAttachment {
  // Attached for certain. False while an attach is in flight, after one failed half-way, or
  // while a detach runs: the volume may be attached there.
  bool attached = false;
  std::string device_path;
  // Listed in the node's status.volumesAttached. False once a detach is decided, so that the
  // node mounts it no more.
  bool reported = true;
  // When the controller first wanted it detached while the node still used it.
  std::optional<os::MonoTime> detach_requested;
};

struct ActualVolume {
  std::string plugin;                           // the attacher's plugin name
  std::string volume_name;                      // Spec::Name(): what Detach takes
  std::map<std::string, NodeAttachment> nodes;  // by node name
};

class ActualState {
 public:
  // The volume is attached to the node for certain.
  void MarkAttached(const std::string& unique, const std::string& plugin,
                    const std::string& volume_name, const std::string& node,
                    const std::string& device_path);
  // The volume may be attached to the node: an attach started, or failed half-way.
  void MarkUncertain(const std::string& unique, const std::string& plugin,
                     const std::string& volume_name, const std::string& node);
  void MarkDetached(const std::string& unique, const std::string& node);
  // A detach of it starts: the node no longer reports it attached.
  void MarkDetaching(const std::string& unique, const std::string& node);
  // Wanted on the node again, or a detach failed: reported attached again (when it is) and no
  // detach requested.
  void KeepAttached(const std::string& unique, const std::string& node);
  // The first time the controller wanted it gone from the node, from `now` on.
  os::MonoTime DetachRequested(const std::string& unique, const std::string& node,
                               os::MonoTime now);

  // Nodes the volume is attached to, or may be.
  std::vector<std::string> NodesOf(const std::string& unique) const;
  bool AttachedTo(const std::string& unique, const std::string& node) const;
  std::map<std::string, ActualVolume> Volumes() const;

  // What the node reports as attached: its volumes attached for certain and not being
  // detached, by name.
  std::vector<api::AttachedVolume> ReportedAttached(const std::string& node) const;
  // Nodes whose report changed since the last call.
  std::set<std::string> TakeChangedNodes();
  // The node's report must be written again (the last write failed).
  void MarkNodeChanged(const std::string& node);

 private:
  mutable std::mutex mu_;
  std::map<std::string, ActualVolume> volumes_;  // guarded by mu_, by unique name
  std::set<std::string> changed_nodes_;          // guarded by mu_
};

}  // namespace kvol::controller::attachdetach
