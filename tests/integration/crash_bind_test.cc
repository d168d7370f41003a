// kill -9 of a real `kvol server` while 10,000 claims are binding and provisioning, twice, then
// a restart: every claim ends Bound to exactly one volume that names it back, no volume serves
// two claims, no claim got two volumes, and every directory the local-path provisioner made
// belongs to a volume.
//
// Usage: crash_bind_test KVOL_BINARY
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "client/testing/kvol_process.h"
#include "client/testing/parallel.h"

namespace kvol {
namespace {

using namespace std::chrono_literals;
using client::testing::KvolProcess;
namespace fs = std::filesystem;

std::string g_kvol;  // the binary under test

constexpr int kStatic = 5000;       // Available volumes, and claims that bind to them
constexpr int kProvisioned = 5000;  // claims of an Immediate local-path class

api::PersistentVolume StaticVolume(int i) {
  api::PersistentVolume pv;
  pv.metadata.name = "static-" + std::to_string(i);
  pv.spec.capacity["storage"] = api::Quantity::MustParse(std::to_string(1 + i % 4) + "Gi");
  pv.spec.access_modes = {"ReadWriteOnce"};
  pv.spec.storage_class_name = "static";
  pv.spec.persistent_volume_reclaim_policy = "Retain";
  pv.spec.host_path.emplace().path = "/srv/static-" + std::to_string(i);
  return pv;
}

api::PersistentVolumeClaim Claim(int i) {
  api::PersistentVolumeClaim c;
  c.metadata.namespace_ = "default";
  c.metadata.name = "claim-" + std::to_string(i);
  c.spec.access_modes = {"ReadWriteOnce"};
  c.spec.storage_class_name = i < kStatic ? "static" : "now";
  c.spec.resources.requests["storage"] = api::Quantity::MustParse(std::to_string(1 + i % 4) + "Gi");
  return c;
}

using client::testing::Parallel;

class CrashBindTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = client::testing::MakeTempDir("kvol-crash-bind");
    ASSERT_TRUE(d.ok());
    dir_ = *d;
  }
  void TearDown() override {
    server_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void StartServer() {
    auto p = KvolProcess::Start(g_kvol,
                                {"server", "--data-dir", dir_ + "/data", "--listen", "127.0.0.1:0",
                                 "--local-path-root", dir_ + "/storage", "--node-name", "crash-node"},
                                dir_ + "/server." + std::to_string(starts_++) + ".log", "kvol is ready");
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    server_ = *std::move(p);
    auto c = client::testing::ClientFromKubeconfig(dir_ + "/data/kubeconfig");
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = *std::move(c);
  }

  // Creates claims [from, n) with 16 writers; a claim that exists already (its create was
  // acknowledged before a crash, or not) is fine. Stops early once `stop` is set.
  void CreateClaims(int n, const std::atomic<bool>* stop = nullptr) {
    auto& claims = client_->resource<api::PersistentVolumeClaim>();
    Parallel(n, 16, [&](int i) {
      if (stop && *stop) return false;
      auto r = claims.Create(Claim(i));
      return r.ok() || api::IsAlreadyExists(r.error()) || (stop != nullptr);
    });
  }

  int BoundClaims() {
    auto l = client_->resource<api::PersistentVolumeClaim>().List("default");
    if (!l.ok()) return -1;
    int bound = 0;
    for (const auto& c : l->items) bound += c.status.phase == "Bound";
    return bound;
  }

  std::string dir_;
  int starts_ = 0;
  std::unique_ptr<KvolProcess> server_;
  std::unique_ptr<client::HttpClient> client_;
};

TEST_F(CrashBindTest, EveryClaimBoundOnceAfterKill9) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  api::StorageClass now;
  now.metadata.name = "now";
  now.provisioner = "kvol.io/local-path";
  now.volume_binding_mode = "Immediate";
  ASSERT_TRUE(client_->resource<api::StorageClass>().Create(now).ok());
  std::atomic<int> failed{0};
  Parallel(kStatic, 16, [&](int i) {
    if (!client_->resource<api::PersistentVolume>().Create(StaticVolume(i)).ok()) ++failed;
    return true;
  });
  ASSERT_EQ(failed, 0);

