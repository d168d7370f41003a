// What a node publishes about its CSI drivers, as kubelet's nodeinfomanager writes it: an entry
// per driver in the node's CSINode (name, node ID, topology keys, how many volumes it may hold),
// the driver's node ID in the Node's csi.volume.kubernetes.io/nodeid annotation, and the
// driver's topology segments among the Node's labels.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "base/status.h"
#include "client/client.h"

namespace kvol::node {

struct CsiNodeDriverInfo {
  std::string name;
  std::string node_id;
  std::map<std::string, std::string> topology;  // key -> this node's value
  std::optional<int32_t> max_volumes;           // allocatable.count, when the driver says
};

class CsiNodeInfo {
 public:
  CsiNodeInfo(client::Client& client, std::string node_name)
      : client_(client), node_name_(std::move(node_name)) {}

  // Publishes a driver (replacing what the node said of a driver of that name). NotFound while
  // the Node is not registered yet.
  Status AddDriver(const CsiNodeDriverInfo& info);
  // Withdraws a driver: its CSINode entry and its node ID. Labels stay, as in Kubernetes.
  Status RemoveDriver(const std::string& name);

 private:
  Status UpdateNode(const std::string& name, const std::optional<CsiNodeDriverInfo>& info);
  Status UpdateCsiNode(const std::string& name, const std::optional<CsiNodeDriverInfo>& info);

  client::Client& client_;
  const std::string node_name_;
};

}  // namespace kvol::node
