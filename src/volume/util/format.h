// Formatting a device before its first mount, as kubelet's SafeFormatAndMount does: a device
// with no filesystem is formatted; one with a filesystem or a partition table never is.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "os/exec.h"
#include "os/mounter.h"

namespace kvol::volume::util {

// The filesystem type on `device` ("ext4", ...), "" when it carries none. FailedPrecondition
// when it holds a partition table (a whole disk that must not be formatted).
StatusOr<std::string> DetectFilesystem(os::Exec& exec, const std::string& device);

// Mounts `device` at `target` with filesystem `fs_type`, formatting it first when it is blank
// (as ext4 when `fs_type` is empty). A device with a filesystem is never formatted: it is
// mounted as what it contains when `fs_type` is empty, and refused, saying what it contains,
// when that differs from `fs_type`.
Status FormatAndMount(os::Exec& exec, os::Mounter& mounter, const std::string& device,
                      const std::string& target, std::string fs_type,
                      const std::vector<std::string>& options);

}  // namespace kvol::volume::util
