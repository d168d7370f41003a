// The usage of a pod's volume that its plugin does not report (all but CSI's), measured as
// kubelet measures it: a volume that is a filesystem of its own (a device, an NFS export, a
// memory-backed emptyDir: mounted from its filesystem's root) by statfs, as MetricsStatFS; a
// directory (an emptyDir on the node's disk, a local or hostPath directory, a local-path
// claim) by walking it, as MetricsDu: used bytes and inodes from the walk, capacity, free space
// and inodes from the filesystem it is on.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "os/mounter.h"
#include "volume/plugin.h"

namespace kvol::node {

// `mounts`: the mount table, to tell whether `path` is a filesystem of its own.
StatusOr<volume::VolumeStats> PathUsage(const std::string& path,
                                        const std::vector<os::MountPoint>& mounts);

}  // namespace kvol::node
