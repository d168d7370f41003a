// Formatting a device before its first mount, as kubelet's SafeFormatAndMount does: a device
// with no filesystem is formatted; one with a filesystem or a partition table never is.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "os/exec.h"
#include "os/mounter.h"

namespace kvol::os {

// The filesystem type on `device` ("ext4", ...), "" when it carries none. FailedPrecondition
// when it holds a partition table (a whole disk that must not be formatted).
StatusOr<std::string> DetectFilesystem(Exec& exec, const std::string& device);

// Mounts `device` at `target` with filesystem `fs_type`, formatting it first when it is blank
// (as ext4 when `fs_type` is empty). A device with a filesystem is never formatted: it is
// mounted as what it contains when `fs_type` is empty, and refused, saying what it contains,
// when that differs from `fs_type`.
Status FormatAndMount(Exec& exec, Mounter& mounter, const std::string& device,
                      const std::string& target, std::string fs_type,
                      const std::vector<std::string>& options);

// Grows the filesystem on `device`, mounted at `mount_path`, to fill the device, as kubelet's
// resize does: resize2fs for ext2/3/4, xfs_growfs for xfs. InvalidArgument for a filesystem
// that cannot be grown online, and for a device with none.
Status ResizeFilesystem(Exec& exec, const std::string& device, const std::string& mount_path);

}  // namespace kvol::os
