#include "controller/attachdetach/plugin_attacher.h"

#include "controller/attachdetach/csi_attacher.h"

namespace kvol::controller::attachdetach {

bool PluginAttacher::NeedsAttach(const volume::Spec& spec) {
  auto* at = plugin_.AsAttachable();
  return at && at->NeedsAttach(spec);
}

StatusOr<std::string> PluginAttacher::Attach(const volume::Spec& spec, const std::string& node) {
  auto* at = plugin_.AsAttachable();
  if (!at)
    return FailedPreconditionError("volume plugin " + std::string(plugin_.Name()) +
                                   " does not attach volumes");
  return at->Attach(spec, node);
}

Status PluginAttacher::Detach(const std::string& volume_name, const std::string& node) {
  auto* at = plugin_.AsAttachable();
  if (!at) return OkStatus();  // nothing it attached
  return at->Detach(volume_name, node);
}

Attacher* PluginAttachers::Of(volume::VolumePlugin* plugin) {
  if (!plugin || !plugin->AsAttachable() || plugin->Name() == kCsiPluginName) return nullptr;
  std::lock_guard lock(mu_);
  auto& slot = attachers_[plugin];
  if (!slot) slot = std::make_unique<PluginAttacher>(*plugin);
  return slot.get();
}

Attacher* PluginAttachers::For(const volume::Spec& spec) {
  auto plugin = plugins_.FindBySpec(spec);
  if (!plugin.ok()) return nullptr;
  Attacher* a = Of(*plugin);
  return a && a->NeedsAttach(spec) ? a : nullptr;
}

Attacher* PluginAttachers::Named(std::string_view plugin) {
  return Of(plugins_.FindByName(plugin));
}

}  // namespace kvol::controller::attachdetach
