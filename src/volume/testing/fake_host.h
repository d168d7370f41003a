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

  plugins::CsiDrivers* CsiDrivers() override { return csi_drivers_; }
  // "<audience>@<pod>/<n>", n counting tokens given, expiring expiration_seconds (3600 when
  // unset) after the clock's now; `token_error`, when set, instead.
  StatusOr<api::authentication::TokenRequestStatus> ServiceAccountToken(
      const api::Pod& pod, std::string_view audience,
      std::optional<int64_t> expiration_seconds) override {
    std::lock_guard lock(mu_);
    if (!token_error.ok()) return token_error;
    api::authentication::TokenRequestStatus out;
    out.token = std::string(audience) + "@" + pod.metadata.name + "/" + std::to_string(++tokens_);
    out.expiration_timestamp = api::Time::FromTimePoint(
        clock_.Now() + std::chrono::seconds(expiration_seconds.value_or(3600)));
    return out;
  }
  Status token_error;

  StatusOr<api::CSIDriver> GetCSIDriver(std::string_view name) override {
    std::lock_guard lock(mu_);
    auto it = csi_driver_objects_.find(std::string(name));
    if (it == csi_driver_objects_.end())
      return NotFoundError("csidriver \"" + std::string(name) + "\" not found");
    return it->second;
  }
  StatusOr<api::VolumeAttachment> GetVolumeAttachment(std::string_view name) override {
    std::lock_guard lock(mu_);
    auto it = attachments_.find(std::string(name));
    if (it == attachments_.end())
      return NotFoundError("volumeattachment \"" + std::string(name) + "\" not found");
    return it->second;
  }
  StatusOr<api::VolumeAttachment> CreateVolumeAttachment(const api::VolumeAttachment& va) override {
    std::lock_guard lock(mu_);
    if (!attachments_.emplace(va.metadata.name, va).second)
      return AlreadyExistsError("volumeattachment \"" + va.metadata.name + "\" already exists");
    return va;
  }
  Status DeleteVolumeAttachment(std::string_view name) override {
    std::lock_guard lock(mu_);
    attachments_.erase(std::string(name));
    return OkStatus();
  }

  void SetCsiDrivers(plugins::CsiDrivers* drivers) { csi_drivers_ = drivers; }
  void PutCSIDriver(api::CSIDriver d) {
    std::lock_guard lock(mu_);
    csi_driver_objects_[d.metadata.name] = std::move(d);
  }
  void DeleteCSIDriver(const std::string& name) {
    std::lock_guard lock(mu_);
    csi_driver_objects_.erase(name);
  }
  // Sets an attachment's status, as an attacher would.
  void SetAttachmentStatus(const std::string& name, api::VolumeAttachmentStatus st) {
    std::lock_guard lock(mu_);
    attachments_.at(name).status = std::move(st);
  }
  std::map<std::string, api::VolumeAttachment> Attachments() {
    std::lock_guard lock(mu_);
    return attachments_;
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
  int tokens_ = 0;
  const std::string root_;
  os::testing::FakeMounter mounter_;
  os::testing::FakeExec exec_;
  os::testing::FakeClock clock_;
  std::mutex mu_;
  std::map<std::string, api::ConfigMap> config_maps_;
  std::map<std::string, api::Secret> secrets_;
  plugins::CsiDrivers* csi_drivers_ = nullptr;
  std::map<std::string, api::CSIDriver> csi_driver_objects_;
  std::map<std::string, api::VolumeAttachment> attachments_;
};

}  // namespace kvol::volume::testing
