// The runtime default seccomp profile (Kubernetes' `seccompProfile: RuntimeDefault`), as
// Docker's and containerd's default profile has it for x86_64: every system call fails with
// EPERM except an allow list, some calls allowed only with the capability that makes them safe
// (mount with CAP_SYS_ADMIN, ptrace's relatives with CAP_SYS_PTRACE, chroot with
// CAP_SYS_CHROOT, ...), clone without namespace flags, clone3 answered ENOSYS so that libc falls
// back to clone, socket for every family but AF_VSOCK, personality for the usual personas.
// io_uring is left out, as containerd's current profile leaves it out.
//
// `RuntimeDefaultRules` is pure (a table test covers it); `LoadSeccompFilter` builds the filter
// with libseccomp and loads it into the calling thread, the container's init before exec.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kvol::node::runtime {

struct SeccompRule {
  std::string_view syscall;
  enum class Action { kAllow, kErrno };
  Action action = Action::kAllow;
  int errno_value = 0;  // for kErrno
  // At most one condition on an argument; the rule matches only when it holds.
  struct Arg {
    unsigned index = 0;
    enum class Op { kEqual, kNotEqual, kMaskedEqual };  // kMaskedEqual: (arg & mask) == value
    Op op = Op::kEqual;
    uint64_t value = 0;
    uint64_t mask = 0;
    bool operator==(const Arg&) const = default;
  };
  std::optional<Arg> arg;
  bool operator==(const SeccompRule&) const = default;
};

// The profile's rules for a container holding `capabilities` (kernel numbers). A system call
// no rule matches fails with EPERM. Each call appears either once unconditionally or only in
// conditional rules.
std::vector<SeccompRule> RuntimeDefaultRules(const std::vector<int>& capabilities);

// Builds and loads the filter. Requires no_new_privs or CAP_SYS_ADMIN in the calling thread;
// sets neither itself.
// Rules for calls this architecture does not have are skipped. Internal on failure.
Status LoadSeccompFilter(const std::vector<SeccompRule>& rules);

}  // namespace kvol::node::runtime
