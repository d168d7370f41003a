// Pieces the in-tree plugins share: the pod-directory mounter/unmounter base and tmpfs setup.
#pragma once

#include <string>

#include "volume/plugin.h"

namespace kvol::volume::plugins {

// A volume that lives in the pod's directory for its plugin.
class PodDirVolume {
 public:
  PodDirVolume(Host& host, std::string_view plugin, std::string_view pod_uid,
               std::string_view volume_name)
      : host_(host), path_(host.PodVolumeDir(pod_uid, plugin, volume_name)) {}
  const std::string& path() const { return path_; }

 protected:
  Host& host_;
  const std::string path_;
};

// Tears down a pod-directory volume with util::CleanupDir.
class CleanupUnmounter final : public Unmounter, PodDirVolume {
 public:
  CleanupUnmounter(Host& host, std::string_view plugin, std::string_view pod_uid,
                   std::string_view volume_name, bool remove_contents)
      : PodDirVolume(host, plugin, pod_uid, volume_name), remove_contents_(remove_contents) {}
  std::string GetPath() const override { return path(); }
  Status TearDown() override;

 private:
  const bool remove_contents_;
};

// Creates `dir` (and its parents) with `mode` exactly, whatever the umask.
Status MakeDir(const std::string& dir, int mode);

// Makes `dir` a tmpfs (if it is not a mount point already), with size=`size_bytes` when
// positive, and mode 0777 as an emptyDir.
Status EnsureTmpfs(Host& host, const std::string& dir, int64_t size_bytes);

}  // namespace kvol::volume::plugins
