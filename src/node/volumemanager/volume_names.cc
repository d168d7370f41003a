#include "node/volumemanager/volume_names.h"

namespace kvol::node::volumemanager {

std::string VolumeKey(std::string_view pod_uid, std::string_view plugin,
                      std::string_view dir_name) {
  std::string k;
  k.reserve(pod_uid.size() + plugin.size() + dir_name.size() + 2);
  k.append(pod_uid).append("/").append(plugin).append("/").append(dir_name);
  return k;
}

}  // namespace kvol::node::volumemanager

namespace kvol::node::volumemanager {

std::string AttachOperationKey(std::string_view unique_name) {
  return "attach/" + std::string(unique_name);
}

std::string DeviceOperationKey(std::string_view unique_name) {
  return "device/" + std::string(unique_name);
}

std::string ResizeOperationKey(std::string_view unique_name) {
  return "resize/" + std::string(unique_name);
}

}  // namespace kvol::node::volumemanager
