// The attach/detach controller's attacher for in-tree and FlexVolume plugins that attach
// (volume::AttachableVolumePlugin): the plugin's own Attach and Detach, run by the controller
// for the nodes it manages, as kube-controller-manager runs FlexVolume drivers' attach and
// detach. The CSI plugin is not one of them: CSI volumes are attached through
// VolumeAttachments (csi_attacher.h).
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "controller/attachdetach/attacher.h"
#include "volume/plugin.h"

namespace kvol::controller::attachdetach {

class PluginAttacher final : public Attacher {
 public:
  explicit PluginAttacher(volume::VolumePlugin& plugin) : plugin_(plugin) {}
  std::string_view PluginName() const override { return plugin_.Name(); }
  bool NeedsAttach(const volume::Spec& spec) override;
  StatusOr<std::string> Attach(const volume::Spec& spec, const std::string& node) override;
  Status Detach(const std::string& volume_name, const std::string& node) override;

 private:
  volume::VolumePlugin& plugin_;
};

// The PluginAttachers of a plugin manager's attachable plugins, made as plugins are found
// (FlexVolume drivers installed while the process runs). Thread-safe.
class PluginAttachers {
 public:
  explicit PluginAttachers(volume::PluginManager& plugins) : plugins_(plugins) {}
  // The attacher for `spec` when its plugin attaches it; nullptr otherwise.
  Attacher* For(const volume::Spec& spec);
  // The attacher of the plugin of that name; nullptr when there is none.
  Attacher* Named(std::string_view plugin);

 private:
  Attacher* Of(volume::VolumePlugin* plugin);

  volume::PluginManager& plugins_;
  std::mutex mu_;
  std::map<volume::VolumePlugin*, std::unique_ptr<PluginAttacher>> attachers_;  // guarded by mu_
};

}  // namespace kvol::controller::attachdetach
