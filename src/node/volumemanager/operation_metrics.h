// The node's volume operations, timed as kubelet's OperationCompleteHook times them
// (metrics/storage_operations.h): volume_attach, verify_controller_attached_volume,
// volume_detach, mount_device (kvol stages a device apart from the pod's mount),
// unmount_device, volume_mount, volume_unmount and volume_fs_resize.
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
