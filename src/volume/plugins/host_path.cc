// hostPath: a path on the node used in place, checked (and created) by its type first.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "volume/plugins/common.h"
#include "volume/plugins/plugins.h"

namespace kvol::volume::plugins {
namespace {

Status TypeCheckFailed(const std::string& path, std::string_view what) {
  return FailedPreconditionError("hostPath type check failed: " + path + " is not " +
                                 std::string(what));
}

// Kubernetes' hostPath type table.
Status CheckType(const std::string& path, const std::string& type) {
  struct stat st;
  const bool exists = lstat(path.c_str(), &st) == 0;
  // Symlinks are followed for the check, as os.Stat does.
  if (exists && S_ISLNK(st.st_mode) && stat(path.c_str(), &st) != 0) {
    return TypeCheckFailed(path, "a directory");
  }
  if (type.empty()) return OkStatus();
  if (type == "DirectoryOrCreate") {
    if (!exists) {
      std::error_code ec;
      std::filesystem::create_directories(path, ec);
      if (ec) return InternalError("mkdir " + path + ": " + ec.message());
      if (chmod(path.c_str(), 0755) != 0)
        return InternalError("chmod " + path + ": " + strerror(errno));
      return OkStatus();
    }
    return S_ISDIR(st.st_mode) ? OkStatus() : TypeCheckFailed(path, "a directory");
  }
  if (type == "FileOrCreate") {
    if (!exists) {
      // The parent directory must exist, as in Kubernetes.
      int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0 && errno != EEXIST) return InternalError("open " + path + ": " + strerror(errno));
      if (fd >= 0) {
        fchmod(fd, 0644);
        close(fd);
      }
      return OkStatus();
    }
    return S_ISREG(st.st_mode) ? OkStatus() : TypeCheckFailed(path, "a file");
  }
  if (type == "Directory")
    return exists && S_ISDIR(st.st_mode) ? OkStatus() : TypeCheckFailed(path, "a directory");
  if (type == "File")
    return exists && S_ISREG(st.st_mode) ? OkStatus() : TypeCheckFailed(path, "a file");
  if (type == "Socket")
    return exists && S_ISSOCK(st.st_mode) ? OkStatus() : TypeCheckFailed(path, "a socket file");
  if (type == "CharDevice")
    return exists && S_ISCHR(st.st_mode) ? OkStatus() : TypeCheckFailed(path, "a character device");
  if (type == "BlockDevice")
    return exists && S_ISBLK(st.st_mode) ? OkStatus() : TypeCheckFailed(path, "a block device");
  return InvalidArgumentError("invalid HostPathType \"" + type + "\"");
}

const api::HostPathVolumeSource& SourceOf(const Spec& spec) {
  return spec.pv ? *spec.pv->spec.host_path : *spec.volume.host_path;
}

class HostPathMounter final : public Mounter {
 public:
  HostPathMounter(const Spec& spec) : source_(SourceOf(spec)), read_only_(spec.read_only) {}
  std::string GetPath() const override { return source_.path; }
  Status SetUp() override { return CheckType(source_.path, source_.type.value_or("")); }
  bool ReadOnly() const override { return read_only_; }

 private:
  const api::HostPathVolumeSource source_;
  const bool read_only_;
};

// Nothing was made for the pod, so nothing is taken away: the node's path stays.
class HostPathUnmounter final : public Unmounter {
 public:
  explicit HostPathUnmounter(std::string path) : path_(std::move(path)) {}
  std::string GetPath() const override { return path_; }
  Status TearDown() override { return OkStatus(); }

 private:
  const std::string path_;
};

class HostPathPlugin final : public VolumePlugin {
 public:
  explicit HostPathPlugin(Host& host) : host_(host) {}
  std::string_view Name() const override { return kHostPath; }
  bool CanSupport(const Spec& spec) const override {
    return spec.pv ? spec.pv->spec.host_path.has_value() : spec.volume.host_path.has_value();
  }
  StatusOr<std::unique_ptr<Mounter>> NewMounter(const Spec& spec, const api::Pod&) override {
    return std::unique_ptr<Mounter>(std::make_unique<HostPathMounter>(spec));
  }
  StatusOr<std::unique_ptr<Unmounter>> NewUnmounter(std::string_view name,
                                                    std::string_view pod_uid) override {
    return std::unique_ptr<Unmounter>(
        std::make_unique<HostPathUnmounter>(host_.PodVolumeDir(pod_uid, kHostPath, name)));
  }

 private:
  Host& host_;
};

}  // namespace

std::unique_ptr<VolumePlugin> NewHostPathPlugin(Host& host) {
  return std::make_unique<HostPathPlugin>(host);
}

}  // namespace kvol::volume::plugins
