// What kvol's built-in CSI snapshotter asks a driver for, and the content status it writes, as
// external-snapshotter's csi-snapshotter derives them. Pure functions: the controller
// (snapshotter.h) reads the objects and calls the driver.
//
// The class's parameters go to CreateSnapshot except the snapshotter's secrets
// (csi.storage.k8s.io/snapshotter-secret-name and -namespace, and the list secret's); any other
// key in that reserved prefix is an error, as there.
#pragma once

#include <map>
#include <string>

#include "api/snapshot.h"
#include "base/status.h"
#include "csi/proto/csi.pb.h"

namespace kvol::controller::snapshotter {

inline constexpr std::string_view kParamSecretName = "csi.storage.k8s.io/snapshotter-secret-name";
inline constexpr std::string_view kParamSecretNamespace =
    "csi.storage.k8s.io/snapshotter-secret-namespace";
inline constexpr std::string_view kParamListSecretName =
    "csi.storage.k8s.io/snapshotter-list-secret-name";
inline constexpr std::string_view kParamListSecretNamespace =
    "csi.storage.k8s.io/snapshotter-list-secret-namespace";

// "snapshot-<uid of the VolumeSnapshot>": the name a retry finds the same snapshot by.
StatusOr<std::string> SnapshotName(const api::VolumeSnapshotContent& content);

// The class's parameters without the snapshotter's own; InvalidArgument naming an unknown key
// of the reserved prefix.
StatusOr<std::map<std::string, std::string>> DriverParameters(
    const std::map<std::string, std::string>& class_parameters);

// The CreateSnapshot request for a dynamic content.
StatusOr<::csi::v1::CreateSnapshotRequest> MakeCreateSnapshotRequest(
    const api::VolumeSnapshotContent& content, const api::VolumeSnapshotClass& cls,
    const std::map<std::string, std::string>& secrets);

// The content's status after the driver described its snapshot: the handle, readiness, size
// (when known) and creation time in Unix nanoseconds (`now_ns` when the driver gave none).
// Fields already set are kept, as external-snapshotter does; readiness follows the driver, and
// becoming ready clears an error.
api::VolumeSnapshotContentStatus ContentStatus(const api::VolumeSnapshotContent& content,
                                               const ::csi::v1::Snapshot& snapshot,
                                               int64_t now_ns);

}  // namespace kvol::controller::snapshotter
