// A container's security plan from its pod's spec.
#include "node/runtime/security.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <fstream>
#include <set>

namespace kvol::node::runtime {
namespace {

// Kernel order: the index is the capability's number (linux/capability.h).
constexpr std::array<std::string_view, kLastKnownCapability + 1> kCapabilityNames = {
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE"};

// runc's defaults, as containerd writes them into every container's spec.
const std::vector<std::string> kMaskedPaths = {"/proc/acpi",
                                               "/proc/asound",
                                               "/proc/kcore",
                                               "/proc/keys",
                                               "/proc/latency_stats",
                                               "/proc/timer_list",
                                               "/proc/timer_stats",
                                               "/proc/sched_debug",
                                               "/proc/scsi",
                                               "/sys/firmware",
                                               "/sys/devices/virtual/powercap"};
const std::vector<std::string> kReadOnlyPaths = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                                 "/proc/sysrq-trigger"};

std::string PodRef(const api::Pod& pod) {
  return "\"" + pod.metadata.name + "_" + pod.metadata.namespace_ + "(" + pod.metadata.uid + ")\"";
}

// The container's setting, else the pod's.
template <class T>
std::optional<T> Effective(const std::optional<T>& container, const std::optional<T>& pod) {
  return container ? container : pod;
}

StatusOr<std::vector<int>> Capabilities(const api::SecurityContext* sc, int last_cap) {
  std::set<int> caps(DefaultCapabilities().begin(), DefaultCapabilities().end());
  if (!sc || !sc->capabilities) return std::vector<int>(caps.begin(), caps.end());
  auto is_all = [](const std::string& name) {
    std::string upper = name;
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return upper == "ALL";
  };
  const auto& add = sc->capabilities->add;
  const auto& drop = sc->capabilities->drop;
  if (std::any_of(add.begin(), add.end(), is_all)) {
    for (int c = 0; c <= last_cap; ++c) caps.insert(c);
  }
  if (std::any_of(drop.begin(), drop.end(), is_all)) caps.clear();
  for (const auto* list : {&add, &drop}) {
    for (const auto& name : *list) {
      if (is_all(name)) continue;
      auto number = CapabilityNumber(name);
      if (!number || *number > last_cap) {
        return FailedPreconditionError("unknown capability \"" + name + "\"");
      }
      if (list == &add) {
        caps.insert(*number);
      } else {
        caps.erase(*number);
      }
    }
  }
  return std::vector<int>(caps.begin(), caps.end());
}

}  // namespace

std::string_view CapabilityName(int number) {
  if (number < 0 || number > kLastKnownCapability) return {};
  return kCapabilityNames[number];
}

std::optional<int> CapabilityNumber(std::string_view name) {
  std::string upper(name);
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (upper.rfind("CAP_", 0) != 0) upper = "CAP_" + upper;
  for (int i = 0; i <= kLastKnownCapability; ++i) {
    if (kCapabilityNames[i] == upper) return i;
  }
  return std::nullopt;
}

const std::vector<int>& DefaultCapabilities() {
  static const std::vector<int> kDefault = [] {
    std::vector<int> out;
    for (std::string_view name :
         {"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_SETGID", "CAP_SETUID",
          "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_KILL"}) {
      out.push_back(*CapabilityNumber(name));
    }
    std::sort(out.begin(), out.end());
    return out;
  }();
  return kDefault;
}

int KernelLastCapability() {
  std::ifstream in("/proc/sys/kernel/cap_last_cap");
  int last = -1;
  if (!(in >> last) || last < 0) return kLastKnownCapability;
  return std::min(last, kLastKnownCapability);
}

StatusOr<SecurityPlan> PlanSecurity(const api::Pod& pod, const api::Container& c, int last_cap) {
  static const api::PodSecurityContext kNoPodContext;
  const api::PodSecurityContext& psc =
      pod.spec.security_context ? *pod.spec.security_context : kNoPodContext;
  const api::SecurityContext* sc = c.security_context ? &*c.security_context : nullptr;
  static const api::SecurityContext kNoContext;
  const api::SecurityContext& csc = sc ? *sc : kNoContext;

  SecurityPlan plan;
  plan.privileged = csc.privileged.value_or(false);
  const auto uid = Effective(csc.run_as_user, psc.run_as_user);
  const auto gid = Effective(csc.run_as_group, psc.run_as_group);
  plan.uid = static_cast<uint32_t>(uid.value_or(0));
  plan.gid = static_cast<uint32_t>(gid.value_or(0));
  for (int64_t g : psc.supplemental_groups)
    plan.supplemental_groups.push_back(static_cast<uint32_t>(g));
  if (psc.fs_group) plan.supplemental_groups.push_back(static_cast<uint32_t>(*psc.fs_group));
  std::sort(plan.supplemental_groups.begin(), plan.supplemental_groups.end());
  plan.supplemental_groups.erase(
      std::unique(plan.supplemental_groups.begin(), plan.supplemental_groups.end()),
      plan.supplemental_groups.end());

  if (Effective(csc.run_as_non_root, psc.run_as_non_root).value_or(false)) {
    // kubelet's words. Without runAsUser the image's user applies; kvol has no image, and the
    // node's binaries run as root.
    if (uid && *uid == 0) {
      return InvalidArgumentError("container's runAsUser breaks non-root policy (pod: " +
                                  PodRef(pod) + ", container: " + c.name + ")");
    }
    if (!uid) {
      return InvalidArgumentError("container has runAsNonRoot and image will run as root (pod: " +
                                  PodRef(pod) + ", container: " + c.name + ")");
    }
  }
  plan.read_only_root = csc.read_only_root_filesystem.value_or(false);

  if (plan.privileged) {
    for (int cap = 0; cap <= last_cap; ++cap) plan.capabilities.push_back(cap);
    plan.no_new_privs = false;
    plan.seccomp = SeccompMode::kUnconfined;
    return plan;
  }
  KVOL_ASSIGN_OR_RETURN(plan.capabilities, Capabilities(sc, last_cap));
  plan.no_new_privs = !csc.allow_privilege_escalation.value_or(false);
  const auto profile = Effective(csc.seccomp_profile, psc.seccomp_profile);
  if (profile && profile->type == "Unconfined") {
    plan.seccomp = SeccompMode::kUnconfined;
  } else if (profile && profile->type == "Localhost") {
    return FailedPreconditionError(
        "seccomp profile type Localhost (\"" + profile->localhost_profile.value_or("") +
        "\") is not supported by kvol's built-in runtime: use RuntimeDefault or Unconfined");
  }
  plan.masked_paths = kMaskedPaths;
  plan.read_only_paths = kReadOnlyPaths;
  return plan;
}

}  // namespace kvol::node::runtime
