// Which node agent acts on a volume for the CSI drivers it runs (deletes it, grows it): the
// one whose node the volume's node affinity admits, or, for a volume without node affinity,
// the central agent (the one inside `kvol server`).
#pragma once

#include <string>

#include "api/node_selector.h"
#include "client/client.h"

namespace kvol::controller {

// `node` is the agent's own Node, or nullptr when it could not be read.
inline bool VolumeServedBy(const api::PersistentVolume& pv, const api::Node* node, bool central) {
  if (!pv.spec.node_affinity || !pv.spec.node_affinity->required) return central;
  return node && api::PersistentVolumeFitsNode(pv.spec, *node);
}

// The same, reading the agent's Node `node_name` from the API when the volume has affinity.
inline bool VolumeServedBy(client::Client& c, const api::PersistentVolume& pv,
                           const std::string& node_name, bool central) {
  if (!pv.spec.node_affinity || !pv.spec.node_affinity->required) return central;
  auto node = c.resource<api::Node>().Get("", node_name);
  return VolumeServedBy(pv, node.ok() ? &*node : nullptr, central);
}

}  // namespace kvol::controller
