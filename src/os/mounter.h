// Mounting and unmounting, behind an interface so unit tests see what would be mounted without
// mounting it. The real one runs mount(8) (so filesystem helpers such as mount.nfs work and
// errors read as users know them) and unmounts with umount2(2); the mount table is
// /proc/self/mountinfo.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "os/exec.h"

namespace kvol::os {

// One line of /proc/self/mountinfo.
struct MountPoint {
  int id = 0;
  int parent_id = 0;
  std::string root;                  // the path inside the source filesystem that is mounted here
  std::string path;                  // the mount point
  std::vector<std::string> options;  // per-mount options (rw/ro, nosuid, ...)
  std::string type;                  // filesystem type
  std::string source;                // device or server:path
  std::vector<std::string> super_options;  // per-filesystem options (size=..., ...)
};

// Parses mountinfo text; lines that do not parse are skipped. Octal escapes (\040) in paths
// are decoded.
std::vector<MountPoint> ParseMountInfo(std::string_view text);

// The mount points of `table` strictly below directory `dir`, deepest first (the order to
// unmount them in).
std::vector<std::string> MountPointsBelow(const std::vector<MountPoint>& table,
                                          const std::string& dir);

class Mounter {
 public:
  virtual ~Mounter() = default;
  // Mounts `source` at `target` (which must exist) with filesystem `type` ("" for a bind) and
  // `options` ("bind", "ro", "size=64Mi", ...). Options listed in `sensitive_options` are
  // passed to mount but never appear in errors or logs. A bind with "ro" ends read-only.
  // Errors carry mount's own output; DeadlineExceeded when mount did not finish in time.
  virtual Status Mount(const std::string& source, const std::string& target,
                       const std::string& type, const std::vector<std::string>& options,
                       const std::vector<std::string>& sensitive_options = {}) = 0;
  // Unmounts the topmost mount at `target`. NotFound when nothing is mounted there.
  virtual Status Unmount(const std::string& target) = 0;
  // The mount table of this process's mount namespace.
  virtual StatusOr<std::vector<MountPoint>> List() = 0;
  // Whether `path` is a mount point (of any filesystem, bind mounts included). NotFound when
  // the path does not exist.
  virtual StatusOr<bool> IsMountPoint(const std::string& path) = 0;
};

// The real one, running mount(8) through `exec` with `timeout`. Thread-safe.
std::unique_ptr<Mounter> NewRealMounter(
    Exec& exec = RealExec(), std::chrono::milliseconds timeout = std::chrono::minutes(2));

// The command line mount(8) gets, as Kubernetes reports it in errors ("Mounting arguments:
// -t nfs -o ro server:/path /target"); sensitive options appear as "<masked>".
std::string MountArguments(const std::string& source, const std::string& target,
                           const std::string& type, const std::vector<std::string>& options,
                           const std::vector<std::string>& sensitive_options);

}  // namespace kvol::os
