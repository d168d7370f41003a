#include "volume/provisioner.h"

#include <chrono>
#include <filesystem>

#include "api/well_known.h"

namespace kvol::volume {

api::PersistentVolumeSpec FilesystemSpecFor(const api::PersistentVolumeClaim& claim) {
  api::PersistentVolumeSpec spec;
  auto storage = claim.spec.resources.requests.find("storage");
  if (storage != claim.spec.resources.requests.end()) spec.capacity["storage"] = storage->second;
  spec.access_modes = claim.spec.access_modes;
  spec.volume_mode = "Filesystem";
  return spec;
}

api::PersistentVolume ProvisionedVolume(std::string pv_name, api::PersistentVolumeSpec spec,
                                        const api::PersistentVolumeClaim& claim,
                                        const api::StorageClass& cls,
                                        std::string_view provisioner) {
  api::PersistentVolume pv;
  pv.metadata.name = std::move(pv_name);
  pv.metadata.annotations[std::string(api::kAnnBoundByController)] = "yes";
  pv.metadata.annotations[std::string(api::kAnnDynamicallyProvisioned)] = std::string(provisioner);
  pv.spec = std::move(spec);
  pv.spec.storage_class_name = cls.metadata.name;
  pv.spec.persistent_volume_reclaim_policy = cls.reclaim_policy.value_or("Delete");
  pv.spec.mount_options = cls.mount_options;
  auto& ref = pv.spec.claim_ref.emplace();
  ref.kind = "PersistentVolumeClaim";
  ref.api_version = "v1";
  ref.namespace_ = claim.metadata.namespace_;
  ref.name = claim.metadata.name;
  ref.uid = claim.metadata.uid;
  ref.resource_version = claim.metadata.resource_version;
  if (pv.spec.persistent_volume_reclaim_policy == "Delete") {
    pv.metadata.finalizers.emplace_back(api::kPVControllerFinalizer);
  }
  return pv;
}

Status ScrubDirectory(const std::string& dir, std::chrono::milliseconds timeout) {
  namespace fs = std::filesystem;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) {
    return NotFoundError(dir + " is not a directory");
  }
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (std::chrono::steady_clock::now() > deadline) {
      return DeadlineExceededError("scrubbing " + dir + " took longer than " +
                                   std::to_string(timeout.count()) + "ms");
    }
    std::error_code rm;
    fs::remove_all(it->path(), rm);  // symlinks are removed, never followed
    if (rm) return InternalError("cannot remove " + it->path().string() + ": " + rm.message());
  }
  if (ec) return InternalError("cannot list " + dir + ": " + ec.message());
  return OkStatus();
}

}  // namespace kvol::volume
