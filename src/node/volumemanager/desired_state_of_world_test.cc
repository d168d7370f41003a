// The desired state of the world and the populator that fills it: each pod volume is resolved
// against the caches and matched to a plugin, or says why it cannot be set up yet.
#include "node/volumemanager/desired_state_of_world.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "node/volumemanager/populator.h"
#include "volume/plugins/csi/csi_plugin.h"
#include "volume/plugins/plugins.h"
#include "volume/testing/fake_host.h"
#include "volume/testing/temp_dir.h"

namespace kvol::node::volumemanager {
namespace {

DesiredPod PodNamed(const std::string& uid, bool missing_plugin = false) {
  DesiredPod dp;
  auto pod = std::make_shared<api::Pod>();
  pod->metadata.uid = uid;
  dp.pod = pod;
  dp.missing_plugin = missing_plugin;
  return dp;
}

TEST(DesiredStateOfWorld, EachPassReplacesWhatEveryPodNeeds) {
  DesiredStateOfWorld dsw;
  EXPECT_FALSE(dsw.Pod("a").has_value());
  dsw.Set({{"a", PodNamed("a")}, {"b", PodNamed("b", /*missing_plugin=*/true)}});
  EXPECT_EQ(dsw.Pod("a")->pod->metadata.uid, "a");
  EXPECT_EQ(dsw.Pods().size(), 2u);
  EXPECT_TRUE(dsw.AnyMissingPlugin());
  dsw.Set({{"a", PodNamed("a")}});
  EXPECT_FALSE(dsw.Pod("b").has_value()) << "a pod not populated any more is gone";
  EXPECT_FALSE(dsw.AnyMissingPlugin());
}

class PopulatorTest : public ::testing::Test {
 protected:
  PopulatorTest() : host_(tmp_.path() + "/agent") {
    for (auto& p : volume::plugins::InTreePlugins(host_)) {
      EXPECT_TRUE(plugins_.Register(std::move(p)).ok());
    }
    EXPECT_TRUE(plugins_.Register(volume::plugins::NewCsiPlugin(host_)).ok());
    lookups_.claim = [this](const std::string& ns, const std::string& name) {
      auto it = claims_.find(ns + "/" + name);
      return it == claims_.end() ? nullptr
                                 : std::make_shared<const api::PersistentVolumeClaim>(it->second);
    };
    lookups_.volume = [this](const std::string& name) {
      auto it = volumes_.find(name);
      return it == volumes_.end() ? nullptr
                                  : std::make_shared<const api::PersistentVolume>(it->second);
    };
    lookups_.config_map_version = [](const std::string&, const std::string& name) {
      return name == "settings" ? std::string("7") : std::string();
    };
    lookups_.secret_version = [](const std::string&, const std::string&) { return std::string(); };
  }

  // One line per volume: how it resolved.
  std::string Describe(const DesiredPod& dp) {
    std::string out;
    for (const auto& [key, v] : dp.volumes) {
      out += v.outer_name + ": " + key + " unique " + v.unique_name +
             (v.content_version.empty() ? "" : " content " + v.content_version) +
             (v.block ? " block" : "") + (v.attach ? " attach" : "") +
             (v.device_mount ? " device" : "") + "\n";
    }
    for (const auto& [name, why] : dp.unresolved) out += name + ": " + why + "\n";
    if (dp.missing_plugin) out += "missing plugin\n";
    return out;
  }

