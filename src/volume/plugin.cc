// The plugin manager and plugin-name escaping.
#include "volume/plugin.h"

namespace kvol::volume {

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

Status PluginManager::Register(std::unique_ptr<VolumePlugin> plugin) {
  if (FindByName(plugin->Name())) {
    return AlreadyExistsError("volume plugin \"" + std::string(plugin->Name()) +
                              "\" was registered twice");
  }
  plugins_.push_back(std::move(plugin));
  return OkStatus();
}

StatusOr<VolumePlugin*> PluginManager::FindBySpec(const Spec& spec) const {
  std::vector<VolumePlugin*> matches;
  for (const auto& p : plugins_) {
    if (p->CanSupport(spec)) matches.push_back(p.get());
  }
  if (matches.empty()) {
    return NotFoundError("no volume plugin matched");
  }
  if (matches.size() > 1) {
    std::string names;
    for (auto* p : matches) names += (names.empty() ? "" : ",") + std::string(p->Name());
    return InvalidArgumentError("multiple volume plugins matched: " + names);
  }
  return matches.front();
}

VolumePlugin* PluginManager::FindByName(std::string_view name) const {
  for (const auto& p : plugins_) {
    if (p->Name() == name) return p.get();
  }
  return nullptr;
}

std::vector<std::string> PluginManager::Names() const {
  std::vector<std::string> out;
  for (const auto& p : plugins_) out.emplace_back(p->Name());
  return out;
}

}  // namespace kvol::volume
