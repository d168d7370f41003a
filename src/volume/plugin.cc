// The plugin manager and plugin-name escaping.
#include "volume/plugin.h"

#include <algorithm>
#include <filesystem>

namespace kvol::volume {

std::string UniqueVolumeName(std::string_view plugin, std::string_view volume_name) {
  std::string n;
  n.reserve(plugin.size() + volume_name.size() + 1);
  n.append(plugin).append("/").append(volume_name);
  return n;
}

std::string EscapePluginName(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (c == '/') c = '~';
  }
  return out;
}

std::string UnescapePluginName(std::string_view dir) {
  std::string out(dir);
  for (char& c : out) {
    if (c == '~') c = '/';
  }
  return out;
}

namespace layout {

std::string PodDir(std::string_view root, std::string_view pod_uid) {
  return std::string(root) + "/pods/" + std::string(pod_uid);
}
std::string PodVolumeDir(std::string_view root, std::string_view pod_uid, std::string_view plugin,
                         std::string_view volume) {
  return PodDir(root, pod_uid) + "/volumes/" + EscapePluginName(plugin) + "/" + std::string(volume);
}
std::string PodDeviceDir(std::string_view root, std::string_view pod_uid, std::string_view plugin,
                         std::string_view volume) {
  return PodDir(root, pod_uid) + "/volumeDevices/" + EscapePluginName(plugin) + "/" +
         std::string(volume);
}
std::string PluginDir(std::string_view root, std::string_view plugin) {
  return std::string(root) + "/plugins/" + std::string(plugin);
}

}  // namespace layout

std::vector<DeviceMountableVolumePlugin::FoundDevice> FoundDevicesUnder(const std::string& dir) {
  std::vector<DeviceMountableVolumePlugin::FoundDevice> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator e(dir, ec), end; !ec && e != end; e.increment(ec)) {
    out.push_back({e->path().filename().string(), e->path().string()});
  }
  return out;
}

Status PluginManager::Register(std::unique_ptr<VolumePlugin> plugin) {
  std::unique_lock lock(mu_);
  for (const auto& p : plugins_) {
    if (p->Name() == plugin->Name()) {
      return AlreadyExistsError("volume plugin \"" + std::string(plugin->Name()) +
                                "\" was registered twice");
    }
  }
  plugins_.push_back(std::move(plugin));
  return OkStatus();
}

Status PluginManager::RegisterProvisioner(std::unique_ptr<Provisioner> provisioner) {
  std::unique_lock lock(mu_);
  for (const auto& p : provisioners_) {
    if (p->name() == provisioner->name()) {
      return AlreadyExistsError("provisioner \"" + std::string(provisioner->name()) +
                                "\" was registered twice");
    }
  }
  provisioners_.push_back(std::move(provisioner));
  return OkStatus();
}

Provisioner* PluginManager::FindProvisioner(std::string_view name) const {
  std::shared_lock lock(mu_);
  for (const auto& p : provisioners_) {
    if (p->name() == name) return p.get();
  }
  return nullptr;
}

std::vector<std::string> PluginManager::ProvisionerNames() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  for (const auto& p : provisioners_) out.emplace_back(p->name());
  return out;
}

VolumePlugin* PluginManager::FindOneBySpec(const Spec& spec, Status* error) const {
  std::vector<VolumePlugin*> matches;
  for (const auto& p : plugins_) {
    if (p->CanSupport(spec)) matches.push_back(p.get());
  }
  if (matches.empty()) {
    *error = NotFoundError("no volume plugin matched");
    return nullptr;
  }
  if (matches.size() > 1) {
    std::string names;
    for (auto* p : matches) names += (names.empty() ? "" : ",") + std::string(p->Name());
    *error = InvalidArgumentError("multiple volume plugins matched: " + names);
    return nullptr;
  }
  return matches.front();
}

StatusOr<VolumePlugin*> PluginManager::FindBySpec(const Spec& spec) {
  Status error;
  Prober prober;
  {
    std::shared_lock lock(mu_);
    if (VolumePlugin* p = FindOneBySpec(spec, &error)) return p;
    if (error.code() != StatusCode::kNotFound || !prober_) return error;
    prober = prober_;
  }
  std::vector<std::unique_ptr<VolumePlugin>> found = prober();
  std::unique_lock lock(mu_);
  for (auto& p : found) {
    const bool known = std::any_of(plugins_.begin(), plugins_.end(),
                                   [&](const auto& q) { return q->Name() == p->Name(); });
    if (!known) plugins_.push_back(std::move(p));
  }
  if (VolumePlugin* p = FindOneBySpec(spec, &error)) return p;
  return error;
}

void PluginManager::SetProber(Prober prober) {
  std::unique_lock lock(mu_);
  prober_ = std::move(prober);
}

VolumePlugin* PluginManager::FindByName(std::string_view name) const {
  std::shared_lock lock(mu_);
  for (const auto& p : plugins_) {
    if (p->Name() == name) return p.get();
  }
  return nullptr;
}

std::vector<std::string> PluginManager::Names() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  for (const auto& p : plugins_) out.emplace_back(p->Name());
  return out;
}

}  // namespace kvol::volume
