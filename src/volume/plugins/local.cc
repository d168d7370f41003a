// local PersistentVolumes: a directory on the node bind-mounted into the pod's directory.
#include <sys/stat.h>

#include <filesystem>

#include "os/format.h"
#include "volume/plugins/common.h"
#include "volume/plugins/plugins.h"
#include "volume/util/cleanup.h"

namespace kvol::volume::plugins {
namespace {

namespace fs = std::filesystem;

bool IsBlockDevice(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISBLK(st.st_mode);
}

std::string DeviceMountPath(Host& host, const std::string& volume) {
  return host.PluginDir(kLocal) + "/mounts/" + volume;
}

class LocalMounter final : public Mounter, PodDirVolume {
 public:
  LocalMounter(Host& host, const api::Pod& pod, const Spec& spec)
      : PodDirVolume(host, kLocal, pod.metadata.uid, spec.Name()),
        name_(spec.Name()),
        source_(spec.pv->spec.local->path),
        options_(spec.pv->spec.mount_options),
        read_only_(spec.read_only) {}
  std::string GetPath() const override { return path(); }
  bool ReadOnly() const override { return read_only_; }
  Status SetUp() override {
    struct stat st;
    if (stat(source_.c_str(), &st) != 0) {
      return NotFoundError("path \"" + source_ + "\" does not exist");
    }
    std::string from = source_;
    if (S_ISBLK(st.st_mode)) {
      // The device is mounted once for the node (MountDevice); pods bind from there.
      from = DeviceMountPath(host_, name_);
      auto global = host_.mounter().IsMountPoint(from);
      if (!global.ok() || !*global) {
        return FailedPreconditionError("local volume " + name_ + ": device " + source_ +
                                       " is not mounted at " + from);
      }
    } else if (!S_ISDIR(st.st_mode)) {
      return FailedPreconditionError("local volume path \"" + source_ +
                                     "\" is neither a directory nor a block device");
    }
    auto mounted = host_.mounter().IsMountPoint(path());
    if (mounted.ok() && *mounted) return OkStatus();
    KVOL_RETURN_IF_ERROR(MakeDir(path(), 0750));
    std::vector<std::string> options = {"bind"};
    if (read_only_) options.push_back("ro");
    if (!S_ISBLK(st.st_mode)) options.insert(options.end(), options_.begin(), options_.end());
    return host_.mounter().Mount(from, path(), "", options);
  }

 private:
  const std::string name_;
  const std::string source_;
  const std::vector<std::string> options_;
  const bool read_only_;
};

class LocalPlugin final : public VolumePlugin,
                          public DeviceMountableVolumePlugin,
                          public BlockVolumePlugin {
 public:
  explicit LocalPlugin(Host& host) : host_(host) {}
  std::string_view Name() const override { return kLocal; }
  bool CanSupport(const Spec& spec) const override {
    return spec.pv && spec.pv->spec.local.has_value();
  }
  StatusOr<std::unique_ptr<Mounter>> NewMounter(const Spec& spec, const api::Pod& pod) override {
    if (spec.pv->spec.volume_mode.value_or("Filesystem") != "Filesystem") {
      return InvalidArgumentError("local volume " + spec.Name() + " has volumeMode " +
                                  *spec.pv->spec.volume_mode +
                                  "; block volumes are mapped, not mounted");
    }
    return std::unique_ptr<Mounter>(std::make_unique<LocalMounter>(host_, pod, spec));
  }
  StatusOr<std::unique_ptr<Unmounter>> NewUnmounter(std::string_view name,
                                                    std::string_view pod_uid) override {
    return std::unique_ptr<Unmounter>(
        std::make_unique<CleanupUnmounter>(host_, kLocal, pod_uid, name, false));
  }
  DeviceMountableVolumePlugin* AsDeviceMountable() override { return this; }
  BlockVolumePlugin* AsBlock() override { return this; }

  Status MapPodDevice(const Spec& spec, std::string_view pod_uid) override {
    const std::string& device = spec.pv->spec.local->path;
    if (!IsBlockDevice(device)) {
      return FailedPreconditionError("local volume " + spec.Name() + ": \"" + device +
                                     "\" is not a block device; volumeMode Block needs one");
    }
    const std::string link = host_.PodDeviceDir(pod_uid, kLocal, spec.Name());
    std::error_code ec;
    if (fs::is_symlink(link, ec) && fs::read_symlink(link, ec).string() == device) {
      return OkStatus();
    }
    KVOL_RETURN_IF_ERROR(MakeDir(fs::path(link).parent_path().string(), 0750));
    fs::remove(link, ec);
    fs::create_symlink(device, link, ec);
    if (ec) return InternalError("symlink " + link + ": " + ec.message());
    return OkStatus();
  }
  Status UnmapPodDevice(std::string_view volume_name, std::string_view pod_uid) override {
    const std::string link = host_.PodDeviceDir(pod_uid, kLocal, volume_name);
    std::error_code ec;
    fs::remove(link, ec);
    if (ec) return InternalError("remove " + link + ": " + ec.message());
    return OkStatus();
  }

  bool NeedsDeviceMount(const Spec& spec) override {
    return spec.pv && spec.pv->spec.local &&
           spec.pv->spec.volume_mode.value_or("Filesystem") == "Filesystem" &&
           IsBlockDevice(spec.pv->spec.local->path);
  }
  std::string GetDeviceMountPath(const Spec& spec) override {
    return DeviceMountPath(host_, spec.Name());
  }
  Status MountDevice(const Spec& spec, const std::string& /*device_path*/) override {
    const std::string target = GetDeviceMountPath(spec);
    auto mounted = host_.mounter().IsMountPoint(target);
    if (mounted.ok() && *mounted) return OkStatus();
    KVOL_RETURN_IF_ERROR(MakeDir(target, 0750));
    const auto& local = *spec.pv->spec.local;
    Status s = os::FormatAndMount(host_.exec(), host_.mounter(), local.path, target,
                                  local.fs_type.value_or(""), spec.pv->spec.mount_options);
    if (!s.ok()) (void)util::CleanupDir(host_.mounter(), target, false);
    return s;
  }
  Status UnmountDevice(const std::string& device_mount_path) override {
    return util::CleanupDir(host_.mounter(), device_mount_path, false);
  }
  std::vector<FoundDevice> FindDeviceMounts() override {
    return FoundDevicesUnder(host_.PluginDir(kLocal) + "/mounts");
  }

 private:
  Host& host_;
};

}  // namespace

std::unique_ptr<VolumePlugin> NewLocalPlugin(Host& host) {
  return std::make_unique<LocalPlugin>(host);
}

}  // namespace kvol::volume::plugins
