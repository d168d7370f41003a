// A plugin Host for unit tests: pod directories under a temporary root, a FakeMounter, a
// FakeExec, a FakeClock, and ConfigMaps/Secrets from maps the test fills.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "os/testing/fake_clock.h"
#include "os/testing/fake_exec.h"
#include "os/testing/fake_mounter.h"
#include "volume/plugin.h"

namespace kvol::volume::testing {

class FakeHost final : public Host {
 public:
  explicit FakeHost(std::string root) : root_(std::move(root)) {}

  std::string PodVolumeDir(std::string_view pod_uid, std::string_view plugin,
                           std::string_view volume) const override {
    return layout::PodVolumeDir(root_, pod_uid, plugin, volume);
  }
  std::string PodDeviceDir(std::string_view pod_uid, std::string_view plugin,
                           std::string_view volume) const override {
    return layout::PodDeviceDir(root_, pod_uid, plugin, volume);
  }
  std::string PluginDir(std::string_view plugin) const override {
    return layout::PluginDir(root_, plugin);
  }
  os::Mounter& mounter() override { return mounter_; }
  os::Exec& exec() override { return exec_; }
  const os::Clock& clock() const override { return clock_; }
  std::string NodeName() const override { return "node-1"; }
  StatusOr<api::ConfigMap> GetConfigMap(std::string_view ns, std::string_view name) override {
    std::lock_guard lock(mu_);
    auto it = config_maps_.find(std::string(ns) + "/" + std::string(name));
    if (it == config_maps_.end())
      return NotFoundError("configmap \"" + std::string(name) + "\" not found");
    return it->second;
  }
  StatusOr<api::Secret> GetSecret(std::string_view ns, std::string_view name) override {
    std::lock_guard lock(mu_);
    auto it = secrets_.find(std::string(ns) + "/" + std::string(name));
    if (it == secrets_.end())
      return NotFoundError("secret \"" + std::string(name) + "\" not found");
    return it->second;
  }
  api::ResourceList NodeAllocatable() const override {
    return {{"cpu", api::Quantity::MustParse("2")}, {"memory", api::Quantity::MustParse("24Gi")}};
  }

  void PutConfigMap(api::ConfigMap cm) {
    std::lock_guard lock(mu_);
    config_maps_[cm.metadata.namespace_ + "/" + cm.metadata.name] = std::move(cm);
  }
  void PutSecret(api::Secret s) {
    std::lock_guard lock(mu_);
    secrets_[s.metadata.namespace_ + "/" + s.metadata.name] = std::move(s);
  }
  os::testing::FakeMounter& fake_mounter() { return mounter_; }
  os::testing::FakeExec& fake_exec() { return exec_; }
  os::testing::FakeClock& fake_clock() { return clock_; }
  const std::string& root() const { return root_; }

 private:
  const std::string root_;
  os::testing::FakeMounter mounter_;
  os::testing::FakeExec exec_;
  os::testing::FakeClock clock_;
  std::mutex mu_;
  std::map<std::string, api::ConfigMap> config_maps_;
  std::map<std::string, api::Secret> secrets_;
};

}  // namespace kvol::volume::testing
