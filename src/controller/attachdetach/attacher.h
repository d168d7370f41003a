// What attaches volumes of one kind to nodes for the attach/detach controller: kubelet's volume
// plugins' Attacher and Detacher, as the controller runs them.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "volume/plugin.h"

namespace kvol::controller::attachdetach {

class Attacher {
 public:
  virtual ~Attacher() = default;
  // The plugin's name: the first part of the volume's unique name ("kubernetes.io/csi").
  virtual std::string_view PluginName() const = 0;
  // Whether `spec` is this attacher's and must be attached before a node mounts it.
  virtual bool NeedsAttach(const volume::Spec& spec) = 0;
  // Attaches the volume to `node` and waits until it is: the device's path on the node, ""
  // when only the node can tell. Idempotent: attaching an attached volume succeeds. The error's
  // message is what follows "AttachVolume.Attach failed for volume \"X\" : ".
  virtual StatusOr<std::string> Attach(const volume::Spec& spec, const std::string& node) = 0;
  // Detaches the volume named `volume_name` (Spec::Name()) from `node` and waits until it is.
  // Idempotent: a volume not attached there is success.
  virtual Status Detach(const std::string& volume_name, const std::string& node) = 0;
};

}  // namespace kvol::controller::attachdetach
