// ControllerHost: the Host of volume plugins that controllers run away from any node, as
// kube-controller-manager's volume host is: FlexVolume drivers' attach, detach and expandvolume
// called by the attach/detach and expand controllers. Pods' volumes are never set up here; the
// plugins' directories are under a root of the controller's own. ConfigMaps and Secrets (a
// FlexVolume's secretRef) are read from the API server.
#pragma once

#include <string>

#include "client/client.h"
#include "os/clock.h"
#include "os/exec.h"
#include "os/mounter.h"
#include "volume/plugin.h"

namespace kvol::controller {

class ControllerHost final : public volume::Host {
 public:
  ControllerHost(client::Client& client, std::string root_dir, os::Mounter& mounter,
                 os::Exec& exec = os::RealExec(), const os::Clock& clock = os::RealClock())
      : client_(client), root_(std::move(root_dir)), mounter_(mounter), exec_(exec), clock_(clock) {}

  std::string PodVolumeDir(std::string_view pod_uid, std::string_view plugin,
                           std::string_view volume) const override;
  std::string PodDeviceDir(std::string_view pod_uid, std::string_view plugin,
                           std::string_view volume) const override;
  std::string PluginDir(std::string_view plugin) const override;
  os::Mounter& mounter() override { return mounter_; }
  os::Exec& exec() override { return exec_; }
  const os::Clock& clock() const override { return clock_; }
  // No node: the controller serves them all.
  std::string NodeName() const override { return ""; }
  api::ResourceList NodeAllocatable() const override { return {}; }
  StatusOr<api::ConfigMap> GetConfigMap(std::string_view ns, std::string_view name) override;
  StatusOr<api::Secret> GetSecret(std::string_view ns, std::string_view name) override;

 private:
  client::Client& client_;
  const std::string root_;
  os::Mounter& mounter_;
  os::Exec& exec_;
  const os::Clock& clock_;
};

}  // namespace kvol::controller