  volume::testing::TempDir tmp_;
  volume::testing::FakeHost host_;
  volume::PluginManager plugins_;
  Lookups lookups_;
  std::map<std::string, api::PersistentVolumeClaim> claims_;
  std::map<std::string, api::PersistentVolume> volumes_;
};

TEST_F(PopulatorTest, ResolvesEachVolumeOrSaysWhyNot) {
  struct Row {
    std::string name;
    api::Volume volume;
    // The caches: claim default/c and volume pv, as the row leaves them.
    std::function<void(api::PersistentVolumeClaim&, api::PersistentVolume&)> caches;
    std::string want;
  };
  api::Volume cache;
  cache.name = "cache";
  cache.empty_dir.emplace();
  api::Volume settings;
  settings.name = "settings";
  settings.config_map.emplace().name = "settings";
  api::Volume data;
  data.name = "data";
  data.persistent_volume_claim.emplace().claim_name = "c";
  api::Volume flex;
  flex.name = "flex";
  flex.flex_volume.emplace().driver = "example.com/none";
  const std::string src = tmp_.path() + "/disk";
  std::filesystem::create_directories(src);
  auto bound = [src](api::PersistentVolumeClaim& c, api::PersistentVolume& pv) {
    c.status.phase = "Bound";
    c.spec.volume_name = "pv";
    pv.spec.local.emplace().path = src;
    pv.spec.claim_ref.emplace().uid = c.metadata.uid;
  };
  const Row rows[] = {
      {.name = "an emptyDir",
       .volume = cache,
       .want = "cache: uid-a/kubernetes.io/empty-dir/cache unique kubernetes.io/empty-dir/cache\n"},
      {.name = "a configMap follows its source's version",
       .volume = settings,
       .want = "settings: uid-a/kubernetes.io/configmap/settings unique "
               "kubernetes.io/configmap/settings content cm:7;\n"},
      {.name = "a bound claim is its volume, named after the PV",
       .volume = data,
       .caches = bound,
       .want = "data: uid-a/kubernetes.io/local-volume/pv unique kubernetes.io/local-volume/pv\n"},
      {.name = "a claim not in the cache",
       .volume = data,
       .caches = [](auto& c, auto&) { c.metadata.name.clear(); },
       .want = "data: error processing PVC default/c: persistentvolumeclaim \"c\" not found\n"},
      {.name = "a claim not bound",
       .volume = data,
       .caches = [](auto& c, auto&) { c.status.phase = "Pending"; },
       .want = "data: error processing PVC default/c: PVC is not bound\n"},
      {.name = "a bound claim whose volume is not in the cache",
       .volume = data,
       .caches =
           [&](auto& c, auto& pv) {
             bound(c, pv);
             pv.metadata.name.clear();
           },
       .want = "data: error processing PVC default/c: persistentvolume \"pv\" not found\n"},
      {.name = "a volume bound to another claim",
       .volume = data,
       .caches =
           [&](auto& c, auto& pv) {
             bound(c, pv);
             pv.spec.claim_ref->uid = "another";
           },
       .want = "data: error processing PVC default/c: volume \"pv\" is not bound to this claim\n"},
      {.name = "a block volume of a plugin that maps no block devices",
       .volume = data,
       .caches =
           [&](auto& c, auto& pv) {
             bound(c, pv);
             pv.spec.local.reset();
             pv.spec.host_path.emplace().path = "/srv";
             pv.spec.volume_mode = "Block";
           },
       .want = "data: volume plugin kubernetes.io/host-path cannot give volume pv as a block "
               "device\n"},
      {.name = "a CSI block volume is attached and staged, then mapped",
       .volume = data,
       .caches =
           [&](auto& c, auto& pv) {
             bound(c, pv);
             pv.spec.local.reset();
             pv.spec.csi.emplace() = {.driver = "d.example.com", .volume_handle = "h"};
             pv.spec.volume_mode = "Block";
           },
       .want = "data: uid-a/kubernetes.io/csi/pv unique kubernetes.io/csi/pv block attach "
               "device\n"},
      {.name = "a kind no plugin serves yet",
       .volume = flex,
       .want = "flex: no volume plugin matched\nmissing plugin\n"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    claims_.clear();
    volumes_.clear();
    api::PersistentVolumeClaim c;
    c.metadata.namespace_ = "default";
    c.metadata.name = "c";
    c.metadata.uid = "claim-uid";
    api::PersistentVolume pv;
    pv.metadata.name = "pv";
    if (row.caches) row.caches(c, pv);
    if (!c.metadata.name.empty()) claims_["default/c"] = c;
    if (!pv.metadata.name.empty()) volumes_["pv"] = pv;
    auto pod = std::make_shared<api::Pod>();
    pod->metadata.namespace_ = "default";
    pod->metadata.uid = "uid-a";
    pod->spec.volumes = {row.volume};
    EXPECT_EQ(Describe(Populate(pod, lookups_, plugins_)), row.want);
  }
}

// A volume to be set up again at each resync (a CSI driver's requiresRepublish) has the resync
// count as its content version, so that each resync sets it up again.
TEST_F(PopulatorTest, RepublishedAtEachResync) {
  api::CSIDriver d;
  d.metadata.name = "d.example.com";
  d.spec.requires_republish = true;
  host_.PutCSIDriver(d);
  api::Volume v;
  v.name = "token";
  v.csi.emplace().driver = "d.example.com";
  auto pod = std::make_shared<api::Pod>();
  pod->metadata.namespace_ = "default";
  pod->metadata.uid = "uid-a";
  pod->spec.volumes = {v};
  EXPECT_EQ(Describe(Populate(pod, lookups_, plugins_, 7)),
            "token: uid-a/kubernetes.io/csi/token unique kubernetes.io/csi/token content "
            "resync:7\n");
  d.spec.requires_republish = false;
  host_.PutCSIDriver(d);
  EXPECT_EQ(Describe(Populate(pod, lookups_, plugins_, 8)),
            "token: uid-a/kubernetes.io/csi/token unique kubernetes.io/csi/token\n");
}

}  // namespace
}  // namespace kvol::node::volumemanager
