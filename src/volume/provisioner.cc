#include "volume/provisioner.h"

#include <chrono>
#include <filesystem>

namespace kvol::volume {

api::PersistentVolumeSpec FilesystemSpecFor(const api::PersistentVolumeClaim& claim) {
  api::PersistentVolumeSpec spec;
  auto storage = claim.spec.resources.requests.find("storage");
  if (storage != claim.spec.resources.requests.end()) spec.capacity["storage"] = storage->second;
  spec.access_modes = claim.spec.access_modes;
  spec.volume_mode = "Filesystem";
  return spec;
}

Status ScrubDirectory(const std::string& dir, std::chrono::milliseconds timeout) {
  namespace fs = std::filesystem;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) {
    return NotFoundError(dir + " is not a directory");
  }
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (std::chrono::steady_clock::now() > deadline) {
      return DeadlineExceededError("scrubbing " + dir + " took longer than " +
                                   std::to_string(timeout.count()) + "ms");
    }
    std::error_code rm;
    fs::remove_all(it->path(), rm);  // symlinks are removed, never followed
    if (rm) return InternalError("cannot remove " + it->path().string() + ": " + rm.message());
  }
  if (ec) return InternalError("cannot list " + dir + ": " + ec.message());
  return OkStatus();
}

}  // namespace kvol::volume
