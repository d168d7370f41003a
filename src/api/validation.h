// Validation of every kind as the Kubernetes API server applies it, with the same field paths and
// messages. Validate(obj) checks an object about to be created; ValidateUpdate(obj, old) checks
// an update, including the fields that may not change. Run SetDefaults (defaults.h) first, as
// the API server does. Every function returns all problems found, in Kubernetes' order.
#pragma once

#include "api/core.h"
#include "api/field_errors.h"
#include "api/names.h"
#include "api/snapshot.h"
#include "api/storage.h"

namespace kvol::api {

// metadata: name (or generateName), namespace (required for namespaced kinds, forbidden for the
// others), labels, annotations, owner references and finalizers.
FieldErrors ValidateObjectMeta(const ObjectMeta& meta, bool namespaced, NameRule rule,
                               const Path& path);
FieldErrors ValidateObjectMetaUpdate(const ObjectMeta& meta, const ObjectMeta& old,
                                     const Path& path);

FieldErrors ValidatePersistentVolumeSpec(const PersistentVolumeSpec& spec, const Path& path);
FieldErrors ValidatePersistentVolumeClaimSpec(const PersistentVolumeClaimSpec& spec,
                                              const Path& path);
FieldErrors ValidatePodSpec(const PodSpec& spec, const Path& path);
FieldErrors ValidateNodeSelector(const NodeSelector& s, const Path& path);
FieldErrors ValidateLabelSelector(const LabelSelector& s, const Path& path);

FieldErrors Validate(const Namespace& obj);
FieldErrors Validate(const Node& obj);
FieldErrors Validate(const Pod& obj);
FieldErrors Validate(const PersistentVolume& obj);
FieldErrors Validate(const PersistentVolumeClaim& obj);
FieldErrors Validate(const ConfigMap& obj);
FieldErrors Validate(const Secret& obj);
FieldErrors Validate(const Event& obj);
FieldErrors Validate(const StorageClass& obj);
FieldErrors Validate(const VolumeAttachment& obj);
FieldErrors Validate(const CSIDriver& obj);
FieldErrors Validate(const CSINode& obj);
FieldErrors Validate(const CSIStorageCapacity& obj);
FieldErrors Validate(const ResourceQuota& obj);
FieldErrors Validate(const Lease& obj);
FieldErrors Validate(const VolumeSnapshotClass& obj);
FieldErrors Validate(const VolumeSnapshot& obj);
FieldErrors Validate(const VolumeSnapshotContent& obj);

FieldErrors ValidateUpdate(const Namespace& obj, const Namespace& old);
FieldErrors ValidateUpdate(const Node& obj, const Node& old);
FieldErrors ValidateUpdate(const Pod& obj, const Pod& old);
// The volume source may not change; nor may volumeMode, or nodeAffinity once set.
FieldErrors ValidateUpdate(const PersistentVolume& obj, const PersistentVolume& old);
// The spec may not change, except filling volumeName once, setting storageClassName once, and
// growing resources.requests.storage of a Bound claim.
FieldErrors ValidateUpdate(const PersistentVolumeClaim& obj, const PersistentVolumeClaim& old);
FieldErrors ValidateUpdate(const ConfigMap& obj, const ConfigMap& old);
FieldErrors ValidateUpdate(const Secret& obj, const Secret& old);
FieldErrors ValidateUpdate(const Event& obj, const Event& old);
FieldErrors ValidateUpdate(const StorageClass& obj, const StorageClass& old);
FieldErrors ValidateUpdate(const VolumeAttachment& obj, const VolumeAttachment& old);
FieldErrors ValidateUpdate(const CSIDriver& obj, const CSIDriver& old);
FieldErrors ValidateUpdate(const CSINode& obj, const CSINode& old);
// nodeTopology and storageClassName (what GetCapacity was asked) may not change.
FieldErrors ValidateUpdate(const CSIStorageCapacity& obj, const CSIStorageCapacity& old);
FieldErrors ValidateUpdate(const ResourceQuota& obj, const ResourceQuota& old);
FieldErrors ValidateUpdate(const Lease& obj, const Lease& old);
FieldErrors ValidateUpdate(const VolumeSnapshotClass& obj, const VolumeSnapshotClass& old);
// The source may not change, nor lose a field once set.
FieldErrors ValidateUpdate(const VolumeSnapshot& obj, const VolumeSnapshot& old);
// The source's handles and sourceVolumeMode may not change, nor go once set.
FieldErrors ValidateUpdate(const VolumeSnapshotContent& obj, const VolumeSnapshotContent& old);

}  // namespace kvol::api
