// CleanupDir: unmount, check, remove.
#include "volume/util/cleanup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

namespace kvol::volume::util {
namespace fs = std::filesystem;

namespace {

Status RemoveBelow(const fs::path& path, dev_t dev) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return OkStatus();
    return InternalError("lstat " + path.string() + ": " + strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) {
    if (st.st_dev != dev) {
      return FailedPreconditionError(path.string() + " is on another filesystem; not removing it");
    }
    std::error_code ec;
    std::vector<fs::path> children;
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      children.push_back(it->path());
    }
    if (ec) return InternalError("read " + path.string() + ": " + ec.message());
    for (const auto& c : children) KVOL_RETURN_IF_ERROR(RemoveBelow(c, dev));
    if (rmdir(path.c_str()) != 0 && errno != ENOENT) {
      return InternalError("rmdir " + path.string() + ": " + strerror(errno));
    }
    return OkStatus();
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return InternalError("unlink " + path.string() + ": " + strerror(errno));
  }
  return OkStatus();
}

}  // namespace

Status RemoveAllOnOneDevice(const std::string& dir) {
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return OkStatus();
    return InternalError("lstat " + dir + ": " + strerror(errno));
  }
  return RemoveBelow(dir, st.st_dev);
}

StatusOr<bool> HasMountsBelow(os::Mounter& mounter, const std::string& dir) {
  KVOL_ASSIGN_OR_RETURN(auto mounts, mounter.List());
  const std::string prefix = dir + "/";
  for (const auto& m : mounts) {
    if (m.path == dir || m.path.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

Status CleanupDir(os::Mounter& mounter, const std::string& dir, bool remove_contents) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir, ec))) return OkStatus();
  // Stacked mounts (a mount retried after an uncertain timeout) come off one at a time.
  for (int i = 0; i < 16; ++i) {
    auto mounted = mounter.IsMountPoint(dir);
    if (!mounted.ok()) return mounted.status();
    if (!*mounted) break;
    if (Status s = mounter.Unmount(dir); !s.ok() && s.code() != StatusCode::kNotFound) return s;
  }
  KVOL_ASSIGN_OR_RETURN(bool busy, HasMountsBelow(mounter, dir));
  if (busy) return FailedPreconditionError(dir + " is still mounted; not removing it");
  if (remove_contents) return RemoveAllOnOneDevice(dir);
  fs::remove(dir, ec);
  if (ec) return InternalError("remove " + dir + ": " + ec.message());
  return OkStatus();
}

}  // namespace kvol::volume::util
