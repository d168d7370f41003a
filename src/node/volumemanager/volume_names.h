// How the volume manager names a volume: per pod (the key of its operations and of the actual
// state's pod volumes) and per node (the same volume in every pod).
#pragma once

#include <string>
#include <string_view>

#include "volume/plugin.h"

namespace kvol::node::volumemanager {

// "<pod uid>/<plugin name>/<volume dir name>": one volume of one pod, as both states name it.
std::string VolumeKey(std::string_view pod_uid, std::string_view plugin, std::string_view dir_name);
// "<plugin name>/<volume dir name>": the same volume in every pod (a device's name, and what
// the node reports in volumesInUse).
using volume::UniqueVolumeName;

}  // namespace kvol::node::volumemanager

namespace kvol::node::volumemanager {

// The operation executor's keys, one operation in flight per key: a pod volume's is its
// VolumeKey; these are the node-wide ones.
std::string AttachOperationKey(std::string_view unique_name);  // attach and detach
std::string DeviceOperationKey(std::string_view unique_name);  // mount and unmount device
std::string ResizeOperationKey(std::string_view unique_name);  // node expansion

}  // namespace kvol::node::volumemanager
