// The container's root: the plan of its mounts, making them, and pivot_root into it.
#include "node/runtime/rootfs.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "node/runtime/init_error.h"

namespace kvol::node::runtime {
namespace fs = std::filesystem;

namespace {

bool Mount(const std::string& source, const std::string& target, const char* type,
           unsigned long flags, const char* data) {
  return mount(source.empty() ? nullptr : source.c_str(), target.c_str(), type, flags, data) == 0;
}

// `target` and every mount below it read-only. MS_REMOUNT ignores MS_REC, so a volume with
// mounts of its own (or /sys with its cgroup and other file systems) needs mount_setattr.
bool MakeReadOnly(const std::string& target) {
  struct mount_attr attr {};
  attr.attr_set = MOUNT_ATTR_RDONLY;
  if (syscall(SYS_mount_setattr, AT_FDCWD, target.c_str(), AT_RECURSIVE, &attr, sizeof attr) == 0) {
    return true;
  }
  // Kernels before 5.12: the top mount at least.
  return Mount("", target, nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr);
}

// /dev with the usual character devices bound from the node's, /dev/shm, and a devpts of the
// container's own (/dev/pts, /dev/ptmx), where `kubectl exec -t` gets its terminal.
int MinimalDev(const std::string& dev) {
  fs::create_directories(dev);
  if (!Mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755")) {
    return InitFailure("mount /dev");
  }
  for (const char* name : {"null", "zero", "full", "random", "urandom", "tty"}) {
    const std::string target = dev + "/" + name;
    int fd = open(target.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
    if (fd >= 0) close(fd);
    if (!Mount(std::string("/dev/") + name, target, nullptr, MS_BIND, nullptr)) {
      return InitFailure(std::string("bind /dev/") + name);
    }
  }
  fs::create_directories(dev + "/shm");
  if (!Mount("shm", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")) {
    return InitFailure("mount /dev/shm");
  }
  fs::create_directories(dev + "/pts");
  if (!Mount("devpts", dev + "/pts", "devpts", MS_NOSUID | MS_NOEXEC,
             "newinstance,ptmxmode=0666,mode=0620")) {
    return InitFailure("mount /dev/pts");
  }
  std::error_code ec;
  fs::create_symlink("pts/ptmx", dev + "/ptmx", ec);
  fs::create_symlink("/proc/self/fd", dev + "/fd", ec);
  fs::create_symlink("/proc/self/fd/0", dev + "/stdin", ec);
  fs::create_symlink("/proc/self/fd/1", dev + "/stdout", ec);
  fs::create_symlink("/proc/self/fd/2", dev + "/stderr", ec);
  return 0;
}

// Covers `path`: an empty read-only tmpfs on a directory, /dev/null on anything else. A path
// that is not there, or is a symbolic link (its target is covered in its own right), is left.
int Cover(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) return 0;
  if (S_ISDIR(st.st_mode)) {
    if (!Mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755")) {
      return InitFailure("cover " + path);
    }
    return 0;
  }
  if (!Mount("/dev/null", path, nullptr, MS_BIND, nullptr) ||
      !Mount("", path, nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr)) {
    return InitFailure("cover " + path);
  }
  return 0;
}

// `path` (absolute, below `base`) opened O_PATH from `base` one component at a time, refusing
// any symlink; -1 (errno set) when a component is missing, a symlink, or outside `base`.
int OpenWithin(const std::string& base, const std::string& path) {
  if (path.compare(0, base.size(), base) != 0 ||
      (path.size() > base.size() && path[base.size()] != '/')) {
    errno = EXDEV;
    return -1;
  }
  int fd = open(base.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  const std::string rest = path.substr(base.size());
  for (size_t start = 0; start < rest.size();) {
    size_t end = rest.find('/', start);
    if (end == std::string::npos) end = rest.size();
    const std::string part = rest.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      close(fd);
      errno = EXDEV;
      return -1;
    }
    int next = openat(fd, part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    close(fd);
    if (next < 0) return -1;
    struct stat st;
    if (fstat(next, &st) != 0 || S_ISLNK(st.st_mode)) {
      close(next);
      errno = ELOOP;
      return -1;
    }
    fd = next;
  }
  return fd;
}

// `path` (absolute, inside the container) resolved in `root` as if `root` were "/": symlinks in
// the node's root below it (such as /var/run -> /run) and ".." stay inside (openat2's
// RESOLVE_IN_ROOT). Missing components are made, the last as a directory or an empty file.
// An O_PATH descriptor of it, or -1 with errno set.
int OpenInRoot(int root, const std::string& path, bool directory) {
  auto open_in_root = [root](const std::string& p) {
    struct open_how how {};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    return static_cast<int>(syscall(SYS_openat2, root, p.c_str(), &how, sizeof how));
  };
  std::vector<std::string> parts;
  for (size_t start = 0; start < path.size();) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  std::string prefix = "/";
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string next = prefix + (prefix == "/" ? "" : "/") + parts[i];
    int fd = open_in_root(next);
    if (fd < 0 && errno == ENOENT) {
      // A directory made or an empty file created by name in the resolved parent (an O_PATH
      // descriptor serves as the *at calls' directory), which is inside the root.
      const int dirfd = open_in_root(prefix);
      if (dirfd < 0) return -1;
      const bool last = i + 1 == parts.size();
      if (!last || directory) {
        mkdirat(dirfd, parts[i].c_str(), 0755);
      } else {
        int f = openat(dirfd, parts[i].c_str(), O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (f >= 0) close(f);
      }
      close(dirfd);
      fd = open_in_root(next);
    }
    if (fd < 0) return -1;
    if (i + 1 == parts.size()) return fd;
    close(fd);
    prefix = next;
  }
  return open_in_root("/");
}

int BindVolume(const std::string& root, const MountStep& m) {
  std::string source = m.source;
  int held = -1;  // the subPath opened safely; bound through /proc/self/fd
  if (!m.within.empty()) {
    held = OpenWithin(m.within, m.source);
    if (held < 0) return InitFailure("open subPath " + m.source + " inside " + m.within);
    source = "/proc/self/fd/" + std::to_string(held);
  }
  std::error_code ec;
  const int root_fd = open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  const int at = root_fd < 0 ? -1 : OpenInRoot(root_fd, m.target, fs::is_directory(source, ec));
  if (root_fd >= 0) close(root_fd);
  if (at < 0) {
    if (held >= 0) close(held);
    return InitFailure("make " + m.target + " in the container's root");
  }
  const std::string target = "/proc/self/fd/" + std::to_string(at);
  const bool bound = Mount(source, target, nullptr, MS_BIND | MS_REC, nullptr);
  close(at);
  if (held >= 0) close(held);
  if (!bound) return InitFailure("bind " + m.source + " at " + m.target);
  if (m.read_only) {
    // The mount just made, found again by its path in the root (resolved as above).
    const int again = open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    const int fd = again < 0 ? -1 : OpenInRoot(again, m.target, true);
    if (again >= 0) close(again);
    const bool done = fd >= 0 && MakeReadOnly("/proc/self/fd/" + std::to_string(fd));
    if (fd >= 0) close(fd);
    if (!done) return InitFailure("make " + m.target + " read-only");
  }
  return 0;
}

int MakeStep(const std::string& root, const MountStep& m) {
  const std::string target = root + (m.target == "/" ? "" : m.target);
  switch (m.kind) {
    case MountStep::Kind::kRoot: {
      const std::string opts =
          "lowerdir=/,upperdir=" + m.source + "/upper,workdir=" + m.source + "/work";
      if (!Mount("overlay", root, "overlay", 0, opts.c_str())) {
        return InitFailure("mount the root overlay");
      }
      return 0;
    }
    case MountStep::Kind::kMask:
      return Cover(target);
    case MountStep::Kind::kProc:
      fs::create_directories(target);
      if (!Mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr)) {
        return InitFailure("mount /proc");
      }
      return 0;
    case MountStep::Kind::kDev:
      if (m.source.empty()) return MinimalDev(target);
      fs::create_directories(target);
      if (!Mount(m.source, target, nullptr, MS_BIND | MS_REC, nullptr)) {
        return InitFailure("bind /dev");
      }
      return 0;
    case MountStep::Kind::kTmp:
      fs::create_directories(target);
      if (!Mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | (m.read_only ? MS_RDONLY : 0),
                 "mode=1777")) {
        return InitFailure("mount /tmp");
      }
      return 0;
    case MountStep::Kind::kSys:
      fs::create_directories(target);
      // sysfs alone, not the file systems mounted below it on the node (cgroup, debugfs,
      // tracefs, securityfs, bpf, ...).
      if (!Mount("/sys", target, nullptr, MS_BIND, nullptr)) return InitFailure("bind /sys");
      if (m.read_only && !MakeReadOnly(target)) return InitFailure("make /sys read-only");
      return 0;
    case MountStep::Kind::kReadOnlyPath: {
      struct stat st;
      if (lstat(target.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) return 0;
      if (!Mount(target, target, nullptr, MS_BIND | MS_REC, nullptr) || !MakeReadOnly(target)) {
        return InitFailure("make " + m.target + " read-only");
      }
      return 0;
    }
    case MountStep::Kind::kBind:
      return BindVolume(root, m);
    case MountStep::Kind::kReadOnlyRoot:
      if (!Mount("", root, nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr)) {
        return InitFailure("make the root read-only");
      }
      return 0;
  }
  return 0;
}

}  // namespace

std::vector<std::string> NodeSecretPaths() {
  std::vector<std::string> out = {"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
                                  "/root"};
  std::error_code ec;
  std::vector<std::string> keys;
  for (fs::directory_iterator d("/etc/ssh", ec), end; !ec && d != end; d.increment(ec)) {
    const std::string name = d->path().filename().string();
    // ssh_host_ed25519_key and the others; their .pub halves are public.
    if (name.rfind("ssh_host_", 0) == 0 && name.size() > 4 &&
        name.compare(name.size() - 4, 4, "_key") == 0) {
      keys.push_back(d->path().string());
    }
  }
  std::sort(keys.begin(), keys.end());
  out.insert(out.end(), keys.begin(), keys.end());
  return out;
}

std::vector<MountStep> PlanMounts(const ContainerSpec& spec) {
  using Kind = MountStep::Kind;
  const SecurityPlan& sec = spec.security;
  std::vector<MountStep> steps;
  steps.push_back({.kind = Kind::kRoot, .target = "/", .source = spec.bundle_dir});
  for (const auto& p : spec.hidden_paths) {
    if (p.empty() || p == "/") continue;  // a data directory at / cannot be covered
    steps.push_back({.kind = Kind::kMask, .target = p});
  }
  steps.push_back({.kind = Kind::kProc, .target = "/proc"});
  steps.push_back({.kind = Kind::kDev, .target = "/dev", .source = sec.privileged ? "/dev" : ""});
  // With a read-only root, /tmp stays an empty read-only directory, as an image's would be.
  steps.push_back({.kind = Kind::kTmp, .target = "/tmp", .read_only = sec.read_only_root});
  steps.push_back({.kind = Kind::kSys, .target = "/sys", .read_only = !sec.privileged});
  for (const auto& p : sec.masked_paths) steps.push_back({.kind = Kind::kMask, .target = p});
  for (const auto& p : sec.read_only_paths) {
    steps.push_back({.kind = Kind::kReadOnlyPath, .target = p});
  }
  for (const auto& m : spec.mounts) {
    steps.push_back({.kind = Kind::kBind,
                     .target = m.target,
                     .source = m.source,
                     .read_only = m.read_only,
                     .within = m.within});
  }
  if (sec.read_only_root) steps.push_back({.kind = Kind::kReadOnlyRoot, .target = "/"});
  return steps;
}

int MakeRoot(const ContainerSpec& spec, const std::vector<MountStep>& steps) {
  const std::string root = spec.bundle_dir + "/rootfs";
  for (const auto& step : steps) {
    if (int rc = MakeStep(root, step); rc != 0) return rc;
  }
  return 0;
}

int EnterRoot(const std::string& root) {
  // pivot_root(".", "."): the old root ends up stacked on the new one, and unmounting "."
  // detaches it (pivot_root(2)).
  if (chdir(root.c_str()) != 0) return InitFailure("chdir " + root);
  if (syscall(SYS_pivot_root, ".", ".") != 0) return InitFailure("pivot_root");
  if (umount2(".", MNT_DETACH) != 0) return InitFailure("detach the node's root");
  if (chdir("/") != 0) return InitFailure("chdir /");
  return 0;
}

}  // namespace kvol::node::runtime
