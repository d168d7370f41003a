#include "node/runtime/cri/subpath_bind.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "os/files.h"
#include "os/mounter.h"

namespace kvol::node::cri {

namespace fs = std::filesystem;

namespace {

// A descriptor closed when it goes out of scope.
struct Fd {
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int fd;
};

Status PermissionDenied(std::string message) {
  return Status(StatusCode::kPermissionDenied, std::move(message));
}

Status Errno(int err, const std::string& what) {
  const std::string message = what + ": " + std::strerror(err);
  if (err == ENOENT) return NotFoundError(message);
  if (err == EACCES || err == EPERM) return PermissionDenied(message);
  return InternalError(message);
}

}  // namespace

Status BindSubPath(const std::string& within, const std::string& source,
                   const std::string& target) {
  const std::string prefix = within.ends_with('/') ? within : within + "/";
  if (source != within && source.rfind(prefix, 0) != 0) {
    return InvalidArgumentError("subpath \"" + source + "\" not within volume path \"" + within +
                                "\"");
  }
  Fd current(open(within.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (current.fd < 0) return Errno(errno, "opening volume path " + within);
  const std::string rest = source == within ? "" : source.substr(prefix.size());
  std::string walked = within;
  for (const auto& part : fs::path(rest)) {
    const std::string name = part.string();
    if (name.empty() || name == ".") continue;
    if (name == "..") return InvalidArgumentError("subpath \"" + source + "\" has \"..\"");
    walked += "/" + name;
    const int next = openat(current.fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) return Errno(errno, "opening subpath component " + walked);
    Fd opened(next);
    struct stat st {};
    if (fstat(opened.fd, &st) != 0) return Errno(errno, "stat " + walked);
    if (S_ISLNK(st.st_mode)) {
      return PermissionDenied("subpath component " + walked +
                                   " is a symbolic link: refused, as it may lead out of the "
                                   "volume");
    }
    std::swap(current.fd, opened.fd);
  }
  struct stat st {};
  if (fstat(current.fd, &st) != 0) return Errno(errno, "stat " + source);
  std::error_code ec;
  fs::create_directories(fs::path(target).parent_path(), ec);
  if (ec) return InternalError("creating " + target + ": " + ec.message());
  if (S_ISDIR(st.st_mode)) {
    if (mkdir(target.c_str(), 0750) != 0 && errno != EEXIST) {
      return Errno(errno, "creating " + target);
    }
  } else {
    const int f = open(target.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0640);
    if (f < 0) return Errno(errno, "creating " + target);
    close(f);
  }
  const std::string via = "/proc/self/fd/" + std::to_string(current.fd);
  if (mount(via.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return Errno(errno, "bind-mounting subpath " + source + " on " + target);
  }
  return OkStatus();
}

Status UnbindSubPaths(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return OkStatus();
  std::string table;
  KVOL_RETURN_IF_ERROR(os::ReadFile("/proc/self/mountinfo", &table));
  Status result = OkStatus();
  for (const auto& p : os::MountPointsBelow(os::ParseMountInfo(table), dir)) {
    if (umount2(p.c_str(), UMOUNT_NOFOLLOW) != 0 && errno != EINVAL && errno != ENOENT) {
      result = Errno(errno, "unmounting subpath bind " + p);
    }
  }
  if (!result.ok()) return result;
  // Nothing is mounted below any more: what is left is kvol's own targets, removed one by one
  // (never recursively, so nothing of a volume could go with them).
  for (fs::directory_iterator d(dir, ec), end; !ec && d != end; d.increment(ec)) {
    std::error_code rm;
    fs::remove(d->path(), rm);
    if (rm) result = InternalError("removing " + d->path().string() + ": " + rm.message());
  }
  if (result.ok()) {
    std::error_code rm;
    fs::remove(dir, rm);
  }
  return result;
}

}  // namespace kvol::node::cri
