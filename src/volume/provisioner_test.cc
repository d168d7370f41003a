#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "volume/local_path.h"
#include "volume/plugin.h"
#include "volume/subdir.h"
#include "volume/testing/temp_dir.h"

namespace kvol::volume {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

api::PersistentVolumeClaim Claim() {
  api::PersistentVolumeClaim c;
  c.metadata.namespace_ = "default";
  c.metadata.name = "data-web-0";
  c.metadata.uid = "1234";
  c.metadata.labels["app"] = "web";
  c.spec.access_modes = {"ReadWriteOnce"};
  c.spec.resources.requests["storage"] = api::Quantity::MustParse("1Gi");
  return c;
}

api::Node Node(std::string name) {
  api::Node n;
  n.metadata.name = name;
  n.metadata.labels["kubernetes.io/hostname"] = name;
  return n;
}

TEST(LocalPathTest, MakesADirectoryOnThisNodeWithAffinityToIt) {
  TempDir root;
  LocalPathProvisioner p({root.path() + "/storage", "here"});
  auto claim = Claim();
  api::StorageClass sc;
  api::Node node = Node("here");
  auto spec = p.Provision({"pvc-1234", &claim, &sc, &node});
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const std::string dir = root.path() + "/storage/pvc-1234_default_data-web-0";
  EXPECT_EQ(spec->host_path->path, dir);
  EXPECT_EQ(spec->host_path->type, "DirectoryOrCreate");
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_EQ(spec->capacity.at("storage").ToString(), "1Gi");
  EXPECT_EQ(spec->access_modes, claim.spec.access_modes);
  const auto& term =
      spec->node_affinity->required->node_selector_terms.at(0).match_expressions.at(0);
  EXPECT_EQ(term.key, "kubernetes.io/hostname");
  EXPECT_EQ(term.values, std::vector<std::string>{"here"});

  api::PersistentVolume pv;
  pv.spec = *spec;
  std::ofstream(dir + "/file") << "data";
  ASSERT_TRUE(p.Delete(pv, &sc).ok());
  EXPECT_FALSE(fs::exists(dir));
}

TEST(LocalPathTest, AnotherNodesDirectoryIsLeftToItsAgent) {
  TempDir root;
  LocalPathProvisioner p({root.path(), "here"});
  auto claim = Claim();
  api::StorageClass sc;
  api::Node node = Node("there");
  auto spec = p.Provision({"pvc-1234", &claim, &sc, &node});
  ASSERT_TRUE(spec.ok());
  EXPECT_FALSE(fs::exists(spec->host_path->path));
  api::PersistentVolume pv;
  pv.spec = *spec;
  auto s = p.Delete(pv, &sc);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_EQ(p.VolumeNode(pv), "there");
  // The PV controller asks first, and leaves a node whose agent runs local-path to that agent.
  EXPECT_TRUE(p.ServesNode(&node)) << "no agent of its own: made here, its directory on mount";
  node.metadata.annotations["kvol.io/local-path-root"] = "/var/lib/kvol/storage";
  EXPECT_FALSE(p.ServesNode(&node));
  api::Node here = Node("here");
  here.metadata.annotations["kvol.io/local-path-root"] = root.path();
  EXPECT_TRUE(p.ServesNode(&here));
  EXPECT_TRUE(p.ServesNode(nullptr)) << "a claim bound at once is made here";
}

TEST(LocalPathTest, RefusesWhatItCannotMakeOrShouldNotDelete) {
  TempDir root;
  LocalPathProvisioner p({root.path(), "here"});
  auto claim = Claim();
  claim.spec.volume_mode = "Block";
  api::StorageClass sc;
  EXPECT_EQ(p.Provision({"pvc-1", &claim, &sc, nullptr}).status().code(),
            StatusCode::kInvalidArgument);
  api::PersistentVolume pv;
  pv.spec.host_path.emplace().path = "/etc";
  EXPECT_EQ(p.Delete(pv, &sc).code(), StatusCode::kInvalidArgument);
  pv.spec.host_path->path = root.path() + "/../etc";
  EXPECT_EQ(p.Delete(pv, &sc).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(fs::exists("/etc"));
}

TEST(SubdirTest, DirectoryNamesAndPatterns) {
  auto claim = Claim();
  api::StorageClass sc;
  EXPECT_EQ(*SubdirProvisioner::DirectoryFor({"pvc-1234", &claim, &sc, nullptr}),
            "default-data-web-0-pvc-1234");
  sc.parameters["pathPattern"] = "${.PVC.namespace}/${.PVC.labels.app}/${.PVC.name}";
  EXPECT_EQ(*SubdirProvisioner::DirectoryFor({"pvc-1234", &claim, &sc, nullptr}),
            "default/web/data-web-0");
  sc.parameters["pathPattern"] = "../${.PVC.name}";
  EXPECT_FALSE(SubdirProvisioner::DirectoryFor({"pvc-1234", &claim, &sc, nullptr}).ok());
  sc.parameters["pathPattern"] = "${.PVC.uid}";
  EXPECT_FALSE(SubdirProvisioner::DirectoryFor({"pvc-1234", &claim, &sc, nullptr}).ok());
}

TEST(SubdirTest, HostPathOrNfsAndTheThreeWaysToDelete) {
  TempDir share;
  auto claim = Claim();
  api::StorageClass sc;
  SubdirProvisioner local({share.path(), "", ""});
  auto spec = local.Provision({"pvc-1", &claim, &sc, nullptr});
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const std::string dir = share.path() + "/default-data-web-0-pvc-1";
  EXPECT_EQ(spec->host_path->path, dir);
  EXPECT_TRUE(fs::is_directory(dir));
  api::PersistentVolume pv;
  pv.spec = *spec;

  // Default: archived.
  ASSERT_TRUE(local.Delete(pv, &sc).ok());
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_TRUE(fs::is_directory(share.path() + "/archived-default-data-web-0-pvc-1"));

  // archiveOnDelete=false: removed.
  ASSERT_TRUE(local.Provision({"pvc-1", &claim, &sc, nullptr}).ok());
  sc.parameters["archiveOnDelete"] = "false";
  ASSERT_TRUE(local.Delete(pv, &sc).ok());
  EXPECT_FALSE(fs::exists(dir));

  // onDelete=retain wins over archiveOnDelete.
  ASSERT_TRUE(local.Provision({"pvc-1", &claim, &sc, nullptr}).ok());
  sc.parameters["onDelete"] = "retain";
  ASSERT_TRUE(local.Delete(pv, &sc).ok());
  EXPECT_TRUE(fs::is_directory(dir));

  SubdirProvisioner nfs({share.path(), "192.168.3.103", "/mnt/nfs_share"});
  spec = nfs.Provision({"pvc-2", &claim, &sc, nullptr});
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->nfs->server, "192.168.3.103");
  EXPECT_EQ(spec->nfs->path, "/mnt/nfs_share/default-data-web-0-pvc-2");
  EXPECT_TRUE(fs::is_directory(share.path() + "/default-data-web-0-pvc-2"));
  pv.spec = *spec;
  sc.parameters = {{"onDelete", "delete"}};
  ASSERT_TRUE(nfs.Delete(pv, &sc).ok());
  EXPECT_FALSE(fs::exists(share.path() + "/default-data-web-0-pvc-2"));
}

// The controllers find their provisioners in the process's plugin manager, by the name a
// StorageClass gives.
TEST(PluginManagerTest, ProvisionersByTheirClassName) {
  TempDir root;
  PluginManager plugins;
  ASSERT_TRUE(plugins.RegisterProvisioner(
      std::make_unique<LocalPathProvisioner>(LocalPathOptions{root.path() + "/a", "here"})).ok());
  SubdirOptions so;
  so.share = root.path() + "/share";
  ASSERT_TRUE(plugins.RegisterProvisioner(std::make_unique<SubdirProvisioner>(so)).ok());
  auto again = plugins.RegisterProvisioner(
      std::make_unique<LocalPathProvisioner>(LocalPathOptions{root.path() + "/b", "here"}));
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(again.message(), "provisioner \"kvol.io/local-path\" was registered twice");
  ASSERT_NE(plugins.FindProvisioner("kvol.io/local-path"), nullptr);
  EXPECT_EQ(plugins.FindProvisioner("kvol.io/local-path")->name(), "kvol.io/local-path");
  ASSERT_NE(plugins.FindProvisioner("k8s-sigs.io/nfs-subdir-external-provisioner"), nullptr);
  EXPECT_EQ(plugins.FindProvisioner("kubernetes.io/no-provisioner"), nullptr);
  EXPECT_EQ(plugins.ProvisionerNames(),
            (std::vector<std::string>{"kvol.io/local-path", "k8s-sigs.io/nfs-subdir-external-provisioner"}));
  EXPECT_TRUE(plugins.Names().empty());  // no node plugins in a controller-only process
}

TEST(ScrubTest, EmptiesTheDirectoryKeepsItAndDoesNotFollowLinks) {
  TempDir dir, outside;
  std::ofstream(outside.path() + "/precious") << "keep";
  fs::create_directories(dir.path() + "/a/b");
  std::ofstream(dir.path() + "/a/b/f") << "x";
  std::ofstream(dir.path() + "/.hidden") << "x";
  fs::create_symlink(outside.path(), dir.path() + "/link");
  ASSERT_TRUE(ScrubDirectory(dir.path(), std::chrono::seconds(10)).ok());
  EXPECT_TRUE(fs::is_directory(dir.path()));
  EXPECT_TRUE(fs::is_empty(dir.path()));
  EXPECT_TRUE(fs::exists(outside.path() + "/precious"));
  EXPECT_EQ(ScrubDirectory(dir.path() + "/missing", std::chrono::seconds(1)).code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace kvol::volume
