// storage_operation_duration_seconds{volume_plugin,operation_name,status,migrated}: how long each
// of the node's volume operations took and whether it succeeded, as kubelet's
// OperationCompleteHook records it. The operations are kubelet's: volume_attach,
// verify_controller_attached_volume, volume_detach, mount_device (kvol stages a device apart
// from the pod's mount), unmount_device, volume_mount, volume_unmount and volume_fs_resize;
// status is "success" or "fail-unknown"; migrated is "false" (kvol migrates no in-tree
// plugin to CSI).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace kvol::node::volumemanager {

// `op`, timed and recorded under `plugin` and `operation` each time it runs.
std::function<Status()> Timed(std::string plugin, std::string_view operation,
                              std::function<Status()> op);

}  // namespace kvol::node::volumemanager
