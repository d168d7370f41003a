// A container's root filesystem: the plan of its mounts (pure, from the container's spec, so a
// table test covers it), making them in the container's own mount namespace, and entering the
// root with pivot_root.
//
// The root is an overlay of the node's root with a private writable layer under the bundle
// (read-only as a whole with readOnlyRootFilesystem). The node's root below it is never written.
// On it, in order:
//   - the node paths the container must not see, covered: kvol's own state (data directory,
//     the agent's root directory with every pod's volumes and containers) and the node's
//     secrets (/etc/shadow, /etc/gshadow, /root, SSH host keys). A directory is covered by an
//     empty read-only tmpfs, a file by /dev/null, read-only;
//   - /proc of the container's PID namespace, a minimal /dev with a devpts of its own (the
//     node's /dev for a privileged container), a /tmp of its own, the node's sysfs without
//     the file systems mounted below it, read-only (writable when privileged);
//   - runc's masked /proc and /sys paths, and its read-only ones;
//   - the volumes, each bound at its mountPath, read-only (with everything mounted below it)
//     when asked.
// Entering it: pivot_root, then the old root is detached, so nothing of the node's mount tree
// is reachable from the container, with or without CAP_SYS_CHROOT.
#pragma once

#include <string>
#include <vector>

#include "node/runtime/container.h"

namespace kvol::node::runtime {

struct MountStep {
  enum class Kind {
    kRoot,          // the overlay at <bundle>/rootfs
    kMask,          // cover `target` (absent: nothing to do)
    kProc,          // proc at /proc
    kDev,           // a minimal /dev; the node's whole /dev when `source` is "/dev"
    kTmp,           // a tmpfs at /tmp, read-only when `read_only`
    kSys,           // the node's /sys, read-only when `read_only`
    kReadOnlyPath,  // `target` bound on itself, read-only
    kBind,          // a volume: `source` at `target`, read-only when `read_only`
    kReadOnlyRoot,  // the root overlay remounted read-only
  };
  Kind kind;
  std::string target;  // inside the container
  std::string source;  // kBind: the node's path; kRoot: the bundle; kDev: "/dev" or ""
  bool read_only = false;
  std::string within;  // kBind with a subPath: see BindMount::within

  bool operator==(const MountStep&) const = default;
};

// The node's files every container is kept from, besides kvol's own directories: the shadow
// password and group files (and their backups), root's home, and the SSH host private keys
// found on this node.
std::vector<std::string> NodeSecretPaths();

// The mounts that make the container's root, in order.
std::vector<MountStep> PlanMounts(const ContainerSpec& spec);

// Makes the mounts under <bundle>/rootfs, in the calling process's mount namespace (which must
// be the container's, private). Returns 0, or the exit code after reporting the failed step
// on stderr.
int MakeRoot(const ContainerSpec& spec, const std::vector<MountStep>& steps);

// pivot_root into <bundle>/rootfs and detach the old root. Returns 0 or an exit code (stderr
// says why).
int EnterRoot(const std::string& root);

}  // namespace kvol::node::runtime
