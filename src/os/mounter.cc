// The real Mounter and the mountinfo parser.
#include "os/mounter.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

namespace kvol::os {
namespace {

// STATX_ATTR_MOUNT_ROOT, which glibc's headers may not name yet.
constexpr uint64_t kStatxAttrMountRoot = 0x00002000;

std::string Unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7' && s[i + 2] >= '0' &&
        s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(
          static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::vector<std::string> SplitOn(std::string_view s, char sep) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t start = 0;
  for (;;) {
    size_t at = s.find(sep, start);
    out.emplace_back(s.substr(start, at - start));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

// The flags mount(2) takes for these options of a tmpfs, which mount(8) would turn into them.
std::optional<unsigned long> TmpfsFlag(std::string_view option) {
  if (option == "ro") return MS_RDONLY;
  if (option == "rw") return 0;
  if (option == "nosuid") return MS_NOSUID;
  if (option == "nodev") return MS_NODEV;
  if (option == "noexec") return MS_NOEXEC;
  return std::nullopt;
}

// Options tmpfs itself reads (its mount data).
bool TmpfsData(std::string_view option) {
  for (std::string_view key : {"size=", "mode=", "uid=", "gid=", "nr_inodes="}) {
    if (option.starts_with(key)) return true;
  }
  return false;
}

class RealMounter final : public Mounter {
 public:
  RealMounter(Exec& exec, std::chrono::milliseconds timeout) : exec_(exec), timeout_(timeout) {}

  Status Mount(const std::string& source, const std::string& target, const std::string& type,
               const std::vector<std::string>& options,
               const std::vector<std::string>& sensitive_options) override {
    if (type == "tmpfs" && sensitive_options.empty()) {
      if (auto made = MountTmpfs(source, target, options)) return *std::move(made);
    }
    std::vector<std::string> argv = {"mount"};
    if (!type.empty()) {
      argv.push_back("-t");
      argv.push_back(type);
    }
    std::vector<std::string> all = options;
    all.insert(all.end(), sensitive_options.begin(), sensitive_options.end());
    if (!all.empty()) {
      argv.push_back("-o");
      argv.push_back(Join(all, ","));
    }
    argv.push_back(source);
    argv.push_back(target);
    auto ran = exec_.Run(argv, timeout_);
    const std::string args = MountArguments(source, target, type, options, sensitive_options);
    if (!ran.ok()) {
      return Status(ran.status().code(),
                    "mount failed: " + ran.status().message() +
                        "\nMounting command: mount\nMounting arguments: " + args);
    }
    if (ran->exit_code != 0) {
      std::string out = ran->output;
      while (!out.empty() && out.back() == '\n') out.pop_back();
      return InternalError("mount failed: " + DescribeExit(ran->exit_code) +
                           "\nMounting command: mount\nMounting arguments: " + args +
                           "\nOutput: " + out);
    }
    return OkStatus();
  }

  Status Unmount(const std::string& target) override {
    if (umount2(target.c_str(), UMOUNT_NOFOLLOW) == 0) return OkStatus();
    int err = errno;
    if (err == EINVAL || err == ENOENT) {
      return NotFoundError("unmount " + target + ": not mounted");
    }
    return InternalError("unmount " + target + ": " + strerror(err));
  }

  // A tmpfs needs no helper program: mount(2) makes it, sparing a fork, an exec and mount(8)'s
  // read of the whole mount table, which grows with every volume. Nothing when an option is
  // one mount(8) must interpret.
  std::optional<Status> MountTmpfs(const std::string& source, const std::string& target,
                                   const std::vector<std::string>& options) {
    unsigned long flags = 0;
    std::vector<std::string> data;
    for (const auto& o : options) {
      if (auto flag = TmpfsFlag(o)) {
        flags |= *flag;
      } else if (TmpfsData(o)) {
        data.push_back(o);
      } else {
        return std::nullopt;
      }
    }
    const std::string joined = Join(data, ",");
    if (mount(source.c_str(), target.c_str(), "tmpfs", flags,
              joined.empty() ? nullptr : joined.c_str()) == 0) {
      return OkStatus();
    }
    const int err = errno;
    return InternalError("mount failed: " + std::string(strerror(err)) +
                         "\nMounting command: mount\nMounting arguments: " +
                         MountArguments(source, target, "tmpfs", options, {}));
  }

  StatusOr<std::vector<MountPoint>> List() override {
    std::ifstream in("/proc/self/mountinfo");
    if (!in) return InternalError("cannot read /proc/self/mountinfo");
    std::stringstream ss;
    ss << in.rdbuf();
    return ParseMountInfo(ss.str());
  }

  StatusOr<bool> IsMountPoint(const std::string& path) override {
    struct statx stx {};
    if (statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE, &stx) !=
        0) {
      if (errno == ENOENT) return NotFoundError(path + ": no such file or directory");
      return InternalError("stat " + path + ": " + strerror(errno));
    }
    // The kernel says whether the path is the root of a mount (Linux 5.8 and later): no need to
    // read the mount table, which grows with every volume.
    if (stx.stx_attributes_mask & kStatxAttrMountRoot) {
      return (stx.stx_attributes & kStatxAttrMountRoot) != 0;
    }
    KVOL_ASSIGN_OR_RETURN(auto mounts, List());
    for (const auto& m : mounts) {
      if (m.path == path) return true;
    }
    return false;
  }

 private:
  Exec& exec_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace

std::vector<MountPoint> ParseMountInfo(std::string_view text) {
  std::vector<MountPoint> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    // id parent major:minor root mountpoint options [optional...] - type source superoptions
    std::vector<std::string> f = SplitOn(line, ' ');
    size_t dash = 0;
    for (size_t i = 6; i < f.size(); ++i) {
      if (f[i] == "-") {
        dash = i;
        break;
      }
    }
    if (dash == 0 || dash + 3 > f.size()) continue;
    MountPoint m;
    m.id = std::atoi(f[0].c_str());
    m.parent_id = std::atoi(f[1].c_str());
    m.root = Unescape(f[3]);
    m.path = Unescape(f[4]);
    m.options = SplitOn(f[5], ',');
    m.type = f[dash + 1];
    m.source = Unescape(f[dash + 2]);
    if (dash + 3 < f.size()) m.super_options = SplitOn(f[dash + 3], ',');
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<std::string> MountPointsBelow(const std::vector<MountPoint>& table,
                                          const std::string& dir) {
  const std::string prefix = dir.ends_with('/') ? dir : dir + "/";
  std::vector<std::string> out;
  for (const auto& m : table) {
    if (m.path.size() > prefix.size() && m.path.rfind(prefix, 0) == 0) out.push_back(m.path);
  }
  std::sort(out.rbegin(), out.rend());  // a path sorts after its parent: deepest first
  return out;
}

std::string MountArguments(const std::string& source, const std::string& target,
                           const std::string& type, const std::vector<std::string>& options,
                           const std::vector<std::string>& sensitive_options) {
  std::string args;
  if (!type.empty()) args += "-t " + type + " ";
  std::vector<std::string> shown = options;
  if (!sensitive_options.empty()) shown.push_back("<masked>");
  if (!shown.empty()) args += "-o " + Join(shown, ",") + " ";
  return args + source + " " + target;
}

std::unique_ptr<Mounter> NewRealMounter(Exec& exec, std::chrono::milliseconds timeout) {
  return std::make_unique<RealMounter>(exec, timeout);
}

}  // namespace kvol::os
