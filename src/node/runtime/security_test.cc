// The security plan of a container spec, one row per rule, and the runtime default seccomp
// profile's rules (and the filter, loaded into a child process).
#include "node/runtime/security.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <functional>

#include "api/codec.h"
#include "node/runtime/seccomp.h"

namespace kvol::node::runtime {
namespace {

std::vector<int> Caps(std::initializer_list<std::string_view> names) {
  std::vector<int> out;
  for (auto n : names) out.push_back(*CapabilityNumber(n));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> AllCaps() {
  std::vector<int> out;
  for (int i = 0; i <= kLastKnownCapability; ++i) out.push_back(i);
  return out;
}

const std::vector<int> kDefault = Caps({"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "SETGID",
                                        "SETUID", "SETPCAP", "NET_BIND_SERVICE", "KILL"});

// A pod from its spec's JSON (one container named "c" unless the JSON names containers).
api::Pod PodFrom(std::string_view pod_security, std::string_view container_security) {
  std::string json = R"({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": {)";
  if (!pod_security.empty()) json += R"("securityContext": )" + std::string(pod_security) + ",";
  json += R"("containers": [{"name": "c", "image": "i")";
  if (!container_security.empty()) {
    json += R"(, "securityContext": )" + std::string(container_security);
  }
  json += "}]}}";
  auto j = api::ParseJson(json);
  EXPECT_TRUE(j.ok());
  api::FieldErrors errs;
  auto pod = api::DecodeStruct<api::Pod>(*j, &errs);
  EXPECT_TRUE(errs.empty()) << errs.front().ToString();
  return pod;
}

// The plan of a container with no securityContext, changed by `edit`.
SecurityPlan Confined(const std::function<void(SecurityPlan&)>& edit = {}) {
  SecurityPlan p;
  p.capabilities = kDefault;
  p.masked_paths = {"/proc/acpi",
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
  p.read_only_paths = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"};
  if (edit) edit(p);
  return p;
}

struct PlanCase {
  std::string name;
  std::string pod_security;        // JSON, "" for none
  std::string container_security;  // JSON, "" for none
  SecurityPlan want;               // when `error` is empty
  std::string error;
};

TEST(PlanSecurity, Table) {
  const std::vector<PlanCase> cases = {
      {.name = "no securityContext: the runtime's defaults", .want = Confined()},
      {.name = "privileged: every capability, no filter, nothing masked",
       .container_security = R"({"privileged": true})",
       .want = {.privileged = true,
                .capabilities = AllCaps(),
                .no_new_privs = false,
                .seccomp = SeccompMode::kUnconfined}},
      {.name = "capabilities added and dropped, with and without CAP_, any case",
       .container_security = R"({"capabilities": {"add": ["NET_ADMIN", "cap_sys_time"],
                                                 "drop": ["CHOWN", "CAP_KILL"]}})",
       .want = Confined([](auto& p) {
         p.capabilities = Caps({"DAC_OVERRIDE", "FSETID", "FOWNER", "SETGID", "SETUID", "SETPCAP",
                                "NET_BIND_SERVICE", "NET_ADMIN", "SYS_TIME"});
       })},
      {.name = "drop ALL then add one: only that one",
       .container_security = R"({"capabilities": {"drop": ["all"], "add": ["NET_BIND_SERVICE"]}})",
       .want = Confined([](auto& p) { p.capabilities = Caps({"NET_BIND_SERVICE"}); })},
      {.name = "drop ALL alone: none",
       .container_security = R"({"capabilities": {"drop": ["ALL"]}})",
       .want = Confined([](auto& p) { p.capabilities.clear(); })},
      {.name = "add ALL but one: every other",
       .container_security = R"({"capabilities": {"add": ["ALL"], "drop": ["SYS_ADMIN"]}})",
       .want = Confined([](auto& p) {
         p.capabilities = AllCaps();
         std::erase(p.capabilities, *CapabilityNumber("SYS_ADMIN"));
       })},
      {.name = "a drop wins over an add of the same capability",
       .container_security = R"({"capabilities": {"add": ["SYS_PTRACE"], "drop": ["SYS_PTRACE"]}})",
       .want = Confined()},
      {.name = "unknown capability",
       .container_security = R"({"capabilities": {"add": ["CAP_FLY"]}})",
       .error = "unknown capability \"CAP_FLY\""},
      {.name = "allowPrivilegeEscalation true: no no_new_privs",
       .container_security = R"({"allowPrivilegeEscalation": true})",
       .want = Confined([](auto& p) { p.no_new_privs = false; })},
      {.name = "allowPrivilegeEscalation false: no_new_privs",
       .container_security = R"({"allowPrivilegeEscalation": false})",
       .want = Confined()},
      {.name = "seccomp Unconfined on the pod",
       .pod_security = R"({"seccompProfile": {"type": "Unconfined"}})",
       .want = Confined([](auto& p) { p.seccomp = SeccompMode::kUnconfined; })},
      {.name = "the container's seccompProfile wins over the pod's",
       .pod_security = R"({"seccompProfile": {"type": "Unconfined"}})",
       .container_security = R"({"seccompProfile": {"type": "RuntimeDefault"}})",
       .want = Confined()},
      {.name = "seccomp Localhost is refused",
       .container_security =
           R"({"seccompProfile": {"type": "Localhost", "localhostProfile": "a.json"}})",
       .error = "seccomp profile type Localhost (\"a.json\") is not supported by kvol's built-in "
                "runtime: use RuntimeDefault or Unconfined"},
      {.name = "runAsUser and runAsGroup from the pod, fsGroup among the groups",
       .pod_security = R"({"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000,
                           "supplementalGroups": [4000, 2000]})",
       .want = Confined([](auto& p) {
         p.uid = 1000;
         p.gid = 3000;
         p.supplemental_groups = {2000, 4000};
       })},
      {.name = "the container's runAsUser wins; runAsGroup unset is group 0",
       .pod_security = R"({"runAsUser": 1000})",
       .container_security = R"({"runAsUser": 1001})",
       .want = Confined([](auto& p) { p.uid = 1001; })},
      {.name = "readOnlyRootFilesystem",
       .container_security = R"({"readOnlyRootFilesystem": true})",
       .want = Confined([](auto& p) { p.read_only_root = true; })},
      {.name = "runAsNonRoot with a user",
       .pod_security = R"({"runAsNonRoot": true})",
       .container_security = R"({"runAsUser": 65534})",
       .want = Confined([](auto& p) { p.uid = 65534; })},
      {.name = "runAsNonRoot without a user: the node's binaries run as root",
       .container_security = R"({"runAsNonRoot": true})",
       .error = "container has runAsNonRoot and image will run as root (pod: \"p_ns(u1)\", "
                "container: c)"},
      {.name = "runAsNonRoot with uid 0",
       .container_security = R"({"runAsNonRoot": true, "runAsUser": 0})",
       .error = "container's runAsUser breaks non-root policy (pod: \"p_ns(u1)\", container: c)"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    api::Pod pod = PodFrom(tc.pod_security, tc.container_security);
    auto plan = PlanSecurity(pod, pod.spec.containers[0], kLastKnownCapability);
    if (!tc.error.empty()) {
      ASSERT_FALSE(plan.ok());
      EXPECT_EQ(plan.status().message(), tc.error);
      continue;
    }
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_EQ(plan->privileged, tc.want.privileged);
    EXPECT_EQ(plan->capabilities, tc.want.capabilities);
    EXPECT_EQ(plan->no_new_privs, tc.want.no_new_privs);
    EXPECT_EQ(plan->seccomp, tc.want.seccomp);
    EXPECT_EQ(plan->uid, tc.want.uid);
    EXPECT_EQ(plan->gid, tc.want.gid);
    EXPECT_EQ(plan->supplemental_groups, tc.want.supplemental_groups);
    EXPECT_EQ(plan->read_only_root, tc.want.read_only_root);
    EXPECT_EQ(plan->masked_paths, tc.want.masked_paths);
    EXPECT_EQ(plan->read_only_paths, tc.want.read_only_paths);
  }
}

