#include "volume/util/ownership.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kvol::volume::util {
namespace {

// nftw's callback has no room for state: the walk's parameters, one walk at a time per thread.
thread_local gid_t walk_group;
thread_local bool walk_read_only;
thread_local std::string walk_error;

int ChangeOne(const char* path, const struct stat* st, int type, struct FTW*) {
  if (type == FTW_NS || type == FTW_DNR) {
    walk_error = std::string(path) + ": cannot be read";
    return 1;
  }
  if (lchown(path, static_cast<uid_t>(-1), walk_group) != 0) {
    walk_error = "lchown " + std::string(path) + ": " + std::strerror(errno);
    return 1;
  }
  if (type == FTW_SL) return 0;  // a link's mode means nothing
  mode_t mask = walk_read_only ? 0440 : 0660;
  if (S_ISDIR(st->st_mode)) mask |= S_ISGID | 0110;
  const mode_t mode = (st->st_mode & 07777) | mask;
  if (mode != (st->st_mode & 07777) && chmod(path, mode) != 0) {
    walk_error = "chmod " + std::string(path) + ": " + std::strerror(errno);
    return 1;
  }
  return 0;
}

}  // namespace

Status SetVolumeOwnership(const std::string& path, int64_t fs_group, bool read_only) {
  if (fs_group < 0) return InvalidArgumentError("fsGroup " + std::to_string(fs_group) + " < 0");
  walk_group = static_cast<gid_t>(fs_group);
  walk_read_only = read_only;
  walk_error.clear();
  // FTW_PHYS: links are not followed; FTW_MOUNT: the walk stays on the volume's filesystem.
  if (nftw(path.c_str(), ChangeOne, 16, FTW_PHYS | FTW_MOUNT) != 0) {
    if (walk_error.empty()) walk_error = path + ": " + std::strerror(errno);
    return InternalError("applying fsGroup " + std::to_string(fs_group) + ": " + walk_error);
  }
  return OkStatus();
}

}  // namespace kvol::volume::util
