// The in-tree plugins against a FakeHost: what each SetUp makes or mounts, what TearDown
// removes, and the messages of failures.
#include "volume/plugins/plugins.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/strings.h"
#include "volume/testing/fake_host.h"
#include "volume/testing/temp_dir.h"

namespace kvol::volume::plugins {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class PluginsTest : public ::testing::Test {
 protected:
  PluginsTest() : host_(tmp_.path() + "/agent") {
    for (auto& p : InTreePlugins(host_)) EXPECT_TRUE(manager_.Register(std::move(p)).ok());
    pod_.metadata.name = "p";
    pod_.metadata.namespace_ = "default";
    pod_.metadata.uid = "uid-1";
    pod_.metadata.labels = {{"app", "web"}};
  }

  // SetUp through whichever plugin supports `spec`; the mounter for more checks.
  StatusOr<std::unique_ptr<Mounter>> SetUp(const Spec& spec) {
    KVOL_ASSIGN_OR_RETURN(VolumePlugin * plugin, manager_.FindBySpec(spec));
    KVOL_ASSIGN_OR_RETURN(auto m, plugin->NewMounter(spec, pod_));
    KVOL_RETURN_IF_ERROR(m->SetUp());
    return m;
  }
  Status TearDown(std::string_view plugin, std::string_view name) {
    KVOL_ASSIGN_OR_RETURN(auto u,
                          manager_.FindByName(plugin)->NewUnmounter(name, pod_.metadata.uid));
    return u->TearDown();
  }
  static Spec PodVolume(api::Volume v) {
    Spec s;
    s.volume = std::move(v);
    return s;
  }
  static Spec PvVolume(api::PersistentVolume pv, bool read_only = false) {
    Spec s;
    s.volume.name = "data";
    s.volume.persistent_volume_claim.emplace().claim_name = "claim";
    s.pv = std::move(pv);
    s.read_only = read_only;
    return s;
  }
  std::string Dir(std::string_view plugin, std::string_view name) const {
    return host_.PodVolumeDir(pod_.metadata.uid, plugin, name);
  }

  testing::TempDir tmp_;
  testing::FakeHost host_;
  PluginManager manager_;
  api::Pod pod_;
};

TEST_F(PluginsTest, ManagerFindsExactlyOnePlugin) {
  EXPECT_EQ(manager_.Names().size(), 8u);
  api::Volume v;
  v.name = "x";
  EXPECT_EQ(manager_.FindBySpec(PodVolume(v)).status().code(), StatusCode::kNotFound);
  v.empty_dir.emplace();
  EXPECT_EQ((*manager_.FindBySpec(PodVolume(v)))->Name(), kEmptyDir);
  v.host_path.emplace().path = "/tmp";
  EXPECT_EQ(manager_.FindBySpec(PodVolume(v)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(manager_.Register(NewNfsPlugin(host_)).ok());
}

TEST_F(PluginsTest, EmptyDirOnDiskLivesAndDiesWithThePod) {
  api::Volume v;
  v.name = "cache";
  v.empty_dir.emplace();
  auto m = SetUp(PodVolume(v));
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::string dir = Dir(kEmptyDir, "cache");
  EXPECT_EQ((*m)->GetPath(), dir);
  EXPECT_EQ(dir, host_.root() + "/pods/uid-1/volumes/kubernetes.io~empty-dir/cache");
  struct stat st;
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0777u);
  std::ofstream(dir + "/abc.txt") << "x";
  EXPECT_TRUE(host_.fake_mounter().calls().empty());
  ASSERT_TRUE(TearDown(kEmptyDir, "cache").ok());
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_TRUE(TearDown(kEmptyDir, "cache").ok()) << "tearing down twice is fine";
}

TEST_F(PluginsTest, EmptyDirInMemoryIsASizedTmpfs) {
  api::Volume v;
  v.name = "shm";
  v.empty_dir.emplace().medium = "Memory";
  v.empty_dir->size_limit = api::Quantity::MustParse("64Mi");
  ASSERT_TRUE(SetUp(PodVolume(v)).ok());
  auto calls = host_.fake_mounter().calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].type, "tmpfs");
  EXPECT_EQ(calls[0].target, Dir(kEmptyDir, "shm"));
  EXPECT_EQ(calls[0].options, (std::vector<std::string>{"size=67108864"}));
  ASSERT_TRUE(SetUp(PodVolume(v)).ok());
  EXPECT_EQ(host_.fake_mounter().calls().size(), 1u) << "a second SetUp does not mount again";
  ASSERT_TRUE(TearDown(kEmptyDir, "shm").ok());
  EXPECT_FALSE(*host_.fake_mounter().IsMountPoint(Dir(kEmptyDir, "shm")));
  EXPECT_FALSE(fs::exists(Dir(kEmptyDir, "shm")));
}

