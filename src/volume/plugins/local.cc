// local PersistentVolumes: a directory on the node bind-mounted into the pod's directory.
#include <sys/stat.h>

#include "volume/plugins/common.h"
#include "volume/plugins/plugins.h"

namespace kvol::volume::plugins {
namespace {

class LocalMounter final : public Mounter, PodDirVolume {
 public:
  LocalMounter(Host& host, const api::Pod& pod, const Spec& spec)
      : PodDirVolume(host, kLocal, pod.metadata.uid, spec.Name()),
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
    if (!S_ISDIR(st.st_mode)) {
      return FailedPreconditionError("local volume path \"" + source_ +
                                     "\" is not a directory; only directories are supported");
    }
    auto mounted = host_.mounter().IsMountPoint(path());
    if (mounted.ok() && *mounted) return OkStatus();
    KVOL_RETURN_IF_ERROR(MakeDir(path(), 0750));
    std::vector<std::string> options = {"bind"};
    if (read_only_) options.push_back("ro");
    options.insert(options.end(), options_.begin(), options_.end());
    return host_.mounter().Mount(source_, path(), "", options);
  }

 private:
  const std::string source_;
  const std::vector<std::string> options_;
  const bool read_only_;
};

class LocalPlugin final : public VolumePlugin {
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

 private:
  Host& host_;
};

}  // namespace

std::unique_ptr<VolumePlugin> NewLocalPlugin(Host& host) {
  return std::make_unique<LocalPlugin>(host);
}

}  // namespace kvol::volume::plugins
