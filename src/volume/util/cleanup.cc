// CleanupDir: unmount, check, remove.
#include "volume/util/cleanup.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace kvol::volume::util {
namespace fs = std::filesystem;

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
  if (remove_contents) {
    fs::remove_all(dir, ec);
  } else {
    fs::remove(dir, ec);
  }
  if (ec) return InternalError("remove " + dir + ": " + ec.message());
  return OkStatus();
}

}  // namespace kvol::volume::util
