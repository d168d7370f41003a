#include "apiserver/service_account_admission.h"

#include <string>

#include "api/well_known.h"

namespace kvol::apiserver {

bool ShouldAutomount(const api::ServiceAccount& account, const api::Pod& pod) {
  if (pod.spec.automount_service_account_token) return *pod.spec.automount_service_account_token;
  // A ServiceAccount's automountServiceAccountToken is a top-level field, kept as it came.
  const auto& fields = account.unknown_fields;
  if (fields.is_object()) {
    auto it = fields.find("automountServiceAccountToken");
    if (it != fields.end() && it->is_boolean()) return it->get<bool>();
  }
  return true;
}

api::ProjectedVolumeSource TokenVolumeSource() {
  api::ProjectedVolumeSource source;
  source.default_mode = 0644;
  source.sources.resize(3);
  source.sources[0].service_account_token = api::ServiceAccountTokenProjection{
      .expiration_seconds = kServiceAccountTokenSeconds, .path = "token"};
  source.sources[1].config_map =
      api::ConfigMapProjection{.name = std::string(api::kRootCaConfigMap),
                               .items = {api::KeyToPath{.key = std::string(api::kRootCaKey),
                                                        .path = std::string(api::kRootCaKey)}}};
  source.sources[2].downward_api = api::DownwardAPIProjection{
      .items = {api::DownwardAPIVolumeFile{
          .path = "namespace",
          .field_ref =
              api::ObjectFieldSelector{.api_version = "v1", .field_path = "metadata.namespace"}}}};
  return source;
}

void MountServiceAccountToken(api::Pod& pod, std::string_view volume_name) {
  std::string name;
  for (const auto& v : pod.spec.volumes) {
    if (v.name.starts_with(kServiceAccountVolumePrefix)) {
      name = v.name;
      break;
    }
  }
  const bool has_volume = !name.empty();
  if (!has_volume) name = std::string(volume_name);

  bool needed = false;
  auto mount_in = [&](std::vector<api::Container>& containers) {
    for (auto& c : containers) {
      bool mounted = false;
      for (const auto& m : c.volume_mounts)
        mounted |= m.mount_path == api::kServiceAccountTokenMountPath;
      if (mounted) continue;  // a mount of its own at the path keeps the token out
      c.volume_mounts.push_back(
          api::VolumeMount{.name = name,
                           .read_only = true,
                           .mount_path = std::string(api::kServiceAccountTokenMountPath)});
      needed = true;
    }
  };
  mount_in(pod.spec.init_containers);
  mount_in(pod.spec.containers);
  if (needed && !has_volume) {
    api::Volume volume;
    volume.name = name;
    volume.projected = TokenVolumeSource();
    pod.spec.volumes.push_back(std::move(volume));
  }
}

}  // namespace kvol::apiserver
