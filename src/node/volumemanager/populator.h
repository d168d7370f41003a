// The desired-state populator: what one pod on this node needs, resolved against the API's
// objects (a claim to its bound PersistentVolume, configMap and secret sources to their
// versions) and matched to a plugin. The lookups come from the agent's caches; the only look
// at the node is whether a local volume's path is a block device.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "api/core.h"
#include "node/volumemanager/desired_state_of_world.h"
#include "volume/plugin.h"

namespace kvol::node::volumemanager {

// Read-only views of the caches; nullptr when the object is not there.
struct Lookups {
  std::function<std::shared_ptr<const api::PersistentVolumeClaim>(const std::string& ns,
                                                                  const std::string& name)>
      claim;
  std::function<std::shared_ptr<const api::PersistentVolume>(const std::string& name)> volume;
  // The resourceVersion of a ConfigMap / Secret, "" when it does not exist.
  std::function<std::string(const std::string& ns, const std::string& name)> config_map_version;
  std::function<std::string(const std::string& ns, const std::string& name)> secret_version;
};

// Whether a pod's volumes should be set up: it is not finished (Succeeded/Failed) and not
// being deleted.
bool PodNeedsVolumes(const api::Pod& pod);

// `resync` counts the volume manager's resyncs: volumes to be set up again at each (RequiresRemount
// with no source version to follow) have it as their content version.
DesiredPod Populate(std::shared_ptr<const api::Pod> pod, const Lookups& lookups,
                    volume::PluginManager& plugins, uint64_t resync = 0);

}  // namespace kvol::node::volumemanager