TEST_F(PluginsTest, TearDownNeverDeletesThroughAMount) {
  api::Volume v;
  v.name = "cache";
  v.empty_dir.emplace();
  ASSERT_TRUE(SetUp(PodVolume(v)).ok());
  const std::string below = Dir(kEmptyDir, "cache") + "/sub";
  fs::create_directory(below);
  std::ofstream(below + "/precious") << "data";
  os::MountPoint m;
  m.path = below;
  m.type = "ext4";
  host_.fake_mounter().AddMountForTest(m);
  Status s = TearDown(kEmptyDir, "cache");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.message();
  EXPECT_TRUE(fs::exists(below + "/precious"));
}

TEST_F(PluginsTest, HostPathTypeTable) {
  const std::string base = tmp_.path() + "/node";
  fs::create_directories(base + "/dir");
  std::ofstream(base + "/file") << "f";
  int sock = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock_path = base + "/sock";
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock_path.c_str());
  ASSERT_EQ(bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);

  struct Row {
    std::string path, type, error;  // error "" = success
  };
  std::vector<Row> rows = {
      {base + "/dir", "", ""},
      {base + "/nothing", "", ""},
      {base + "/dir", "Directory", ""},
      {base + "/file", "Directory",
       "hostPath type check failed: " + base + "/file is not a directory"},
      {base + "/absent", "Directory",
       "hostPath type check failed: " + base + "/absent is not a directory"},
      {base + "/made/deep", "DirectoryOrCreate", ""},
      {base + "/file", "DirectoryOrCreate",
       "hostPath type check failed: " + base + "/file is not a directory"},
      {base + "/file", "File", ""},
      {base + "/dir", "File", "hostPath type check failed: " + base + "/dir is not a file"},
      {base + "/new-file", "FileOrCreate", ""},
      {base + "/dir", "FileOrCreate", "hostPath type check failed: " + base + "/dir is not a file"},
      {sock_path, "Socket", ""},
      {base + "/file", "Socket",
       "hostPath type check failed: " + base + "/file is not a socket file"},
      {"/dev/null", "CharDevice", ""},
      {base + "/file", "CharDevice",
       "hostPath type check failed: " + base + "/file is not a character device"},
      {"/dev/null", "BlockDevice", "hostPath type check failed: /dev/null is not a block device"},
  };
  for (const auto& row : rows) {
    api::Volume v;
    v.name = "h";
    v.host_path.emplace().path = row.path;
    if (!row.type.empty()) v.host_path->type = row.type;
    auto m = SetUp(PodVolume(v));
    if (row.error.empty()) {
      EXPECT_TRUE(m.ok()) << row.path << " " << row.type << ": " << m.status().message();
      if (m.ok()) {
        EXPECT_EQ((*m)->GetPath(), row.path);
      }
    } else {
      EXPECT_EQ(m.status().message(), row.error) << row.type;
    }
  }
  close(sock);
  struct stat st;
  ASSERT_EQ(stat((base + "/made/deep").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  ASSERT_EQ(stat((base + "/new-file").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_TRUE(host_.fake_mounter().calls().empty());
  EXPECT_TRUE(TearDown(kHostPath, "h").ok());
  EXPECT_TRUE(fs::exists(base + "/dir")) << "the node's path stays";
}

TEST_F(PluginsTest, LocalVolumeIsABindMountNamedAfterThePv) {
  const std::string src = tmp_.path() + "/disks/vol1";
  fs::create_directories(src);
  api::PersistentVolume pv;
  pv.metadata.name = "nginx-pv";
  pv.spec.local.emplace().path = src;
  pv.spec.mount_options = {"noatime"};
  auto m = SetUp(PvVolume(pv, true));
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE((*m)->ReadOnly());
  const std::string dir = Dir(kLocal, "nginx-pv");
  EXPECT_EQ((*m)->GetPath(), dir);
  auto calls = host_.fake_mounter().calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].source, src);
  EXPECT_EQ(calls[0].target, dir);
  EXPECT_EQ(calls[0].options, (std::vector<std::string>{"bind", "ro", "noatime"}));
  ASSERT_TRUE(TearDown(kLocal, "nginx-pv").ok());
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_TRUE(fs::exists(src));

  pv.spec.local->path = tmp_.path() + "/disks/missing";
  EXPECT_EQ(SetUp(PvVolume(pv)).status().message(),
            "path \"" + pv.spec.local->path + "\" does not exist");
  pv.spec.volume_mode = "Block";
  EXPECT_EQ(SetUp(PvVolume(pv)).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(PluginsTest, NfsMountsServerPathAndCleansUpAfterFailure) {
  api::Volume v;
  v.name = "data";
  v.nfs.emplace();
  v.nfs->server = "192.168.3.103";
  v.nfs->path = "/mnt/nfs_share";
  v.nfs->read_only = true;
  ASSERT_TRUE(SetUp(PodVolume(v)).ok());
  auto calls = host_.fake_mounter().calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].source, "192.168.3.103:/mnt/nfs_share");
  EXPECT_EQ(calls[0].type, "nfs");
  EXPECT_EQ(calls[0].options, (std::vector<std::string>{"ro"}));
  ASSERT_TRUE(TearDown(kNfs, "data").ok());

  const std::string dir = Dir(kNfs, "data");
  host_.fake_mounter().FailMountAt(dir, InternalError("mount failed: exit status 32"));
  auto failed = SetUp(PodVolume(v));
  EXPECT_EQ(failed.status().message(), "mount failed: exit status 32");
  EXPECT_FALSE(fs::exists(dir)) << "no half-made directory is left";

  api::PersistentVolume pv;
  pv.metadata.name = "nfs-pv";
  pv.spec.nfs.emplace();
  pv.spec.nfs->server = "fd00::1";
  pv.spec.nfs->path = "/export";
  pv.spec.mount_options = {"nfsvers=4.1", "hard"};
  host_.fake_mounter().ClearCalls();
  ASSERT_TRUE(SetUp(PvVolume(pv)).ok());
  calls = host_.fake_mounter().calls();
  EXPECT_EQ(calls[0].source, "[fd00::1]:/export");
  EXPECT_EQ(calls[0].target, Dir(kNfs, "nfs-pv"));
  EXPECT_EQ(calls[0].options, (std::vector<std::string>{"nfsvers=4.1", "hard"}));
}

TEST_F(PluginsTest, ConfigMapFilesFollowTheConfigMap) {
  api::ConfigMap cm;
  cm.metadata.namespace_ = "default";
  cm.metadata.name = "log-config";
  cm.data = {{"log_level", "INFO"}, {"ui.properties", "color.good=purple\n"}};
  host_.PutConfigMap(cm);
  api::Volume v;
  v.name = "config-vol";
  v.config_map.emplace().name = "log-config";
  v.config_map->items = {{"log_level", "log_level", std::nullopt},
                         {"ui.properties", "ui.properties", std::nullopt}};
  auto m = SetUp(PodVolume(v));
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE((*m)->ReadOnly());
  const fs::path dir = Dir(kConfigMap, "config-vol");
  EXPECT_EQ(fs::read_symlink(dir / "log_level").string(), "..data/log_level");
  EXPECT_EQ(Read(dir / "log_level"), "INFO");

  cm.data["log_level"] = "DEBUG";
  host_.PutConfigMap(cm);
  ASSERT_TRUE((*m)->SetUp().ok());
  EXPECT_EQ(Read(dir / "log_level"), "DEBUG");

  v.config_map->name = "absent";
  v.name = "other";
  EXPECT_EQ(SetUp(PodVolume(v)).status().message(), "configmap \"absent\" not found");
  EXPECT_FALSE(fs::exists(Dir(kConfigMap, "other"))) << "nothing that looks ready";
  v.config_map->optional = true;
  ASSERT_TRUE(SetUp(PodVolume(v)).ok());
  EXPECT_TRUE(fs::exists(fs::path(Dir(kConfigMap, "other")) / "..data"));

  ASSERT_TRUE(TearDown(kConfigMap, "config-vol").ok());
  EXPECT_FALSE(fs::exists(dir));
}

TEST_F(PluginsTest, SecretFilesSitOnATmpfs) {
  api::Secret s;
  s.metadata.namespace_ = "default";
  s.metadata.name = "creds";
  s.data = {{"password", Base64Encode("s3cr3t")}};
  host_.PutSecret(s);
  api::Volume v;
  v.name = "creds";
  v.secret.emplace().secret_name = "creds";
  v.secret->default_mode = 0400;
  ASSERT_TRUE(SetUp(PodVolume(v)).ok());
  const std::string dir = Dir(kSecret, "creds");
  auto calls = host_.fake_mounter().calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].type, "tmpfs");
  EXPECT_EQ(calls[0].target, dir);
  EXPECT_EQ(Read(dir + "/password"), "s3cr3t");
  struct stat st;
  ASSERT_EQ(stat((dir + "/password").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0400u);
  ASSERT_TRUE(TearDown(kSecret, "creds").ok());
  EXPECT_FALSE(*host_.fake_mounter().IsMountPoint(dir));
  EXPECT_FALSE(fs::exists(dir));
}

