// The attach/detach controller's desired state of the world, as Kubernetes'
// (pkg/controller/volume/attachdetach/cache): for each node the controller manages, the
// attachable volumes of the pods scheduled there. The populator computes it afresh from the
// caches at every pass, so a pod that went without an event is gone from it at the next pass.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/core.h"
#include "volume/plugin.h"

namespace kvol::controller::attachdetach {

class Attacher;

struct PodRef {
  std::string ns, name, uid;
  auto operator<=>(const PodRef&) const = default;
};

// One attachable volume wanted on one node.
struct VolumeToAttach {
  std::string unique_name;  // "<plugin>/<spec.Name()>", as the node agent names it
  Attacher* attacher = nullptr;
  volume::Spec spec;
  // Whether it may be attached to several nodes at once: false for a PersistentVolume whose
  // access modes are all ReadWriteOnce or ReadWriteOncePod, as Kubernetes' isMultiAttachAllowed.
  bool multi_attach = true;
  std::vector<PodRef> pods;  // the node's pods that use it, sorted
};

struct DesiredNode {
  std::map<std::string, VolumeToAttach> volumes;  // by unique name
};

// By node name; managed nodes only.
using DesiredState = std::map<std::string, DesiredNode>;

// What the populator reads: the controller's caches.
struct PopulateSources {
  std::vector<std::shared_ptr<const api::Pod>> pods;
  std::function<bool(const std::string& node)> managed;
  std::function<std::shared_ptr<const api::PersistentVolumeClaim>(const std::string& ns,
                                                                  const std::string& name)>
      claim;
  std::function<std::shared_ptr<const api::PersistentVolume>(const std::string& name)> volume;
  // The attacher that serves `spec` when it must be attached; nullptr otherwise.
  std::function<Attacher*(const volume::Spec& spec)> attacher_for;
};

// Every managed node's attachable volumes: of pods scheduled to it that have not terminated.
// A claim not yet bound, or bound to a volume not in the cache, is left out: its pod waits.
DesiredState Populate(const PopulateSources& sources);

// As Kubernetes' IsPodTerminated: Succeeded or Failed, or being deleted with no container
// running.
bool PodTerminated(const api::Pod& pod);

// As Kubernetes' isMultiAttachAllowed.
bool MultiAttachAllowed(const volume::Spec& spec);

}  // namespace kvol::controller::attachdetach