  // Claims arrive; the server dies while they are being bound and provisioned.
  std::atomic<bool> killed{false};
  std::thread killer([&] {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      int bound = BoundClaims();
      if (bound >= 2000) break;
      std::this_thread::sleep_for(100ms);
    }
    killed = true;
    const int bound = BoundClaims();
    server_->Kill9();
    std::printf("first kill -9 with %d of %d claims Bound\n", bound, kStatic + kProvisioned);
  });
  CreateClaims(kStatic + kProvisioned, &killed);
  killer.join();

  // Back up: the rest of the claims, and a second crash while it catches up.
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const int before_second = BoundClaims();
  CreateClaims(kStatic + kProvisioned);
  for (int i = 0; i < 100 && BoundClaims() < before_second + 1000; ++i) std::this_thread::sleep_for(100ms);
  const int at_second = BoundClaims();
  server_->Kill9();
  std::printf("second kill -9 with %d Bound\n", at_second);
  ASSERT_NO_FATAL_FAILURE(StartServer());

  const auto deadline = std::chrono::steady_clock::now() + 180s;
  int bound = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    bound = BoundClaims();
    if (bound == kStatic + kProvisioned) break;
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(bound, kStatic + kProvisioned) << "claims not Bound in time";

  auto claims = client_->resource<api::PersistentVolumeClaim>().List("default");
  auto volumes = client_->resource<api::PersistentVolume>().List("");
  ASSERT_TRUE(claims.ok() && volumes.ok());
  ASSERT_EQ(claims->items.size(), size_t{kStatic + kProvisioned});
  std::map<std::string, api::PersistentVolume> by_name;
  std::map<std::string, std::string> claim_of;  // "namespace/name" of the claimRef -> volume
  for (const auto& v : volumes->items) {
    by_name[v.metadata.name] = v;
    if (!v.spec.claim_ref) continue;
    const std::string key = v.spec.claim_ref->namespace_ + "/" + v.spec.claim_ref->name;
    EXPECT_TRUE(claim_of.emplace(key, v.metadata.name).second)
        << "two volumes name " << key << ": " << claim_of[key] << " and " << v.metadata.name;
  }
  // Exactly one volume per claim: the static ones, and one provisioned per provisioned claim.
  EXPECT_EQ(volumes->items.size(), size_t{kStatic + kProvisioned});
  std::set<std::string> used;
  for (const auto& c : claims->items) {
    const std::string& vol = c.spec.volume_name;
    ASSERT_FALSE(vol.empty()) << c.metadata.name;
    EXPECT_TRUE(used.insert(vol).second) << "two claims bound to " << vol;
    auto v = by_name.find(vol);
    ASSERT_NE(v, by_name.end()) << c.metadata.name << " is bound to a missing volume " << vol;
    ASSERT_TRUE(v->second.spec.claim_ref);
    EXPECT_EQ(v->second.spec.claim_ref->name, c.metadata.name);
    EXPECT_EQ(v->second.spec.claim_ref->uid, c.metadata.uid);
    EXPECT_EQ(v->second.status.phase, "Bound") << vol;
    if (c.spec.storage_class_name == "now") {
      EXPECT_EQ(vol, "pvc-" + c.metadata.uid);
    } else {
      EXPECT_EQ(vol.rfind("static-", 0), 0u) << vol;
    }
  }
  // Every directory made belongs to a provisioned volume.
  std::set<std::string> paths;
  for (const auto& [name, v] : by_name) {
    if (v.spec.host_path) paths.insert(v.spec.host_path->path);
  }
  int dirs = 0;
  for (const auto& e : fs::directory_iterator(dir_ + "/storage")) {
    ++dirs;
    EXPECT_TRUE(paths.count(e.path().string())) << "a directory without a volume: " << e.path();
  }
  EXPECT_EQ(dirs, kProvisioned);
}

}  // namespace
}  // namespace kvol

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: crash_bind_test KVOL_BINARY\n");
    return 2;
  }
  kvol::g_kvol = argv[1];
  return RUN_ALL_TESTS();
}
