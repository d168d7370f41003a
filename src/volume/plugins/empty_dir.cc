// emptyDir: scratch space that lives and dies with the pod.
#include "volume/plugins/common.h"
#include "volume/plugins/plugins.h"

namespace kvol::volume::plugins {
namespace {

class EmptyDirMounter final : public Mounter, PodDirVolume {
 public:
  EmptyDirMounter(Host& host, const api::Pod& pod, const Spec& spec)
      : PodDirVolume(host, kEmptyDir, pod.metadata.uid, spec.Name()),
        source_(*spec.volume.empty_dir) {}
  std::string GetPath() const override { return path(); }
  Status SetUp() override {
    if (source_.medium == "Memory") {
      return EnsureTmpfs(host_, path(), source_.size_limit ? source_.size_limit->Value() : 0);
    }
    if (!source_.medium.empty()) {
      return InvalidArgumentError("unknown storage medium \"" + source_.medium + "\"");
    }
    return MakeDir(path(), 0777);
  }

 private:
  const api::EmptyDirVolumeSource source_;
};

class EmptyDirPlugin final : public VolumePlugin {
 public:
  explicit EmptyDirPlugin(Host& host) : host_(host) {}
  std::string_view Name() const override { return kEmptyDir; }
  bool CanSupport(const Spec& spec) const override {
    return !spec.pv && spec.volume.empty_dir.has_value();
  }
  StatusOr<std::unique_ptr<Mounter>> NewMounter(const Spec& spec, const api::Pod& pod) override {
    return std::unique_ptr<Mounter>(std::make_unique<EmptyDirMounter>(host_, pod, spec));
  }
  StatusOr<std::unique_ptr<Unmounter>> NewUnmounter(std::string_view name,
                                                    std::string_view pod_uid) override {
    return std::unique_ptr<Unmounter>(
        std::make_unique<CleanupUnmounter>(host_, kEmptyDir, pod_uid, name, true));
  }

 private:
  Host& host_;
};

}  // namespace

std::unique_ptr<VolumePlugin> NewEmptyDirPlugin(Host& host) {
  return std::make_unique<EmptyDirPlugin>(host);
}

}  // namespace kvol::volume::plugins
