// snapshot.storage.k8s.io/v1 kinds: VolumeSnapshotClass, VolumeSnapshot, VolumeSnapshotContent,
// with the fields external-snapshotter's CRDs define, and the finalizers and annotations its
// controllers and kvol's give them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/codec.h"
#include "api/meta.h"
#include "api/quantity.h"
#include "api/time.h"

namespace kvol::api {

// deletionPolicy of classes and contents.
inline constexpr std::string_view kSnapshotDeletionDelete = "Delete";
inline constexpr std::string_view kSnapshotDeletionRetain = "Retain";

// Finalizers. On a snapshot: while a claim is being restored from it, and while it is bound to
// a content. On a content: while it is bound to a snapshot. On a claim: while it is the source
// of a snapshot being taken.
inline constexpr std::string_view kSnapshotAsSourceFinalizer =
    "snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection";
inline constexpr std::string_view kSnapshotBoundFinalizer =
    "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection";
inline constexpr std::string_view kContentBoundFinalizer =
    "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection";
inline constexpr std::string_view kPVCAsSnapshotSourceFinalizer =
    "snapshot.storage.kubernetes.io/pvc-as-source-protection";

// Annotations.
inline constexpr std::string_view kDefaultSnapshotClassAnnotation =
    "snapshot.storage.kubernetes.io/is-default-class";
inline constexpr std::string_view kAnnSnapshotDeletionSecretName =
    "snapshot.storage.kubernetes.io/deletion-secret-name";
inline constexpr std::string_view kAnnSnapshotDeletionSecretNamespace =
    "snapshot.storage.kubernetes.io/deletion-secret-namespace";
inline constexpr std::string_view kAnnSnapshotBeingDeleted =
    "snapshot.storage.kubernetes.io/volumesnapshot-being-deleted";
inline constexpr std::string_view kAnnSnapshotBeingCreated =
    "snapshot.storage.kubernetes.io/volumesnapshot-being-created";

// A cluster-wide kind of snapshot: which driver takes it, with what parameters, and whether the
// storage snapshot goes with its VolumeSnapshot. No spec: the fields sit at the top level.
struct VolumeSnapshotClass {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  std::string driver;
  StringMap parameters;
  std::string deletion_policy;
  KVOL_FIELDS(VolumeSnapshotClass) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("driver", s.driver, Emit::kAlways);
    v("parameters", s.parameters);
    v("deletionPolicy", s.deletion_policy, Emit::kAlways);
  }
};

struct VolumeSnapshotError {
  std::optional<Time> time;
  std::optional<std::string> message;
  KVOL_FIELDS(VolumeSnapshotError) {
    v("time", s.time);
    v("message", s.message);
  }
};

// What a VolumeSnapshot is of: exactly one of a claim in its namespace (a new snapshot) and an
// existing content (a pre-provisioned one).
struct VolumeSnapshotSource {
  std::optional<std::string> persistent_volume_claim_name;
  std::optional<std::string> volume_snapshot_content_name;
  KVOL_FIELDS(VolumeSnapshotSource) {
    v("persistentVolumeClaimName", s.persistent_volume_claim_name);
    v("volumeSnapshotContentName", s.volume_snapshot_content_name);
  }
};

struct VolumeSnapshotSpec {
  VolumeSnapshotSource source;
  std::optional<std::string> volume_snapshot_class_name;
  KVOL_FIELDS(VolumeSnapshotSpec) {
    v("source", s.source, Emit::kAlways);
    v("volumeSnapshotClassName", s.volume_snapshot_class_name);
  }
};

struct VolumeSnapshotStatus {
  std::optional<std::string> bound_volume_snapshot_content_name;
  std::optional<Time> creation_time;
  std::optional<bool> ready_to_use;
  std::optional<Quantity> restore_size;
  std::optional<VolumeSnapshotError> error;
  std::optional<std::string> volume_group_snapshot_name;
  KVOL_FIELDS(VolumeSnapshotStatus) {
    v("boundVolumeSnapshotContentName", s.bound_volume_snapshot_content_name);
    v("creationTime", s.creation_time);
    v("readyToUse", s.ready_to_use);
    v("restoreSize", s.restore_size);
    v("error", s.error);
    v("volumeGroupSnapshotName", s.volume_group_snapshot_name);
  }
};

// A user's request for a snapshot of a claim, or for the use of an existing one.
struct VolumeSnapshot {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  VolumeSnapshotSpec spec;
  std::optional<VolumeSnapshotStatus> status;
  KVOL_FIELDS(VolumeSnapshot) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("spec", s.spec, Emit::kAlways);
    v("status", s.status);
  }
};

// What a content is of: exactly one of the volume to snapshot (dynamic) and the storage's own
// snapshot (pre-provisioned).
struct VolumeSnapshotContentSource {
  std::optional<std::string> volume_handle;
  std::optional<std::string> snapshot_handle;
  KVOL_FIELDS(VolumeSnapshotContentSource) {
    v("volumeHandle", s.volume_handle);
    v("snapshotHandle", s.snapshot_handle);
  }
};

struct VolumeSnapshotContentSpec {
  ObjectReference volume_snapshot_ref;
  std::string deletion_policy;
  std::string driver;
  std::optional<std::string> volume_snapshot_class_name;
  VolumeSnapshotContentSource source;
  std::optional<std::string> source_volume_mode;
  KVOL_FIELDS(VolumeSnapshotContentSpec) {
    v("volumeSnapshotRef", s.volume_snapshot_ref, Emit::kAlways);
    v("deletionPolicy", s.deletion_policy, Emit::kAlways);
    v("driver", s.driver, Emit::kAlways);
    v("volumeSnapshotClassName", s.volume_snapshot_class_name);
    v("source", s.source, Emit::kAlways);
    v("sourceVolumeMode", s.source_volume_mode);
  }
};

// As the CSI snapshotter writes it: times in Unix nanoseconds, sizes in bytes.
struct VolumeSnapshotContentStatus {
  std::optional<std::string> snapshot_handle;
  std::optional<int64_t> creation_time;
  std::optional<int64_t> restore_size;
  std::optional<bool> ready_to_use;
  std::optional<VolumeSnapshotError> error;
  std::optional<std::string> volume_group_snapshot_handle;
  KVOL_FIELDS(VolumeSnapshotContentStatus) {
    v("snapshotHandle", s.snapshot_handle);
    v("creationTime", s.creation_time);
    v("restoreSize", s.restore_size);
    v("readyToUse", s.ready_to_use);
    v("error", s.error);
    v("volumeGroupSnapshotHandle", s.volume_group_snapshot_handle);
  }
};

// A snapshot in the storage, bound to the VolumeSnapshot that asked for it or uses it.
struct VolumeSnapshotContent {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  VolumeSnapshotContentSpec spec;
  std::optional<VolumeSnapshotContentStatus> status;
  KVOL_FIELDS(VolumeSnapshotContent) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("spec", s.spec, Emit::kAlways);
    v("status", s.status);
  }
};

}  // namespace kvol::api