TEST(PlanSecurity, AllMeansWhatTheKernelHas) {
  api::Pod pod = PodFrom("", R"({"privileged": true})");
  auto plan = PlanSecurity(pod, pod.spec.containers[0], 37);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->capabilities.size(), 38u);
  pod = PodFrom("", R"({"capabilities": {"add": ["BPF"]}})");
  EXPECT_EQ(PlanSecurity(pod, pod.spec.containers[0], 37).status().message(),
            "unknown capability \"BPF\"");
}

TEST(CapabilityNames, RoundTrip) {
  for (int i = 0; i <= kLastKnownCapability; ++i) {
    EXPECT_EQ(CapabilityNumber(CapabilityName(i)), i);
  }
  EXPECT_EQ(CapabilityNumber("sys_admin"), 21);
  EXPECT_EQ(CapabilityNumber("CAP_CHECKPOINT_RESTORE"), 40);
  EXPECT_EQ(CapabilityNumber("ALL"), std::nullopt);
  EXPECT_EQ(CapabilityName(41), "");
}

// ---- the runtime default seccomp profile -----------------------------------------------------

bool Allows(const std::vector<SeccompRule>& rules, std::string_view call) {
  return std::any_of(rules.begin(), rules.end(), [&](const SeccompRule& r) {
    return r.syscall == call && r.action == SeccompRule::Action::kAllow && !r.arg;
  });
}

