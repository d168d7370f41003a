// The fixture of the volume manager's tests: the volume manager against fakes, wired to the
// agent's status writer as the agent wires them. Plugins run on a FakeHost (FakeMounter, temp
// directories), pod status goes through FakeClient, the caches are maps the test edits, and time
// is a FakeClock. AttachTest adds an attachable FlexVolume driver.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "api/well_known.h"
#include "client/testing/eventually.h"
#include "client/testing/fake_client.h"
#include "node/volume_status.h"
#include "node/volumemanager/volume_manager.h"
#include "volume/plugins/plugins.h"
#include "volume/testing/fake_host.h"
#include "volume/testing/temp_dir.h"

namespace kvol::node::volumemanager {

namespace fs = std::filesystem;
namespace plugins = volume::plugins;
using namespace std::chrono_literals;

inline std::string Read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class VolumeManagerTest : public ::testing::Test {
 protected:
  VolumeManagerTest() : host_(tmp_.path() + "/agent") {
    for (auto& p : plugins::InTreePlugins(host_)) EXPECT_TRUE(plugins_.Register(std::move(p)).ok());
  }
  ~VolumeManagerTest() override {
    if (vm_) vm_->Stop();
  }

  // The volume manager, with the agent's status writer reporting it on the pods as the agent
  // wires them.
  void StartManager(Options o = {}, std::chrono::milliseconds mount_timeout = 123s) {
    auto events = [this](const api::ObjectReference& ref, std::string_view type,
                         std::string_view reason, std::string msg) {
      std::lock_guard lock(mu_);
      events_.push_back(ref.name + " " + std::string(type) + " " + std::string(reason) + " " + msg);
    };
    status_ = std::make_unique<VolumeStatusWriter>(
        api_, events, clock_,
        VolumeStatusOptions{.host_ip = "10.0.0.7", .mount_timeout = mount_timeout});
    o.on_reconciled = [this](const std::vector<PodVolumesState>& pods) {
      return status_->Report(pods);
    };
    o.finish_resize = [this](const DesiredVolume::FsResize& r) {
      return status_->FinishClaimResize(r);
    };
    o.root_dir = host_.root();
    Sources s;
    s.pods = [this] {
      std::lock_guard lock(mu_);
      std::vector<std::shared_ptr<const api::Pod>> out;
      for (const auto& [k, p] : pods_) out.push_back(std::make_shared<const api::Pod>(p));
      return out;
    };
    s.lookups.claim = [this](const std::string& ns, const std::string& name) {
      std::lock_guard lock(mu_);
      auto it = claims_.find(ns + "/" + name);
      return it == claims_.end() ? nullptr
                                 : std::make_shared<const api::PersistentVolumeClaim>(it->second);
    };
    s.lookups.volume = [this](const std::string& name) {
      std::lock_guard lock(mu_);
      auto it = volumes_.find(name);
      return it == volumes_.end() ? nullptr
                                  : std::make_shared<const api::PersistentVolume>(it->second);
    };
    s.lookups.config_map_version = [this](const std::string& ns, const std::string& name) {
      std::lock_guard lock(mu_);
      auto it = cm_versions_.find(ns + "/" + name);
      return it == cm_versions_.end() ? std::string() : it->second;
    };
    s.lookups.secret_version = [](const std::string&, const std::string&) { return std::string(); };
    o.on_volumes_in_use = [this](std::vector<std::string> names) {
      std::lock_guard lock(mu_);
      in_use_ = std::move(names);
    };
    vm_ = std::make_unique<VolumeManager>(host_, plugins_, std::move(s), events, clock_, o);
    ASSERT_TRUE(vm_->Start().ok());
  }

  void PutPod(api::Pod p) {
    if (p.metadata.namespace_.empty()) p.metadata.namespace_ = "default";
    if (p.metadata.uid.empty()) p.metadata.uid = "uid-" + p.metadata.name;
    p.spec.node_name = "node-1";
    api_.fake<api::Pod>().Seed(p);
    {
      std::lock_guard lock(mu_);
      pods_[p.metadata.name] = p;
    }
    if (vm_) vm_->Kick();
  }
  void RemovePod(const std::string& name) {
    {
      std::lock_guard lock(mu_);
      pods_.erase(name);
    }
    vm_->Kick();
  }
  void PutConfigMap(const std::string& name, const std::string& value, const std::string& rv) {
    api::ConfigMap cm;
    cm.metadata.namespace_ = "default";
    cm.metadata.name = name;
    cm.metadata.resource_version = rv;
    cm.data = {{"log_level", value}};
    host_.PutConfigMap(cm);
    {
      std::lock_guard lock(mu_);
      cm_versions_["default/" + name] = rv;
    }
    if (vm_) vm_->Kick();
  }
  // A local PV at `path` and the claim default/`claim` Bound to it, as the caches show them.
  void BoundLocalClaim(const std::string& claim, const std::string& pv_name,
                       const std::string& path, const std::string& mode = "Filesystem") {
    api::PersistentVolume pv;
    pv.metadata.name = pv_name;
    pv.spec.local.emplace().path = path;
    pv.spec.volume_mode = mode;
    BindClaim(claim, std::move(pv));
  }
  // `pv` and the claim default/`claim` Bound to it, as the caches show them.
  void BindClaim(const std::string& claim, api::PersistentVolume pv) {
    std::lock_guard lock(mu_);
    pv.spec.claim_ref.emplace().uid = "uid-" + claim;
    api::PersistentVolumeClaim c;
    c.metadata.uid = "uid-" + claim;
    c.spec.volume_name = pv.metadata.name;
    c.status.phase = "Bound";
    claims_["default/" + claim] = c;
    volumes_[pv.metadata.name] = std::move(pv);
  }
  api::Pod StoredPod(const std::string& name) {
    return api_.fake<api::Pod>().Objects().at("default/" + name);
  }
  std::string VolumesReady(const std::string& name) {
    for (const auto& c : StoredPod(name).status.conditions) {
      if (c.type == api::kPodVolumesReady) return c.status;
    }
    return "";
  }
  std::vector<std::string> Events() {
    std::lock_guard lock(mu_);
    return events_;
  }
  bool HasEvent(const std::string& e) {
    auto ev = Events();
    return std::find(ev.begin(), ev.end(), e) != ev.end();
  }
  std::string Dir(const std::string& pod, std::string_view plugin, const std::string& name) {
    return host_.PodVolumeDir("uid-" + pod, plugin, name);
  }
  static api::Pod PodWith(const std::string& name, std::vector<api::Volume> volumes) {
    api::Pod p;
    p.metadata.name = name;
    p.spec.volumes = std::move(volumes);
    api::Container c;
    c.name = "busybox";
    c.image = "busybox";
    p.spec.containers.push_back(c);
    return p;
  }
  static api::Volume EmptyDir(const std::string& name, const std::string& medium = "") {
    api::Volume v;
    v.name = name;
    v.empty_dir.emplace().medium = medium;
    return v;
  }
  static api::Volume ConfigMapVolume(const std::string& name, const std::string& cm) {
    api::Volume v;
    v.name = name;
    v.config_map.emplace().name = cm;
    return v;
  }
  static api::Volume ClaimVolume(const std::string& name, const std::string& claim) {
    api::Volume v;
    v.name = name;
    v.persistent_volume_claim.emplace().claim_name = claim;
    return v;
  }

  volume::testing::TempDir tmp_;
  volume::testing::FakeHost host_;
  volume::PluginManager plugins_;
  client::testing::FakeClient api_;
  os::testing::FakeClock clock_;
  std::mutex mu_;
  std::map<std::string, api::Pod> pods_;
  std::map<std::string, api::PersistentVolumeClaim> claims_;
  std::map<std::string, api::PersistentVolume> volumes_;
  std::map<std::string, std::string> cm_versions_;
  std::vector<std::string> events_;
  std::vector<std::string> in_use_;
  std::unique_ptr<VolumeStatusWriter> status_;
  std::unique_ptr<VolumeManager> vm_;
};

class AttachTest : public VolumeManagerTest {
 protected:
  static constexpr char kPlugin[] = "flexvolume-kvol.io/disk";

