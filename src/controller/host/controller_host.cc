// ControllerHost: directories under its root, objects from the API server.
#include "controller/host/controller_host.h"

#include "api/api_error.h"

namespace kvol::controller {
namespace {

template <class T>
StatusOr<T> Fetch(client::Client& client, std::string_view ns, std::string_view name,
                  std::string_view what) {
  auto got = client.resource<T>().Get(ns, name);
  if (got.ok()) return *std::move(got);
  if (api::IsNotFound(got.error())) {
    return NotFoundError(std::string(what) + " \"" + std::string(name) + "\" not found");
  }
  return UnavailableError(got.error().message);
}

}  // namespace

std::string ControllerHost::PodVolumeDir(std::string_view pod_uid, std::string_view plugin,
                                         std::string_view volume) const {
  return volume::layout::PodVolumeDir(root_, pod_uid, plugin, volume);
}

std::string ControllerHost::PodDeviceDir(std::string_view pod_uid, std::string_view plugin,
                                         std::string_view volume) const {
  return volume::layout::PodDeviceDir(root_, pod_uid, plugin, volume);
}

std::string ControllerHost::PluginDir(std::string_view plugin) const {
  return volume::layout::PluginDir(root_, plugin);
}

StatusOr<api::ConfigMap> ControllerHost::GetConfigMap(std::string_view ns, std::string_view name) {
  return Fetch<api::ConfigMap>(client_, ns, name, "configmap");
}

StatusOr<api::Secret> ControllerHost::GetSecret(std::string_view ns, std::string_view name) {
  return Fetch<api::Secret>(client_, ns, name, "secret");
}

}  // namespace kvol::controller