TEST(RuntimeDefaultRules, Table) {
  struct Case {
    std::string name;
    std::vector<int> caps;
    std::vector<std::string_view> allowed, refused;
  };
  const std::vector<Case> cases = {
      {.name = "default capabilities",
       .caps = kDefault,
       .allowed = {"read", "execve", "setresuid", "capset", "prctl", "ptrace", "futex", "ioctl",
                   "kill", "io_submit", "ipc", "landlock_add_rule", "writev"},
       .refused = {"mount", "umount2", "unshare", "setns", "chroot", "pivot_root", "reboot",
                   "init_module", "kexec_load", "bpf", "keyctl", "add_key", "clock_settime",
                   "open_by_handle_at", "io_uring_setup", "userfaultfd", "swapon", "acct"}},
      {.name = "CAP_SYS_ADMIN allows mount and namespaces",
       .caps = Caps({"SYS_ADMIN"}),
       .allowed = {"mount", "umount2", "unshare", "setns", "clone", "clone3", "sethostname"},
       .refused = {"chroot", "reboot", "pivot_root"}},
      {.name = "CAP_SYS_CHROOT allows chroot",
       .caps = Caps({"SYS_CHROOT"}),
       .allowed = {"chroot"},
       .refused = {"mount"}},
      {.name = "CAP_SYS_TIME and CAP_SYS_PTRACE",
       .caps = Caps({"SYS_TIME", "SYS_PTRACE"}),
       .allowed = {"clock_settime", "settimeofday", "kcmp", "pidfd_getfd"},
       .refused = {"reboot"}},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    const auto rules = RuntimeDefaultRules(tc.caps);
    for (auto call : tc.allowed) EXPECT_TRUE(Allows(rules, call)) << call;
    for (auto call : tc.refused) EXPECT_FALSE(Allows(rules, call)) << call;
    // Each call is either unconditional once or conditional only.
    for (const auto& r : rules) {
      const auto same = std::count_if(rules.begin(), rules.end(),
                                      [&](const SeccompRule& o) { return o.syscall == r.syscall; });
      if (!r.arg && r.action == SeccompRule::Action::kAllow) EXPECT_EQ(same, 1) << r.syscall;
    }
  }
}

TEST(RuntimeDefaultRules, CloneWithoutNamespacesAndSocketWithoutVsock) {
  using Arg = SeccompRule::Arg;
  const auto rules = RuntimeDefaultRules(kDefault);
  const SeccompRule clone{
      .syscall = "clone",
      .arg = Arg{.index = 0, .op = Arg::Op::kMaskedEqual, .value = 0, .mask = 0x7E020000}};
  const SeccompRule clone3{
      .syscall = "clone3", .action = SeccompRule::Action::kErrno, .errno_value = ENOSYS};
  const SeccompRule socket{.syscall = "socket",
                           .arg = Arg{.index = 0, .op = Arg::Op::kNotEqual, .value = 40}};
  for (const auto& want : {clone, clone3, socket}) {
    EXPECT_NE(std::find(rules.begin(), rules.end(), want), rules.end()) << want.syscall;
  }
  EXPECT_EQ(std::count_if(rules.begin(), rules.end(),
                          [](const SeccompRule& r) { return r.syscall == "personality"; }),
            5);
}

// The filter loaded into a child: mode 2 in its status, a refused call fails with EPERM, an
// allowed one works, clone3 says ENOSYS, an AF_VSOCK socket is refused.
TEST(LoadSeccompFilter, RefusesWhatTheProfileRefuses) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(10);
    if (!LoadSeccompFilter(RuntimeDefaultRules(kDefault)).ok()) _exit(11);
    const int s0 = open("/dev/null", O_RDONLY);
    FILE* f = fopen("/proc/self/status", "r");
    char line[256];
    bool mode2 = false;
    while (f && fgets(line, sizeof line, f)) mode2 |= std::string(line) == "Seccomp:\t2\n";
    if (!mode2) _exit(12);
    if (umount2("/nonexistent", 0) == 0 || errno != EPERM) _exit(13);
    if (getpid() <= 0) _exit(14);
    struct termios term;
    if (tcgetattr(s0, &term) == 0 || errno != ENOTTY) _exit(18);  // ioctl is allowed
    if (syscall(435 /* clone3 */, nullptr, 0) == 0 || errno != ENOSYS) _exit(15);
    if (socket(40, SOCK_STREAM, 0) >= 0 || errno != EPERM) _exit(16);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0) _exit(17);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's check that failed (see the exit codes above)";
}

}  // namespace
}  // namespace kvol::node::runtime
