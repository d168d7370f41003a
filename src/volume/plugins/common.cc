// Shared plugin pieces.
#include "volume/plugins/common.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "volume/util/cleanup.h"

namespace kvol::volume::plugins {
namespace fs = std::filesystem;

Status CleanupUnmounter::TearDown() {
  return util::CleanupDir(host_.mounter(), path(), remove_contents_);
}

Status MakeDir(const std::string& dir, int mode) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return InternalError("mkdir " + dir + ": " + ec.message());
  if (chmod(dir.c_str(), static_cast<mode_t>(mode)) != 0) {
    return InternalError("chmod " + dir + ": " + strerror(errno));
  }
  return OkStatus();
}

Status EnsureTmpfs(Host& host, const std::string& dir, int64_t size_bytes) {
  KVOL_RETURN_IF_ERROR(MakeDir(dir, 0750));
  KVOL_ASSIGN_OR_RETURN(bool mounted, host.mounter().IsMountPoint(dir));
  if (!mounted) {
    std::vector<std::string> options;
    if (size_bytes > 0) options.push_back("size=" + std::to_string(size_bytes));
    KVOL_RETURN_IF_ERROR(host.mounter().Mount("tmpfs", dir, "tmpfs", options));
  }
  if (chmod(dir.c_str(), 0777) != 0) return InternalError("chmod " + dir + ": " + strerror(errno));
  return OkStatus();
}

}  // namespace kvol::volume::plugins
