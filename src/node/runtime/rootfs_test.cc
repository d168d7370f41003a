// The mount plan of a container spec, one row per kind of container.
#include "node/runtime/rootfs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

namespace kvol::node::runtime {
namespace {

using Kind = MountStep::Kind;

ContainerSpec Spec(const std::function<void(ContainerSpec&)>& edit) {
  ContainerSpec s;
  s.bundle_dir = "/var/lib/kvol/agent/containers/u1/c";
  s.argv = {"sleep", "1"};
  s.hidden_paths = {"/var/lib/kvol", "/etc/shadow"};
  s.mounts = {{.source = "/var/lib/kvol/agent/pods/u1/volumes/kubernetes.io~empty-dir/cache",
               .target = "/cache"},
              {.source = "/var/lib/kvol/agent/pods/u1/volumes/kubernetes.io~configmap/cfg/a",
               .target = "/etc/a",
               .read_only = true,
               .within = "/var/lib/kvol/agent/pods/u1/volumes/kubernetes.io~configmap/cfg"}};
  s.security.masked_paths = {"/proc/kcore", "/sys/firmware"};
  s.security.read_only_paths = {"/proc/sys"};
  if (edit) edit(s);
  return s;
}

// The steps every container has, around what the row changes.
std::vector<MountStep> Steps(bool privileged, bool read_only_root) {
  std::vector<MountStep> out = {
      {.kind = Kind::kRoot, .target = "/", .source = "/var/lib/kvol/agent/containers/u1/c"},
      {.kind = Kind::kMask, .target = "/var/lib/kvol"},
      {.kind = Kind::kMask, .target = "/etc/shadow"},
      {.kind = Kind::kProc, .target = "/proc"},
      {.kind = Kind::kDev, .target = "/dev", .source = privileged ? "/dev" : ""},
      {.kind = Kind::kTmp, .target = "/tmp", .read_only = read_only_root},
      {.kind = Kind::kSys, .target = "/sys", .read_only = !privileged},
  };
  if (!privileged) {
    out.push_back({.kind = Kind::kMask, .target = "/proc/kcore"});
    out.push_back({.kind = Kind::kMask, .target = "/sys/firmware"});
    out.push_back({.kind = Kind::kReadOnlyPath, .target = "/proc/sys"});
  }
  out.push_back({.kind = Kind::kBind,
                 .target = "/cache",
                 .source = "/var/lib/kvol/agent/pods/u1/volumes/kubernetes.io~empty-dir/cache"});
  out.push_back({.kind = Kind::kBind,
                 .target = "/etc/a",
                 .source = "/var/lib/kvol/agent/pods/u1/volumes/kubernetes.io~configmap/cfg/a",
                 .read_only = true,
                 .within = "/var/lib/kvol/agent/pods/u1/volumes/kubernetes.io~configmap/cfg"});
  if (read_only_root) out.push_back({.kind = Kind::kReadOnlyRoot, .target = "/"});
  return out;
}

TEST(PlanMounts, Table) {
  struct Case {
    std::string name;
    std::function<void(ContainerSpec&)> edit;
    std::vector<MountStep> want;
  };
  const std::vector<Case> cases = {
      {.name = "a confined container", .edit = {}, .want = Steps(false, false)},
      {.name = "privileged: the node's /dev, /sys writable, nothing masked",
       .edit =
           [](ContainerSpec& s) {
             s.security.privileged = true;
             s.security.masked_paths.clear();
             s.security.read_only_paths.clear();
           },
       .want = Steps(true, false)},
      {.name = "readOnlyRootFilesystem: /tmp and the root read-only, volumes as asked",
       .edit = [](ContainerSpec& s) { s.security.read_only_root = true; },
       .want = Steps(false, true)},
      {.name = "runAsUser and capabilities change no mount",
       .edit =
           [](ContainerSpec& s) {
             s.security.uid = 1000;
             s.security.capabilities = {0, 21};
           },
       .want = Steps(false, false)},
      {.name = "a data directory at / is not covered",
       .edit =
           [](ContainerSpec& s) {
             s.hidden_paths = {"/", "/var/lib/kvol", "/etc/shadow"};
           },
       .want = Steps(false, false)},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    const auto got = PlanMounts(Spec(tc.edit));
    ASSERT_EQ(got.size(), tc.want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(static_cast<int>(got[i].kind), static_cast<int>(tc.want[i].kind)) << i;
      EXPECT_EQ(got[i].target, tc.want[i].target) << i;
      EXPECT_EQ(got[i].source, tc.want[i].source) << i;
      EXPECT_EQ(got[i].read_only, tc.want[i].read_only) << i;
      EXPECT_EQ(got[i].within, tc.want[i].within) << i;
    }
  }
}

TEST(NodeSecretPaths, ShadowFilesAndRootsHome) {
  const auto paths = NodeSecretPaths();
  for (const char* p : {"/etc/shadow", "/etc/gshadow", "/root"}) {
    EXPECT_NE(std::find(paths.begin(), paths.end(), p), paths.end()) << p;
  }
  for (const auto& p : paths) {
    EXPECT_EQ(p.find(".pub"), std::string::npos) << "public host keys stay visible: " << p;
  }
}

// The spec survives the file the init reads it from.
TEST(ContainerSpec, JsonRoundTrip) {
  ContainerSpec s = Spec([](ContainerSpec& s) {
    s.security.capabilities = {0, 5, 21};
    s.security.uid = 1000;
    s.security.gid = 2000;
    s.security.supplemental_groups = {3000};
    s.security.seccomp = SeccompMode::kUnconfined;
    s.security.no_new_privs = false;
    s.security.read_only_root = true;
  });
  auto back = SpecFromJson(SpecToJson(s));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back->security == s.security);
  EXPECT_EQ(back->hidden_paths, s.hidden_paths);
  EXPECT_EQ(back->mounts.size(), s.mounts.size());
  EXPECT_EQ(SpecFromJson(R"({"bundleDir": 1})").status().code(), StatusCode::kInvalidArgument);
  // A spec written before security plans: the default plan.
  auto old = SpecFromJson(R"({"bundleDir": "/b", "hostname": "h", "argv": ["sh"], "env": [],
                              "workingDir": "", "logPath": "/l", "mounts": []})");
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_TRUE(old->security == SecurityPlan{});
}

}  // namespace
}  // namespace kvol::node::runtime
