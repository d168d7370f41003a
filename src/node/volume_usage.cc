// A volume's usage by statfs or by walking it.
#include "node/volume_usage.h"

#include "os/machine.h"

namespace kvol::node {

StatusOr<volume::VolumeStats> PathUsage(const std::string& path,
                                        const std::vector<os::MountPoint>& mounts) {
  KVOL_ASSIGN_OR_RETURN(os::FilesystemStats fs, os::StatFilesystem(path));
  volume::VolumeStats st;
  st.capacity_bytes = fs.capacity_bytes;
  st.available_bytes = fs.available_bytes;
  st.inodes = fs.inodes;
  st.inodes_free = fs.inodes_free;
  // The topmost mount at `path` (the last in the table), if any.
  const os::MountPoint* own = nullptr;
  for (const auto& m : mounts) {
    if (m.path == path) own = &m;
  }
  if (own && own->root == "/") {  // the whole of a filesystem: statfs tells its use
    st.used_bytes = fs.capacity_bytes - fs.free_bytes;
    st.inodes_used = fs.inodes - fs.inodes_free;
    return st;
  }
  KVOL_ASSIGN_OR_RETURN(os::DirectoryUsage du, os::MeasureDirectory(path));
  st.used_bytes = du.bytes;
  st.inodes_used = du.inodes;
  return st;
}

}  // namespace kvol::node
