// The runtime default seccomp profile's rules, and loading them with libseccomp.
#include "node/runtime/seccomp.h"

#include <errno.h>
#include <seccomp.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>

#include "node/runtime/security.h"

namespace kvol::node::runtime {
namespace {

// Allowed whatever the container holds. Names of other architectures' calls (the *32 and
// *_time64 variants) are kept, as in the published profile; they resolve to nothing here.
constexpr std::string_view kAllowed[] = {
    "_llseek",
    "_newselect",
    "accept",
    "accept4",
    "access",
    "adjtimex",
    "alarm",
    "arch_prctl",
    "bind",
    "brk",
    "capget",
    "capset",
    "chdir",
    "chmod",
    "chown",
    "chown32",
    "clock_adjtime",
    "clock_adjtime64",
    "clock_getres",
    "clock_getres_time64",
    "clock_gettime",
    "clock_gettime64",
    "clock_nanosleep",
    "clock_nanosleep_time64",
    "close",
    "close_range",
    "connect",
    "copy_file_range",
    "creat",
    "dup",
    "dup2",
    "dup3",
    "epoll_create",
    "epoll_create1",
    "epoll_ctl",
    "epoll_ctl_old",
    "epoll_pwait",
    "epoll_pwait2",
    "epoll_wait",
    "epoll_wait_old",
    "eventfd",
    "eventfd2",
    "execve",
    "execveat",
    "exit",
    "exit_group",
    "faccessat",
    "faccessat2",
    "fadvise64",
    "fadvise64_64",
    "fallocate",
    "fanotify_mark",
    "fchdir",
    "fchmod",
    "fchmodat",
    "fchown",
    "fchown32",
    "fchownat",
    "fcntl",
    "fcntl64",
    "fdatasync",
    "fgetxattr",
    "flistxattr",
    "flock",
    "fork",
    "fremovexattr",
    "fsetxattr",
    "fstat",
    "fstat64",
    "fstatat64",
    "fstatfs",
    "fstatfs64",
    "fsync",
    "ftruncate",
    "ftruncate64",
    "futex",
    "futex_time64",
    "futex_waitv",
    "futimesat",
    "get_robust_list",
    "get_thread_area",
    "getcpu",
    "getcwd",
    "getdents",
    "getdents64",
    "getegid",
    "getegid32",
    "geteuid",
    "geteuid32",
    "getgid",
    "getgid32",
    "getgroups",
    "getgroups32",
    "getitimer",
    "getpeername",
    "getpgid",
    "getpgrp",
    "getpid",
    "getppid",
    "getpriority",
    "getrandom",
    "getresgid",
    "getresgid32",
    "getresuid",
    "getresuid32",
    "getrlimit",
    "getrusage",
    "getsid",
    "getsockname",
    "getsockopt",
    "gettid",
    "gettimeofday",
    "getuid",
    "getuid32",
    "getxattr",
    "inotify_add_watch",
    "inotify_init",
    "inotify_init1",
    "inotify_rm_watch",
    "io_cancel",
    "io_destroy",
    "io_getevents",
    "io_pgetevents",
    "io_pgetevents_time64",
    "io_setup",
    "io_submit",
    "ioctl",
    "ioprio_get",
    "ioprio_set",
    "ipc",
    "kill",
    "landlock_add_rule",
    "landlock_create_ruleset",
    "landlock_restrict_self",
    "lchown",
    "lchown32",
    "lgetxattr",
    "link",
    "linkat",
    "listen",
    "listxattr",
    "llistxattr",
    "lremovexattr",
    "lseek",
    "lsetxattr",
    "lstat",
    "lstat64",
    "madvise",
    "membarrier",
    "memfd_create",
    "memfd_secret",
    "mincore",
    "mkdir",
    "mkdirat",
    "mknod",
    "mknodat",
    "mlock",
    "mlock2",
    "mlockall",
    "mmap",
    "mmap2",
    "modify_ldt",
    "mprotect",
    "mq_getsetattr",
    "mq_notify",
    "mq_open",
    "mq_timedreceive",
    "mq_timedreceive_time64",
    "mq_timedsend",
    "mq_timedsend_time64",
    "mq_unlink",
    "mremap",
    "msgctl",
    "msgget",
    "msgrcv",
    "msgsnd",
    "msync",
    "munlock",
    "munlockall",
    "munmap",
    "name_to_handle_at",
    "nanosleep",
    "newfstatat",
    "open",
    "openat",
    "openat2",
    "pause",
    "pidfd_open",
    "pidfd_send_signal",
    "pipe",
    "pipe2",
    "pkey_alloc",
    "pkey_free",
    "pkey_mprotect",
    "poll",
    "ppoll",
    "ppoll_time64",
    "prctl",
    "pread64",
    "preadv",
    "preadv2",
    "prlimit64",
    "process_mrelease",
    "pselect6",
    "pselect6_time64",
    "pwrite64",
    "pwritev",
    "pwritev2",
    "read",
    "readahead",
    "readlink",
    "readlinkat",
    "readv",
    "recv",
    "recvfrom",
    "recvmmsg",
    "recvmmsg_time64",
    "recvmsg",
    "remap_file_pages",
    "removexattr",
    "rename",
    "renameat",
    "renameat2",
    "restart_syscall",
    "rmdir",
    "rseq",
    "rt_sigaction",
    "rt_sigpending",
    "rt_sigprocmask",
    "rt_sigqueueinfo",
    "rt_sigreturn",
    "rt_sigsuspend",
    "rt_sigtimedwait",
    "rt_sigtimedwait_time64",
    "rt_tgsigqueueinfo",
    "sched_get_priority_max",
    "sched_get_priority_min",
    "sched_getaffinity",
    "sched_getattr",
    "sched_getparam",
    "sched_getscheduler",
    "sched_rr_get_interval",
    "sched_rr_get_interval_time64",
    "sched_setaffinity",
    "sched_setattr",
    "sched_setparam",
    "sched_setscheduler",
    "sched_yield",
    "seccomp",
    "select",
    "semctl",
    "semget",
    "semop",
    "semtimedop",
    "semtimedop_time64",
    "send",
    "sendfile",
    "sendfile64",
    "sendmmsg",
    "sendmsg",
    "sendto",
    "set_robust_list",
    "set_thread_area",
    "set_tid_address",
    "setfsgid",
    "setfsgid32",
    "setfsuid",
    "setfsuid32",
    "setgid",
    "setgid32",
    "setgroups",
    "setgroups32",
    "setitimer",
    "setpgid",
    "setpriority",
    "setregid",
    "setregid32",
    "setresgid",
    "setresgid32",
    "setresuid",
    "setresuid32",
    "setreuid",
    "setreuid32",
    "setrlimit",
    "setsid",
    "setsockopt",
    "setuid",
    "setuid32",
    "setxattr",
    "shmat",
    "shmctl",
    "shmdt",
    "shmget",
    "shutdown",
    "sigaltstack",
    "signalfd",
    "signalfd4",
    "sigprocmask",
    "sigreturn",
    "socketcall",
    "socketpair",
    "splice",
    "stat",
    "stat64",
    "statfs",
    "statfs64",
    "statx",
    "symlink",
    "symlinkat",
    "sync",
    "sync_file_range",
    "syncfs",
    "sysinfo",
    "tee",
    "tgkill",
    "time",
    "timer_create",
    "timer_delete",
    "timer_getoverrun",
    "timer_gettime",
    "timer_gettime64",
    "timer_settime",
    "timer_settime64",
    "timerfd_create",
    "timerfd_gettime",
    "timerfd_gettime64",
    "timerfd_settime",
    "timerfd_settime64",
    "times",
    "tkill",
    "truncate",
    "truncate64",
    "ugetrlimit",
    "umask",
    "uname",
    "unlink",
    "unlinkat",
    "utime",
    "utimensat",
    "utimensat_time64",
    "utimes",
    "vfork",
    "vmsplice",
    "wait4",
    "waitid",
    "waitpid",
    "write",
    "writev",
};

// Allowed only to a container holding the capability.
struct CapabilityCalls {
  std::string_view capability;
  std::vector<std::string_view> calls;
};
const std::vector<CapabilityCalls> kByCapability = {
    {"CAP_DAC_READ_SEARCH", {"open_by_handle_at"}},
    {"CAP_SYS_ADMIN",
     {"bpf",           "clone",         "clone3",      "fanotify_init",   "fsconfig",
      "fsmount",       "fsopen",        "fspick",      "lookup_dcookie",  "mount",
      "mount_setattr", "move_mount",    "open_tree",   "perf_event_open", "quotactl",
      "quotactl_fd",   "setdomainname", "sethostname", "setns",           "syslog",
      "umount",        "umount2",       "unshare"}},
    {"CAP_SYS_BOOT", {"reboot"}},
    {"CAP_SYS_CHROOT", {"chroot"}},
    {"CAP_SYS_MODULE", {"delete_module", "init_module", "finit_module"}},
    {"CAP_SYS_PACCT", {"acct"}},
    {"CAP_SYS_PTRACE", {"kcmp", "pidfd_getfd", "process_madvise"}},
    {"CAP_SYS_RAWIO", {"iopl", "ioperm"}},
    {"CAP_SYS_TIME", {"settimeofday", "stime", "clock_settime", "clock_settime64"}},
    {"CAP_SYS_TTY_CONFIG", {"vhangup"}},
    {"CAP_SYS_NICE", {"get_mempolicy", "mbind", "set_mempolicy", "set_mempolicy_home_node"}},
    {"CAP_SYSLOG", {"syslog"}},
    {"CAP_BPF", {"bpf"}},
    {"CAP_PERFMON", {"perf_event_open"}},
};

// The namespace flags of clone: CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET.
constexpr uint64_t kCloneNamespaceFlags = 0x7E020000;
constexpr uint64_t kAfVsock = 40;
// personality(2) personas the profile allows: PER_LINUX, UNAME26, PER_LINUX32,
// PER_LINUX32|UNAME26, and the query 0xffffffff.
constexpr uint64_t kPersonas[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};

}  // namespace

std::vector<SeccompRule> RuntimeDefaultRules(const std::vector<int>& capabilities) {
  using Arg = SeccompRule::Arg;
  auto holds = [&](std::string_view name) {
    auto n = CapabilityNumber(name);
    return n && std::find(capabilities.begin(), capabilities.end(), *n) != capabilities.end();
  };
  std::vector<SeccompRule> rules;
  std::set<std::string_view> unconditional;
  auto allow = [&](std::string_view call) {
    if (unconditional.insert(call).second) rules.push_back({.syscall = call});
  };
  for (std::string_view call : kAllowed) allow(call);
  // ptrace and process_vm_* are safe for anyone since Linux 4.8 (seccomp is checked after the
  // tracer's changes), which every kernel kvol runs on is.
  for (std::string_view call : {"ptrace", "process_vm_readv", "process_vm_writev"}) allow(call);
  for (const auto& group : kByCapability) {
    if (!holds(group.capability)) continue;
    for (std::string_view call : group.calls) allow(call);
  }
  rules.push_back(
      {.syscall = "socket", .arg = Arg{.index = 0, .op = Arg::Op::kNotEqual, .value = kAfVsock}});
  for (uint64_t persona : kPersonas) {
    rules.push_back({.syscall = "personality",
                     .arg = Arg{.index = 0, .op = Arg::Op::kEqual, .value = persona}});
  }
  if (!holds("CAP_SYS_ADMIN")) {
    rules.push_back(
        {.syscall = "clone",
         .arg = Arg{
             .index = 0, .op = Arg::Op::kMaskedEqual, .value = 0, .mask = kCloneNamespaceFlags}});
    rules.push_back(
        {.syscall = "clone3", .action = SeccompRule::Action::kErrno, .errno_value = ENOSYS});
  }
  return rules;
}

Status LoadSeccompFilter(const std::vector<SeccompRule>& rules) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
  if (!ctx) return InternalError("seccomp_init failed");
  auto fail = [&](const std::string& what, int rc) {
    seccomp_release(ctx);
    return InternalError("seccomp: " + what + ": " + std::strerror(-rc));
  };
  // libseccomp sets no_new_privs while loading unless told not to; whether the container gets
  // it is the plan's decision (allowPrivilegeEscalation), made by the caller.
  if (int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0); rc != 0) return fail("attr", rc);
  for (const auto& rule : rules) {
    const int nr = seccomp_syscall_resolve_name(std::string(rule.syscall).c_str());
    if (nr == __NR_SCMP_ERROR || nr < 0) continue;  // not a call of this architecture
    const uint32_t action = rule.action == SeccompRule::Action::kAllow
                                ? SCMP_ACT_ALLOW
                                : SCMP_ACT_ERRNO(static_cast<uint16_t>(rule.errno_value));
    int rc = 0;
    if (!rule.arg) {
      rc = seccomp_rule_add(ctx, action, nr, 0);
    } else {
      const auto& a = *rule.arg;
      scmp_arg_cmp cmp{};
      switch (a.op) {
        case SeccompRule::Arg::Op::kEqual:
          cmp = SCMP_CMP(a.index, SCMP_CMP_EQ, a.value);
          break;
        case SeccompRule::Arg::Op::kNotEqual:
          cmp = SCMP_CMP(a.index, SCMP_CMP_NE, a.value);
          break;
        case SeccompRule::Arg::Op::kMaskedEqual:
          cmp = SCMP_CMP(a.index, SCMP_CMP_MASKED_EQ, a.mask, a.value);
          break;
      }
      rc = seccomp_rule_add_array(ctx, action, nr, 1, &cmp);
    }
    if (rc != 0) return fail("rule for " + std::string(rule.syscall), rc);
  }
  if (int rc = seccomp_load(ctx); rc != 0) return fail("load", rc);
  seccomp_release(ctx);
  return OkStatus();
}

}  // namespace kvol::node::runtime
