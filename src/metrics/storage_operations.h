// Volume operations' metrics, with Kubernetes' names, as its OperationCompleteHook records them
// in kubelet and kube-controller-manager:
//   storage_operation_duration_seconds{volume_plugin,operation_name,status,migrated}  histogram
//   volume_operation_total_errors{plugin_name,operation_name}                          counter
// status is "success" or "fail-unknown"; migrated is "false" (kvol migrates no in-tree plugin
// to CSI). The operations are Kubernetes': volume_provision, volume_delete, volume_attach,
// volume_detach and expand_volume in the controllers; verify_controller_attached_volume,
// mount_device, unmount_device, volume_mount, volume_unmount and volume_fs_resize on the node.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace kvol::metrics {

// How Kubernetes names a CSI volume's plugin in these metrics: "kubernetes.io/csi:<driver>".
std::string CsiPluginName(std::string_view driver);

void RecordStorageOperation(std::string_view plugin, std::string_view operation, bool ok,
                            std::chrono::duration<double> took);

// Times one operation from its construction to Done.
//
//   metrics::OperationTimer timer(CsiPluginName(driver), "volume_provision");
//   Status s = Provision(...);
//   timer.Done(s.ok());
class OperationTimer {
 public:
  OperationTimer(std::string plugin, std::string_view operation)
      : plugin_(std::move(plugin)),
        operation_(operation),
        start_(std::chrono::steady_clock::now()) {}
  void Done(bool ok) const {
    RecordStorageOperation(plugin_, operation_, ok, std::chrono::steady_clock::now() - start_);
  }

 private:
  std::string plugin_;
  std::string operation_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kvol::metrics
