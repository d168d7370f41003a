// A pod's fsGroup applied to a volume, as kubelet's SetVolumeOwnership does: every file and
// directory below the volume's path gets the group, read and write for the group (read only for
// a read-only volume), and on directories execute for the group and setgid, so that new files
// inherit the group. Symlinks get the group but no mode. Nothing is taken away.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace kvol::volume::util {

Status SetVolumeOwnership(const std::string& path, int64_t fs_group, bool read_only);

}  // namespace kvol::volume::util
