// The attach/detach controller's reconciler, as Kubernetes': compares the desired state of the
// world with the actual one and starts attaches and detaches through `Operations`. It only
// decides; the operations themselves are the controller's.
//
// Detaches come first. A volume attached to a managed node and no longer wanted there is
// detached once the node's status.volumesInUse no longer lists it; or, without that check,
// once the node has the node.kubernetes.io/out-of-service taint, or once it has been unwanted
// for max_wait_for_unmount while the node is not Ready (unless that is switched off). Before a
// detach starts, the node's status.volumesAttached stops listing the volume, so the node mounts
// it no more.
//
// Then attaches: a wanted volume not attached to its node is attached, unless it may be
// attached to one node only (ReadWriteOnce, ReadWriteOncePod) and is attached, or may be, to
// another: then its pods get a FailedAttachVolume "Multi-Attach error" event, once.
#pragma once

#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "controller/attachdetach/actual_state.h"
#include "controller/attachdetach/desired_state.h"
#include "os/clock.h"

namespace kvol::controller::attachdetach {

inline constexpr std::string_view kOutOfServiceTaint = "node.kubernetes.io/out-of-service";

// What the reconciler knows of a node, from the cache.
struct NodeInfo {
  bool exists = false;
  bool managed = false;  // volumes.kubernetes.io/controller-managed-attach-detach: "true"
  bool ready = false;    // condition Ready is True
  bool out_of_service = false;
  std::set<std::string> volumes_in_use;  // status.volumesInUse
};

class Operations {
 public:
  virtual ~Operations() = default;
  // Whether an attach or detach of the volume is queued or running: to or from `node`, or to
  // or from any node when `node` is empty.
  virtual bool IsPending(const std::string& unique, const std::string& node) const = 0;
  virtual void Attach(const VolumeToAttach& v, const std::string& node) = 0;
  // `verify_safe`: check again, against the node as the API server has it now, that the node
  // does not use the volume; false for a forced detach.
  virtual void Detach(const std::string& unique, const ActualVolume& v, const std::string& node,
                      bool verify_safe) = 0;
  // Writes the node's status.volumesAttached now: whether it was written.
  virtual bool UpdateNodeStatus(const std::string& node) = 0;
  virtual void PodEvent(const PodRef& pod, std::string_view type, std::string_view reason,
                        std::string message) = 0;
};

struct ReconcilerOptions {
  std::chrono::milliseconds max_wait_for_unmount{std::chrono::minutes(6)};
  // Whether a volume is detached from a node that is not Ready once max_wait_for_unmount has
  // passed, although the node may still use it.
  bool force_detach_on_timeout = true;
};

class Reconciler {
 public:
  Reconciler(ActualState& actual, Operations& operations, const os::Clock& clock,
             std::function<NodeInfo(const std::string& node)> node_info,
             ReconcilerOptions options = {});

  void Reconcile(const DesiredState& desired);

  // When a pass must run again though nothing changes: a detach waiting for
  // max_wait_for_unmount to pass. nullopt when none waits.
  std::optional<os::MonoTime> NextDeadline() const { return next_deadline_; }

 private:
  void DetachVolumes(const DesiredState& desired);
  void AttachVolumes(const DesiredState& desired);
  void ReportMultiAttach(const DesiredState& desired, const VolumeToAttach& v,
                         const std::vector<std::string>& others);

  ActualState& actual_;
  Operations& operations_;
  const os::Clock& clock_;
  const std::function<NodeInfo(const std::string&)> node_info_;
  const ReconcilerOptions options_;
  // "<unique>@<node>" whose pods were told of a Multi-Attach error while it lasts.
  std::set<std::string> multi_attach_reported_;
  std::optional<os::MonoTime> next_deadline_;
};

}  // namespace kvol::controller::attachdetach
