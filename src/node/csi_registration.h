// The registration of CSI drivers on a node, as kubelet's csi plugin handles it: a driver that
// registers (through plugins_registry/ or --csi-driver) is asked for its node ID, topology and
// volume limit (NodeGetInfo), published in the node's CSINode and Node, and added to the
// drivers the csi volume plugin calls. Deregistering undoes both.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "node/csi_node_info.h"
#include "node/pluginwatcher/plugin_watcher.h"
#include "volume/plugins/csi/csi_drivers.h"

namespace kvol::node {

class CsiRegistrationHandler : public pluginwatcher::PluginHandler {
 public:
  CsiRegistrationHandler(CsiNodeInfo& node_info, volume::plugins::CsiDrivers& drivers,
                         std::chrono::milliseconds timeout = std::chrono::seconds(30))
      : node_info_(node_info), drivers_(drivers), timeout_(timeout) {}

  // A name, and a CSI version kvol speaks (1.x) among those the driver offers.
  Status Validate(const std::string& name, const std::string& endpoint,
                  const std::vector<std::string>& versions) override;
  Status Register(const std::string& name, const std::string& endpoint) override;
  void Deregister(const std::string& name, const std::string& endpoint) override;
  StatusOr<std::string> NameOf(const std::string& endpoint) override;

 private:
  CsiNodeInfo& node_info_;
  volume::plugins::CsiDrivers& drivers_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace kvol::node