  AttachTest() {
    const std::string dir = tmp_.path() + "/exec";
    executable_ = dir + "/kvol.io~disk/disk";
    fs::create_directories(fs::path(executable_).parent_path());
    std::ofstream(executable_) << "#!/bin/sh\n";
    chmod(executable_.c_str(), 0755);
    host_.fake_exec().On(executable_,
                         [this](const std::vector<std::string>& argv) { return Driver(argv); });
    plugins::FlexVolumeOptions fo;
    fo.dir = dir;
    for (auto& p : plugins::FlexVolumeProber(host_, fo)()) {
      EXPECT_TRUE(plugins_.Register(std::move(p)).ok());
    }
  }

  StatusOr<os::ExecResult> Driver(const std::vector<std::string>& argv) {
    const std::string& cmd = argv.at(1);
    std::lock_guard lock(driver_mu_);
    driver_calls_.push_back(cmd + (cmd == "detach" ? " " + argv.at(2) : ""));
    auto reply = [](const std::string& json) { return os::ExecResult{0, json}; };
    if (cmd == "init") return reply(R"({"status": "Success", "capabilities": {"attach": true}})");
    if (cmd == "attach") {
      if (!attach_error_.empty()) {
        return reply(R"({"status": "Failure", "message": ")" + attach_error_ + "\"}");
      }
      const std::string id = api::Json::parse(argv.at(2)).at("volumeID");
      return reply(R"({"status": "Success", "device": "/dev/fake-)" + id + "\"}");
    }
    if (cmd == "mountdevice") {
      EXPECT_TRUE(host_.fake_mounter().Mount(argv.at(3), argv.at(2), "ext4", {}).ok());
      return reply(R"({"status": "Success"})");
    }
    if (cmd == "detach" || cmd == "expandfs") return reply(R"({"status": "Success"})");
    return reply(R"({"status": "Not supported"})");
  }
  std::vector<std::string> DriverCalls() {
    std::lock_guard lock(driver_mu_);
    return driver_calls_;
  }
  void SetAttachError(std::string e) {
    std::lock_guard lock(driver_mu_);
    attach_error_ = std::move(e);
  }
  // A FlexVolume PV `pv_name` of volume `id`, and the claim default/`claim` Bound to it.
  void BoundFlexClaim(const std::string& claim, const std::string& pv_name, const std::string& id) {
    api::PersistentVolume pv;
    pv.metadata.name = pv_name;
    auto& f = pv.spec.flex_volume.emplace();
    f.driver = "kvol.io/disk";
    f.options = {{"volumeID", id}};
    BindClaim(claim, std::move(pv));
  }
  std::string Record(const std::string& pv_name) {
    return host_.root() + "/plugins/" + kPlugin + "/attachments/" + pv_name;
  }
  size_t IndexOf(const std::string& call) {
    auto calls = DriverCalls();
    return std::find(calls.begin(), calls.end(), call) - calls.begin();
  }

  std::string executable_;
  std::mutex driver_mu_;
  std::vector<std::string> driver_calls_;      // guarded by driver_mu_
  std::string attach_error_;                   // guarded by driver_mu_
  std::vector<api::AttachedVolume> attached_;  // guarded by mu_
};

}  // namespace kvol::node::volumemanager
