// The reconciler, as kubelet's: compares the desired state of the world with the actual one and
// starts the operations that bring the actual state closer. It only decides; the operations
// themselves (what they run, what they mark, the events they give) are the operation
// generator's, behind `Operations`.
//
// Each pass starts tear-downs first (pod volumes no pod wants, then devices no pod volume uses,
// then attachments no device or pod volume uses), then set-ups in order: an attachment, then
// the device, then the pod volume, then a node expansion once the volume is set up. Each
// operation finishing wakes the next pass for the next step.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "node/volumemanager/actual_state_of_world.h"
#include "node/volumemanager/desired_state_of_world.h"
#include "volume/plugin.h"

namespace kvol::node::volumemanager {

// On a node whose attachments the attach/detach controller makes, what the node's status says,
// as the API server has it: the volumes the controller attached, and those the node said it
// uses. The agent then attaches and detaches nothing itself: it waits for a volume to be listed
// attached (kubelet's VerifyControllerAttachedVolume), and mounts an attached volume's device
// only once its status lists the volume in use, so the controller never detaches what is
// about to be mounted.
struct ControllerAttachments {
  std::map<std::string, std::string> attached;  // status.volumesAttached: name -> device path
  std::set<std::string> in_use;                 // status.volumesInUse
};

// What the reconciler starts. Each call queues one operation unless one is in flight for its
// key or its key is backing off (then it does nothing).
class Operations {
 public:
  virtual ~Operations() = default;
  // Whether an operation for `key` (a VolumeKey or one of volume_names.h's) is queued or running.
  virtual bool IsPending(const std::string& key) const = 0;
  // Forgets the backoff of every key not in `keep`, so that keys of volumes gone do not pile up.
  virtual void ForgetBackoffExcept(const std::set<std::string>& keep) = 0;

  virtual void Attach(const DesiredPod& pod, const DesiredVolume& v) = 0;
  // The controller attached it: waits for the device and marks it attached.
  virtual void VerifyAttached(const DesiredPod& pod, const DesiredVolume& v,
                              const std::string& device_path) = 0;
  virtual void MountDevice(const DesiredPod& pod, const DesiredVolume& v,
                           const std::string& device_path) = 0;
  virtual void SetUp(const std::string& key, const DesiredPod& pod, const DesiredVolume& v) = 0;
  virtual void NodeExpand(const DesiredPod& pod, const DesiredVolume& v,
                          volume::NodeExpandOptions o) = 0;
  virtual void TearDown(const std::string& key, const ActualVolume& v) = 0;
  virtual void UnmountDevice(const std::string& name, const ActualDevice& d) = 0;
  virtual void Detach(const std::string& name, const ActualAttachment& a) = 0;
  // The controller detaches it: forgets it at once.
  virtual void ForgetAttachment(const std::string& name, const ActualAttachment& a) = 0;
};

class Reconciler {
 public:
  // `containers_alive(uid)`: whether a container of the pod may still run; such a pod keeps
  // its volumes even when it is gone from the desired state. Must not block.
  // `controller`: set on a node whose attachments the attach/detach controller makes; called
  // once per pass.
  Reconciler(ActualStateOfWorld& actual, Operations& operations,
             std::function<bool(const std::string& uid)> containers_alive,
             std::function<ControllerAttachments()> controller = nullptr);

  // One pass against `desired` (by pod uid).
  void Reconcile(const DesiredPods& desired);

  // At a resync: pod volumes and devices recorded as mounted that are no longer there
  // (unmounted behind the agent's back) become uncertain, so that the next pass sets them up
  // again. `mount_points`: every path in the mount table.
  void MarkDrifted(const std::set<std::string>& mount_points);

 private:
  // What the desired state asks for, by kind.
  struct Wanted {
    std::set<std::string> volumes;      // VolumeKey
    std::set<std::string> devices;      // unique names
    std::set<std::string> attachments;  // unique names
    std::set<std::string> resizes;      // unique names
  };
  void UnmountVolumes(const DesiredPods& desired, const Wanted& wanted);
  void UnmountDevices(const Wanted& wanted);
  void DetachVolumes(const Wanted& wanted, const std::optional<ControllerAttachments>& ctl);
  void ForgetBackoff(const Wanted& wanted);
  void MountOrAttachVolumes(const DesiredPods& desired,
                            const std::optional<ControllerAttachments>& ctl);
  void MountOrAttach(const std::string& key, const DesiredPod& dp, const DesiredVolume& v,
                     const std::optional<ControllerAttachments>& ctl);
  void ExpandVolume(const std::string& key, const DesiredPod& pod, const DesiredVolume& v);
  bool ContainersAlive(const std::string& uid) const;

  ActualStateOfWorld& actual_;
  Operations& operations_;
  const std::function<bool(const std::string&)> containers_alive_;
  const std::function<ControllerAttachments()> controller_;
};

}  // namespace kvol::node::volumemanager