TEST_F(PluginsTest, DownwardApiAndProjectedFollowThePod) {
  api::Volume v;
  v.name = "podinfo";
  auto& items = v.downward_api.emplace().items;
  items.push_back(
      {"labels", api::ObjectFieldSelector{"", "metadata.labels"}, std::nullopt, std::nullopt});
  items.push_back(
      {"name", api::ObjectFieldSelector{"", "metadata.name"}, std::nullopt, std::nullopt});
  ASSERT_TRUE(SetUp(PodVolume(v)).ok());
  const fs::path dir = Dir(kDownwardApi, "podinfo");
  EXPECT_EQ(Read(dir / "labels"), "app=\"web\"");
  EXPECT_EQ(Read(dir / "name"), "p");
  pod_.metadata.labels["tier"] = "front";
  ASSERT_TRUE(SetUp(PodVolume(v)).ok());
  EXPECT_EQ(Read(dir / "labels"), "app=\"web\"\ntier=\"front\"");

  api::ConfigMap cm;
  cm.metadata.namespace_ = "default";
  cm.metadata.name = "cfg";
  cm.data = {{"k", "v"}};
  host_.PutConfigMap(cm);
  api::Volume p;
  p.name = "all-in-one";
  auto& proj = p.projected.emplace();
  proj.sources.emplace_back().config_map.emplace().name = "cfg";
  proj.sources.emplace_back().downward_api.emplace().items = items;
  ASSERT_TRUE(SetUp(PodVolume(p)).ok());
  const fs::path pdir = Dir(kProjected, "all-in-one");
  EXPECT_EQ(Read(pdir / "k"), "v");
  EXPECT_EQ(Read(pdir / "name"), "p");
  EXPECT_EQ(host_.fake_mounter().calls().back().type, "tmpfs");
}

}  // namespace
}  // namespace kvol::volume::plugins
