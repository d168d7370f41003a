// nfs: mount -t nfs server:path into the pod's directory. A mount the kernel refuses leaves an
// error carrying mount's own output and no directory behind.
#include "volume/plugins/common.h"
#include "volume/plugins/plugins.h"
#include "volume/util/cleanup.h"

namespace kvol::volume::plugins {
namespace {

const api::NFSVolumeSource& SourceOf(const Spec& spec) {
  return spec.pv ? *spec.pv->spec.nfs : *spec.volume.nfs;
}

class NfsMounter final : public Mounter, PodDirVolume {
 public:
  NfsMounter(Host& host, const api::Pod& pod, const Spec& spec)
      : PodDirVolume(host, kNfs, pod.metadata.uid, spec.Name()),
        source_(SourceOf(spec)),
        options_(spec.pv ? spec.pv->spec.mount_options : std::vector<std::string>{}),
        read_only_(spec.read_only || SourceOf(spec).read_only) {}
  std::string GetPath() const override { return path(); }
  bool ReadOnly() const override { return read_only_; }
  Status SetUp() override {
    auto mounted = host_.mounter().IsMountPoint(path());
    if (mounted.ok() && *mounted) return OkStatus();
    KVOL_RETURN_IF_ERROR(MakeDir(path(), 0750));
    std::vector<std::string> options;
    if (read_only_) options.push_back("ro");
    options.insert(options.end(), options_.begin(), options_.end());
    std::string server = source_.server;
    if (server.find(':') != std::string::npos) server = "[" + server + "]";  // IPv6
    Status s = host_.mounter().Mount(server + ":" + source_.path, path(), "nfs", options);
    if (!s.ok()) {
      // Leave nothing half made: the next attempt starts clean.
      (void)util::CleanupDir(host_.mounter(), path(), false);
    }
    return s;
  }

 private:
  const api::NFSVolumeSource source_;
  const std::vector<std::string> options_;
  const bool read_only_;
};

class NfsPlugin final : public VolumePlugin {
 public:
  explicit NfsPlugin(Host& host) : host_(host) {}
  std::string_view Name() const override { return kNfs; }
  bool CanSupport(const Spec& spec) const override {
    return spec.pv ? spec.pv->spec.nfs.has_value() : spec.volume.nfs.has_value();
  }
  StatusOr<std::unique_ptr<Mounter>> NewMounter(const Spec& spec, const api::Pod& pod) override {
    return std::unique_ptr<Mounter>(std::make_unique<NfsMounter>(host_, pod, spec));
  }
  StatusOr<std::unique_ptr<Unmounter>> NewUnmounter(std::string_view name,
                                                    std::string_view pod_uid) override {
    return std::unique_ptr<Unmounter>(
        std::make_unique<CleanupUnmounter>(host_, kNfs, pod_uid, name, false));
  }

 private:
  Host& host_;
};

}  // namespace

std::unique_ptr<VolumePlugin> NewNfsPlugin(Host& host) { return std::make_unique<NfsPlugin>(host); }

}  // namespace kvol::volume::plugins
