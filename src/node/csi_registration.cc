// CsiRegistrationHandler: NodeGetInfo, then the API objects, then the driver table.
#include "node/csi_registration.h"

#include "base/log.h"

namespace kvol::node {

namespace pb = ::csi::v1;

Status CsiRegistrationHandler::Validate(const std::string& name, const std::string& endpoint,
                                        const std::vector<std::string>& versions) {
  if (name.empty()) return InvalidArgumentError("the plugin at " + endpoint + " gave no name");
  std::string offered;
  for (const auto& v : versions) {
    if (v.rfind("1.", 0) == 0 || v.rfind("v1.", 0) == 0) return OkStatus();
    offered += (offered.empty() ? "" : ", ") + v;
  }
  return InvalidArgumentError("none of the versions specified [" + offered +
                              "] are supported by CSI driver \"" + name +
                              "\": kvol speaks CSI 1.x");
}

Status CsiRegistrationHandler::Register(const std::string& name, const std::string& endpoint) {
  auto client = csi::Client::New(endpoint);
  if (!client.ok()) return client.status();
  std::shared_ptr<csi::Client> shared = *std::move(client);
  auto info = shared->Call(&pb::Node::Stub::NodeGetInfo, pb::NodeGetInfoRequest(), timeout_);
  if (!info.ok()) {
    return Status(info.status().code(),
                  "CSI driver " + name + ": NodeGetInfo failed: " + info.status().message());
  }
  if (info->node_id().empty()) {
    return InvalidArgumentError("CSI driver " + name + ": NodeGetInfo gave no node_id");
  }
  auto driver = std::make_shared<volume::plugins::CsiDriver>();
  driver->name = name;
  driver->endpoint = endpoint;
  driver->node_id = info->node_id();
  driver->max_volumes_per_node = info->max_volumes_per_node();
  if (info->has_accessible_topology()) {
    for (const auto& [k, v] : info->accessible_topology().segments()) driver->topology[k] = v;
  }
  driver->client = shared;
  CsiNodeDriverInfo published{
      .name = name, .node_id = driver->node_id, .topology = driver->topology};
  if (driver->max_volumes_per_node > 0) {
    published.max_volumes = static_cast<int32_t>(driver->max_volumes_per_node);
  }
  KVOL_RETURN_IF_ERROR(node_info_.AddDriver(published));
  drivers_.Add(std::move(driver));
  return OkStatus();
}

void CsiRegistrationHandler::Deregister(const std::string& name, const std::string& endpoint) {
  if (!drivers_.Remove(name, endpoint)) return;  // replaced by a newer registration
  if (Status s = node_info_.RemoveDriver(name); !s.ok()) {
    log::Warn("CSI driver " + name + " deregistered, but its CSINode entry stays: " + s.message());
  }
}

StatusOr<std::string> CsiRegistrationHandler::NameOf(const std::string& endpoint) {
  KVOL_ASSIGN_OR_RETURN(auto client, csi::Client::New(endpoint));
  auto info =
      client->Call(&pb::Identity::Stub::GetPluginInfo, pb::GetPluginInfoRequest(), timeout_);
  if (!info.ok()) return info.status();
  if (info->name().empty()) return InvalidArgumentError(endpoint + ": GetPluginInfo gave no name");
  return info->name();
}

}  // namespace kvol::node
