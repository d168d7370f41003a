// Confining a container's process: groups, user, capabilities, no_new_privs, seccomp.
#include "node/runtime/confine.h"

#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "node/runtime/init_error.h"
#include "node/runtime/seccomp.h"

namespace kvol::node::runtime {
namespace {

// The capabilities of the plan the calling process holds: a container gets no more than the
// runtime has (a machine may withhold some from everything, privileged containers included).
std::vector<int> HeldOf(const std::vector<int>& caps) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return caps;
  std::vector<int> held;
  for (int cap : caps) {
    if (cap < 64 && (data[cap / 32].permitted & (1u << (cap % 32)))) held.push_back(cap);
  }
  return held;
}

int LoadSeccomp(const SecurityPlan& plan, const std::vector<int>& caps) {
  if (plan.seccomp != SeccompMode::kRuntimeDefault) return 0;
  if (Status s = LoadSeccompFilter(RuntimeDefaultRules(caps)); !s.ok()) {
    std::fprintf(stderr, "kvol: container init: %s\n", s.message().c_str());
    return kInitFailed;
  }
  return 0;
}

// Effective and permitted as the plan says, inheritable empty (CVE-2022-24769: a runtime must
// not hand capabilities on through the inheritable set).
int SetCapabilities(const std::vector<int>& caps) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  for (int cap : caps) {
    data[cap / 32].effective |= 1u << (cap % 32);
    data[cap / 32].permitted |= 1u << (cap % 32);
  }
  if (syscall(SYS_capset, &header, data) != 0) return InitFailure("capset");
  return 0;
}

}  // namespace

int Confine(const SecurityPlan& plan, const std::string& working_dir) {
  const std::string wd = working_dir.empty() ? "/" : working_dir;
  // As root first: a directory only root may enter is still the working directory (runc does
  // the same, and tries again as the user when root could not).
  const bool in_wd = chdir(wd.c_str()) == 0;
  const std::vector<int> caps = HeldOf(plan.capabilities);
  // Without no_new_privs the filter can only be loaded with CAP_SYS_ADMIN: now, before the
  // capabilities go. Every call after it here is one the profile allows.
  if (!plan.no_new_privs) {
    if (int rc = LoadSeccomp(plan, caps); rc != 0) return rc;
  }
  // The bounding set while CAP_SETPCAP is still effective: every capability the kernel knows
  // (PR_CAPBSET_READ fails past the last), not a number read from a /proc the container may
  // have mounted.
  for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; ++cap) {
    if (std::find(caps.begin(), caps.end(), cap) != caps.end()) continue;
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) return InitFailure("drop capability bound");
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    return InitFailure("clear ambient capabilities");
  }
  std::vector<gid_t> groups(plan.supplemental_groups.begin(), plan.supplemental_groups.end());
  if (setgroups(groups.size(), groups.data()) != 0) return InitFailure("setgroups");
  if (setresgid(plan.gid, plan.gid, plan.gid) != 0) return InitFailure("setresgid");
  // Keep the permitted set across the change of user; capset below trims it.
  if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) return InitFailure("keep capabilities");
  if (setresuid(plan.uid, plan.uid, plan.uid) != 0) return InitFailure("setresuid");
  if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) != 0) return InitFailure("keep capabilities");
  // For uid 0 these are what the command runs with; for another user exec leaves none
  // effective (no file capabilities, no ambient set), as in containerd and Docker.
  if (int rc = SetCapabilities(caps); rc != 0) return rc;
  if (!in_wd && chdir(wd.c_str()) != 0) return InitFailure("chdir " + wd);
  if (plan.no_new_privs) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return InitFailure("no_new_privs");
    if (int rc = LoadSeccomp(plan, caps); rc != 0) return rc;
  }
  return 0;
}

}  // namespace kvol::node::runtime
