// CsiNodeInfo: read-modify-write of the Node and its CSINode, retried on conflicts.
#include "node/csi_node_info.h"

#include <algorithm>

#include "api/well_known.h"
#include "client/worker.h"

namespace kvol::node {

using client::ApiStatus;

Status CsiNodeInfo::AddDriver(const CsiNodeDriverInfo& info) {
  KVOL_RETURN_IF_ERROR(UpdateNode(info.name, info));
  return UpdateCsiNode(info.name, info);
}

Status CsiNodeInfo::RemoveDriver(const std::string& name) {
  KVOL_RETURN_IF_ERROR(UpdateCsiNode(name, std::nullopt));
  Status s = UpdateNode(name, std::nullopt);
  return s.code() == StatusCode::kNotFound ? OkStatus() : s;
}

Status CsiNodeInfo::UpdateNode(const std::string& name,
                               const std::optional<CsiNodeDriverInfo>& info) {
  auto written =
      client::Mutate<api::Node>(client_.resource<api::Node>(), "", node_name_, [&](api::Node& n) {
        auto& annotations = n.metadata.annotations;
        const std::string key(api::kAnnCSINodeID);
        api::Json ids = api::Json::object();
        if (auto it = annotations.find(key); it != annotations.end()) {
          ids = api::Json::parse(it->second, nullptr, false);
          if (!ids.is_object()) ids = api::Json::object();
        }
        const api::Json before = ids;
        bool changed = false;
        if (info) {
          ids[name] = info->node_id;
          for (const auto& [k, v] : info->topology) {
            auto& label = n.metadata.labels[k];
            if (label != v) {
              label = v;
              changed = true;
            }
          }
        } else {
          ids.erase(name);
        }
        if (ids != before) {
          changed = true;
          if (ids.empty()) {
            annotations.erase(key);
          } else {
            annotations[key] = ids.dump();
          }
        }
        return changed;
      });
  if (!written.ok()) return ApiStatus(written.error());
  return OkStatus();
}

Status CsiNodeInfo::UpdateCsiNode(const std::string& name,
                                  const std::optional<CsiNodeDriverInfo>& info) {
  auto& csinodes = client_.resource<api::CSINode>();
  if (info) {
    // The CSINode exists from the first driver on, owned by the Node so that it goes with it.
    auto node = client_.resource<api::Node>().Get("", node_name_);
    if (!node.ok()) return ApiStatus(node.error());
    api::CSINode fresh;
    fresh.metadata.name = node_name_;
    fresh.metadata.owner_references.push_back(
        {.api_version = "v1", .kind = "Node", .name = node_name_, .uid = node->metadata.uid});
    auto created = csinodes.Create(fresh);
    if (!created.ok() && !api::IsAlreadyExists(created.error())) {
      return ApiStatus(created.error());
    }
  }
  auto written = client::Mutate<api::CSINode>(csinodes, "", node_name_, [&](api::CSINode& c) {
    auto& drivers = c.spec.drivers;
    auto it = std::find_if(drivers.begin(), drivers.end(),
                           [&](const api::CSINodeDriver& d) { return d.name == name; });
    if (!info) {
      if (it == drivers.end()) return false;
      drivers.erase(it);
      return true;
    }
    api::CSINodeDriver want{.name = name, .node_id = info->node_id};
    for (const auto& [k, v] : info->topology) want.topology_keys.push_back(k);
    if (info->max_volumes) want.allocatable = api::VolumeNodeResources{.count = info->max_volumes};
    if (it != drivers.end()) {
      if (it->node_id == want.node_id && it->topology_keys == want.topology_keys &&
          it->allocatable.has_value() == want.allocatable.has_value() &&
          (!it->allocatable || it->allocatable->count == want.allocatable->count)) {
        return false;
      }
      *it = want;
    } else {
      drivers.push_back(want);
    }
    return true;
  });
  if (!written.ok()) {
    if (!info && api::IsNotFound(written.error())) return OkStatus();
    return ApiStatus(written.error());
  }
  return OkStatus();
}

}  // namespace kvol::node
