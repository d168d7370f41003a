// What a container may do on the node, decided from its pod's spec before it starts: its
// capabilities, whether it may gain privileges, its seccomp filter, its user and groups, whether
// its root is read-only, and which /proc and /sys paths it must not see or change. A pure
// function (`PlanSecurity`), so that every rule has a row in a table; `container.cc` applies the
// plan inside the container's init.
//
// The defaults are those of container runtimes:
//   - capabilities: containerd's default list (since 2.0; CRI-O's is the same): CHOWN,
//     DAC_OVERRIDE, FSETID, FOWNER, SETGID, SETUID, SETPCAP, NET_BIND_SERVICE and KILL, so no
//     CAP_SYS_ADMIN, CAP_SYS_CHROOT, CAP_SYS_PTRACE, CAP_NET_RAW, CAP_MKNOD, ...;
//     `capabilities.add/drop` change it as containerd does ("ALL" first, then single names; a
//     drop wins over an add), with or without the CAP_ prefix, in any case;
//   - the runtime default seccomp profile unless `seccompProfile: Unconfined`;
//   - runc's masked and read-only /proc and /sys paths;
//   - `privileged: true` gets every capability, no seccomp filter, nothing masked and /sys
//     writable.
// Two defaults are stricter than Kubernetes' on purpose, because the built-in runtime shows the
// node's own root filesystem to its containers: no_new_privs is set unless
// `allowPrivilegeEscalation: true` (Kubernetes sets it only for false), and a container without a
// seccompProfile gets the runtime default (kubelet's --seccomp-default).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/core.h"
#include "base/status.h"

namespace kvol::node::runtime {

enum class SeccompMode { kRuntimeDefault, kUnconfined };

struct SecurityPlan {
  bool privileged = false;
  // Bounding set, and for uid 0 also the effective and permitted sets. A container running as
  // another user starts with none effective (as containerd and Docker do); the inheritable and
  // ambient sets are always empty. Kernel numbers, ascending.
  std::vector<int> capabilities;
  bool no_new_privs = true;
  SeccompMode seccomp = SeccompMode::kRuntimeDefault;
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> supplemental_groups;
  bool read_only_root = false;
  // Covered (an empty read-only tmpfs on a directory, /dev/null on a file) and made read-only.
  std::vector<std::string> masked_paths;
  std::vector<std::string> read_only_paths;

  bool operator==(const SecurityPlan&) const = default;
};

// The highest capability number this kvol knows (CAP_CHECKPOINT_RESTORE).
inline constexpr int kLastKnownCapability = 40;

// "CAP_CHOWN" for 0, ...; "" beyond kLastKnownCapability.
std::string_view CapabilityName(int number);
// The number of "CAP_SYS_ADMIN", "sys_admin", "SYS_ADMIN"; nullopt for an unknown name.
std::optional<int> CapabilityNumber(std::string_view name);
// The runtime default capability set, ascending.
const std::vector<int>& DefaultCapabilities();

// The container's plan. `last_cap` is the highest capability the kernel has
// (/proc/sys/kernel/cap_last_cap), what "ALL" and privileged mean. Errors, in kubelet's and
// containerd's words, for a container that cannot start as asked:
//   - InvalidArgument (kubelet's CreateContainerConfigError): runAsNonRoot with uid 0,
//     `container's runAsUser breaks non-root policy (pod: "p_ns(uid)", container: c)`, or
//     without runAsUser (the node's binaries run as root), `container has runAsNonRoot and
//     image will run as root (pod: ..., container: c)`;
//   - FailedPrecondition (the runtime's refusal, CreateContainerError): an unknown capability
//     name, `unknown capability "CAP_X"`; seccompProfile Localhost, which the built-in runtime
//     does not load.
StatusOr<SecurityPlan> PlanSecurity(const api::Pod& pod, const api::Container& container,
                                    int last_cap);

// What the kernel says about /proc/sys/kernel/cap_last_cap (kLastKnownCapability when it cannot
// be read).
int KernelLastCapability();

}  // namespace kvol::node::runtime
