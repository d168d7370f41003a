#include "apiserver/service_account_admission.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "api/well_known.h"
#include "apiserver/api.h"
#include "os/testing/fake_clock.h"
#include "store/sqlite_store.h"

namespace kvol::apiserver {
namespace {

namespace fs = std::filesystem;

api::Container Container(std::string name, std::vector<std::string> mount_paths = {}) {
  api::Container c{.name = std::move(name), .image = "busybox"};
  for (auto& path : mount_paths) c.volume_mounts.push_back({.name = "own", .mount_path = path});
  return c;
}

// Each container as "name:volume@path,..." for the mounts at the token's path.
std::vector<std::string> TokenMounts(const api::Pod& pod) {
  std::vector<std::string> out;
  for (const auto* list : {&pod.spec.init_containers, &pod.spec.containers}) {
    for (const auto& c : *list) {
      std::string s = c.name + ":";
      for (const auto& m : c.volume_mounts) {
        if (m.mount_path == api::kServiceAccountTokenMountPath) {
          s += m.name + (m.read_only ? "(ro)" : "(rw)");
        }
      }
      out.push_back(s);
    }
  }
  return out;
}

std::vector<std::string> VolumeNames(const api::Pod& pod) {
  std::vector<std::string> out;
  for (const auto& v : pod.spec.volumes) out.push_back(v.name);
  return out;
}

TEST(ServiceAccountAdmissionTest, MountsTheTokenWhereNoMountIs) {
  const std::string kPath(api::kServiceAccountTokenMountPath);
  struct Row {
    std::string name;
    std::vector<api::Container> init_containers;
    std::vector<api::Container> containers;
    std::vector<std::string> volumes;  // the pod's own, by name (emptyDir)
    std::vector<std::string> want_mounts;
    std::vector<std::string> want_volumes;
  };
  const std::vector<Row> rows = {
      {.name = "every container mounts it",
       .init_containers = {Container("init")},
       .containers = {Container("a"), Container("b")},
       .want_mounts = {"init:kube-api-access-abcde(ro)", "a:kube-api-access-abcde(ro)",
                       "b:kube-api-access-abcde(ro)"},
       .want_volumes = {"kube-api-access-abcde"}},
      {.name = "a mount of its own at the path keeps it out of that container",
       .containers = {Container("a", {kPath}), Container("b")},
       .volumes = {"own"},
       .want_mounts = {"a:own(rw)", "b:kube-api-access-abcde(ro)"},
       .want_volumes = {"own", "kube-api-access-abcde"}},
      {.name = "no container needs it - no volume",
       .containers = {Container("a", {kPath})},
       .volumes = {"own"},
       .want_mounts = {"a:own(rw)"},
       .want_volumes = {"own"}},
      {.name = "a kube-api-access volume the pod has is the one mounted",
       .containers = {Container("a")},
       .volumes = {"kube-api-access-zzzzz"},
       .want_mounts = {"a:kube-api-access-zzzzz(ro)"},
       .want_volumes = {"kube-api-access-zzzzz"}},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    api::Pod pod;
    pod.spec.init_containers = row.init_containers;
    pod.spec.containers = row.containers;
    for (const auto& v : row.volumes) {
      api::Volume volume;
      volume.name = v;
      volume.empty_dir = api::EmptyDirVolumeSource{};
      pod.spec.volumes.push_back(volume);
    }
    MountServiceAccountToken(pod, "kube-api-access-abcde");
    EXPECT_EQ(TokenMounts(pod), row.want_mounts);
    EXPECT_EQ(VolumeNames(pod), row.want_volumes);
  }
}

TEST(ServiceAccountAdmissionTest, TheVolumeProjectsTokenCaAndNamespace) {
  api::Pod pod;
  pod.spec.containers = {Container("a")};
  MountServiceAccountToken(pod, "kube-api-access-abcde");
  ASSERT_EQ(pod.spec.volumes.size(), 1u);
  ASSERT_TRUE(pod.spec.volumes[0].projected);
  const auto& p = *pod.spec.volumes[0].projected;
  EXPECT_EQ(p.default_mode, 0644);
  ASSERT_EQ(p.sources.size(), 3u);
  ASSERT_TRUE(p.sources[0].service_account_token);
  EXPECT_EQ(p.sources[0].service_account_token->path, "token");
  EXPECT_EQ(p.sources[0].service_account_token->expiration_seconds, 3607);
  EXPECT_EQ(p.sources[0].service_account_token->audience, "");  // the API server's
  ASSERT_TRUE(p.sources[1].config_map);
  EXPECT_EQ(p.sources[1].config_map->name, "kube-root-ca.crt");
  ASSERT_EQ(p.sources[1].config_map->items.size(), 1u);
  EXPECT_EQ(p.sources[1].config_map->items[0].key, "ca.crt");
  EXPECT_EQ(p.sources[1].config_map->items[0].path, "ca.crt");
  ASSERT_TRUE(p.sources[2].downward_api);
  ASSERT_EQ(p.sources[2].downward_api->items.size(), 1u);
  EXPECT_EQ(p.sources[2].downward_api->items[0].path, "namespace");
  EXPECT_EQ(p.sources[2].downward_api->items[0].field_ref->field_path, "metadata.namespace");
}

TEST(ServiceAccountAdmissionTest, ShouldAutomount) {
  struct Row {
    std::string name;
    std::optional<bool> pod;
    std::optional<bool> account;
    bool want;
  };
  const std::vector<Row> rows = {
      {.name = "neither says - mounted", .want = true},
      {.name = "the account opts out", .account = false, .want = false},
      {.name = "the pod opts in over the account", .pod = true, .account = false, .want = true},
      {.name = "the pod opts out over the account", .pod = false, .account = true, .want = false},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    api::Pod pod;
    pod.spec.automount_service_account_token = row.pod;
    api::ServiceAccount account;
    if (row.account) account.unknown_fields["automountServiceAccountToken"] = *row.account;
    EXPECT_EQ(ShouldAutomount(account, pod), row.want);
  }
}

class ServiceAccountAdmissionApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kvol-sa-admission-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto s = store::OpenSqliteStore({.path = dir_ + "/kvol.db"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = *std::move(s);
    api_ = std::make_unique<Api>(*store_, clock_);
    ASSERT_TRUE(api_->Start().ok());
  }
  void TearDown() override {
    api_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }
  void Account(const std::string& name, std::optional<bool> automount = std::nullopt) {
    api::ServiceAccount sa;
    sa.metadata.name = name;
    if (automount) sa.unknown_fields["automountServiceAccountToken"] = *automount;
    auto made = api_->registry<api::ServiceAccount>().Create(sa, "default");
    ASSERT_TRUE(made.ok()) << made.error().message;
  }
  ApiOr<api::Pod> CreatePod(const std::string& name, const std::string& account = "") {
    api::Pod pod;
    pod.metadata.name = name;
    pod.spec.service_account_name = account;
    pod.spec.containers = {Container("c")};
    return api_->registry<api::Pod>().Create(pod, "default");
  }

  std::string dir_;
  os::testing::FakeClock clock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Api> api_;
};

TEST_F(ServiceAccountAdmissionApiTest, APodOfAMissingAccountIsForbidden) {
  auto got = CreatePod("p", "builder");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, 403);
  EXPECT_EQ(got.error().message,
            "pods \"p\" is forbidden: error looking up service account default/builder: "
            "serviceaccount \"builder\" not found");
  // The default account is looked for a while (the fake clock's waits end at once) first.
  got = CreatePod("q");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().message,
            "pods \"q\" is forbidden: error looking up service account default/default: "
            "serviceaccount \"default\" not found");
  EXPECT_FALSE(api_->registry<api::Pod>().Get("default", "p").ok());
}

TEST_F(ServiceAccountAdmissionApiTest, APodRunsAsDefaultWithItsTokenMounted) {
  Account("default");
  Account("quiet", false);
  auto got = CreatePod("p");
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->spec.service_account_name, "default");
  ASSERT_EQ(got->spec.volumes.size(), 1u);
  const std::string volume = got->spec.volumes[0].name;
  EXPECT_TRUE(volume.starts_with("kube-api-access-")) << volume;
  EXPECT_EQ(volume.size(), std::string("kube-api-access-").size() + 5);
  EXPECT_EQ(TokenMounts(*got), std::vector<std::string>{"c:" + volume + "(ro)"});

  // An account that opts out: nothing mounted.
  got = CreatePod("q", "quiet");
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_TRUE(got->spec.volumes.empty());
  EXPECT_TRUE(got->spec.containers[0].volume_mounts.empty());
}

}  // namespace
}  // namespace kvol::apiserver
