#include "node/volumemanager/actual_state_of_world.h"

#include <algorithm>

namespace kvol::node::volumemanager {

void ActualStateOfWorld::MarkVolumeMounted(const std::string& key, ActualVolume v) {
  v.state = MountState::kMounted;
  v.reconstructed = false;
  std::lock_guard lock(mu_);
  volumes_[key] = std::move(v);
}

void ActualStateOfWorld::MarkVolumeUncertain(const std::string& key, ActualVolume v) {
  v.state = MountState::kUncertain;
  std::lock_guard lock(mu_);
  volumes_[key] = std::move(v);
}

bool ActualStateOfWorld::MarkVolumeUncertain(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = volumes_.find(key);
  if (it == volumes_.end()) return false;
  it->second.state = MountState::kUncertain;
  return true;
}

void ActualStateOfWorld::MarkVolumeUnmounted(const std::string& key) {
  std::lock_guard lock(mu_);
  volumes_.erase(key);
}

void ActualStateOfWorld::MarkDeviceMounted(const std::string& name, std::string plugin,
                                           std::string mount_path, bool mount_point) {
  std::lock_guard lock(mu_);
  devices_[name] = {std::move(plugin), std::move(mount_path), MountState::kMounted, mount_point};
}

void ActualStateOfWorld::MarkDeviceUncertain(const std::string& name, std::string plugin,
                                             std::string mount_path) {
  std::lock_guard lock(mu_);
  devices_[name] = {std::move(plugin), std::move(mount_path), MountState::kUncertain};
}

bool ActualStateOfWorld::MarkDeviceUncertain(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = devices_.find(name);
  if (it == devices_.end()) return false;
  it->second.state = MountState::kUncertain;
  return true;
}

void ActualStateOfWorld::MarkDeviceUnmounted(const std::string& name) {
  std::lock_guard lock(mu_);
  devices_.erase(name);
}

void ActualStateOfWorld::MarkAttached(const std::string& name, std::string plugin,
                                      std::string volume_name, std::string device_path) {
  std::lock_guard lock(mu_);
  attachments_[name] = {std::move(plugin), std::move(volume_name), std::move(device_path), true};
}

void ActualStateOfWorld::MarkAttachUncertain(const std::string& name, std::string plugin,
                                             std::string volume_name, std::string device_path) {
  std::lock_guard lock(mu_);
  ActualAttachment& a = attachments_[name];
  a.plugin_name = std::move(plugin);
  a.volume_name = std::move(volume_name);
  if (!device_path.empty()) a.device_path = std::move(device_path);
  a.certain = false;
}

bool ActualStateOfWorld::MarkAttachUncertain(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = attachments_.find(name);
  if (it == attachments_.end()) return false;
  it->second.certain = false;
  return true;
}

void ActualStateOfWorld::MarkDetached(const std::string& name) {
  std::lock_guard lock(mu_);
  attachments_.erase(name);
}

void ActualStateOfWorld::MarkResized(const std::string& name, int64_t bytes) {
  std::lock_guard lock(mu_);
  resized_[name] = bytes;
}

void ActualStateOfWorld::ForgetResizesExcept(const std::set<std::string>& names) {
  std::lock_guard lock(mu_);
  for (auto it = resized_.begin(); it != resized_.end();) {
    it = names.count(it->first) ? std::next(it) : resized_.erase(it);
  }
}

std::optional<ActualVolume> ActualStateOfWorld::Volume(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = volumes_.find(key);
  if (it == volumes_.end()) return std::nullopt;
  return it->second;
}

std::optional<ActualDevice> ActualStateOfWorld::Device(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = devices_.find(name);
  if (it == devices_.end()) return std::nullopt;
  return it->second;
}

std::optional<ActualAttachment> ActualStateOfWorld::Attachment(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = attachments_.find(name);
  if (it == attachments_.end()) return std::nullopt;
  return it->second;
}

std::optional<int64_t> ActualStateOfWorld::ResizedTo(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = resized_.find(name);
  if (it == resized_.end()) return std::nullopt;
  return it->second;
}

bool ActualStateOfWorld::VolumeMountedAs(const std::string& key,
                                         std::string_view content_version) const {
  std::lock_guard lock(mu_);
  auto it = volumes_.find(key);
  return it != volumes_.end() && it->second.state == MountState::kMounted &&
         it->second.content_version == content_version;
}

bool ActualStateOfWorld::VolumeThereForPod(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = volumes_.find(key);
  return it != volumes_.end() &&
         (it->second.state == MountState::kMounted || it->second.reconstructed);
}

bool ActualStateOfWorld::DeviceMounted(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = devices_.find(name);
  return it != devices_.end() && it->second.state == MountState::kMounted;
}

bool ActualStateOfWorld::Attached(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = attachments_.find(name);
  return it != attachments_.end() && it->second.certain;
}

bool ActualStateOfWorld::VolumeInUse(const std::string& unique_name) const {
  std::lock_guard lock(mu_);
  return std::any_of(volumes_.begin(), volumes_.end(), [&](const auto& kv) {
    const ActualVolume& v = kv.second;
    return unique_name.size() == v.plugin_name.size() + 1 + v.dir_name.size() &&
           UniqueVolumeName(v.plugin_name, v.dir_name) == unique_name;
  });
}

bool ActualStateOfWorld::PodHasVolumes(const std::string& pod_uid) const {
  std::lock_guard lock(mu_);
  return std::any_of(volumes_.begin(), volumes_.end(),
                     [&](const auto& kv) { return kv.second.pod_uid == pod_uid; });
}

void ActualStateOfWorld::ForEachVolume(
    const std::function<void(const std::string&, const ActualVolume&)>& f) const {
  std::lock_guard lock(mu_);
  for (const auto& [key, v] : volumes_) f(key, v);
}

void ActualStateOfWorld::ForEachDevice(
    const std::function<void(const std::string&, const ActualDevice&)>& f) const {
  std::lock_guard lock(mu_);
  for (const auto& [name, d] : devices_) f(name, d);
}

void ActualStateOfWorld::ForEachAttachment(
    const std::function<void(const std::string&, const ActualAttachment&)>& f) const {
  std::lock_guard lock(mu_);
  for (const auto& [name, a] : attachments_) f(name, a);
}

}  // namespace kvol::node::volumemanager
