#include "controller/snapshotter/create_snapshot.h"

namespace kvol::controller::snapshotter {

StatusOr<std::string> SnapshotName(const api::VolumeSnapshotContent& content) {
  const std::string& uid = content.spec.volume_snapshot_ref.uid;
  if (uid.empty()) return InvalidArgumentError("Corrupted snapshot object, it is missing UID");
  return "snapshot-" + uid;
}

StatusOr<std::map<std::string, std::string>> DriverParameters(
    const std::map<std::string, std::string>& class_parameters) {
  constexpr std::string_view kPrefix = "csi.storage.k8s.io/";
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : class_parameters) {
    if (!std::string_view(key).starts_with(kPrefix)) {
      out.emplace(key, value);
      continue;
    }
    if (key != kParamSecretName && key != kParamSecretNamespace && key != kParamListSecretName &&
        key != kParamListSecretNamespace) {
      return InvalidArgumentError("failed to remove CSI Parameters of prefixed keys: found unknown "
                                  "parameter key \"" + key +
                                  "\" with reserved namespace csi.storage.k8s.io/");
    }
  }
  return out;
}

StatusOr<::csi::v1::CreateSnapshotRequest> MakeCreateSnapshotRequest(
    const api::VolumeSnapshotContent& content, const api::VolumeSnapshotClass& cls,
    const std::map<std::string, std::string>& secrets) {
  if (!content.spec.source.volume_handle) {
    return InvalidArgumentError("content " + content.metadata.name + " has no volumeHandle");
  }
  KVOL_ASSIGN_OR_RETURN(std::string name, SnapshotName(content));
  KVOL_ASSIGN_OR_RETURN(auto params, DriverParameters(cls.parameters));
  ::csi::v1::CreateSnapshotRequest req;
  req.set_source_volume_id(*content.spec.source.volume_handle);
  req.set_name(name);
  for (const auto& [k, v] : params) (*req.mutable_parameters())[k] = v;
  for (const auto& [k, v] : secrets) (*req.mutable_secrets())[k] = v;
  return req;
}

api::VolumeSnapshotContentStatus ContentStatus(const api::VolumeSnapshotContent& content,
                                               const ::csi::v1::Snapshot& snapshot,
                                               int64_t now_ns) {
  api::VolumeSnapshotContentStatus s = content.status.value_or(api::VolumeSnapshotContentStatus{});
  if (!s.snapshot_handle) s.snapshot_handle = snapshot.snapshot_id();
  if (!s.creation_time) {
    const auto& t = snapshot.creation_time();
    const int64_t ns = t.seconds() * 1'000'000'000 + t.nanos();
    s.creation_time = ns > 0 ? ns : now_ns;
  }
  if (!s.restore_size && snapshot.size_bytes() > 0) s.restore_size = snapshot.size_bytes();
  if (s.ready_to_use != snapshot.ready_to_use()) {
    s.ready_to_use = snapshot.ready_to_use();
    if (snapshot.ready_to_use()) s.error.reset();
  }
  return s;
}

}  // namespace kvol::controller::snapshotter
