// Defaulting as Kubernetes' v1 SetDefaults_* functions apply it on every write: PV reclaim policy
// Retain and volumeMode Filesystem, PVC volumeMode Filesystem, pod restartPolicy Always, volume
// defaultMode 0644, StorageClass reclaimPolicy Delete and volumeBindingMode Immediate, and so on.
// Idempotent: defaulting a defaulted object changes nothing.
#pragma once

#include "api/core.h"
#include "api/snapshot.h"
#include "api/storage.h"

namespace kvol::api {

inline constexpr int32_t kDefaultFileMode = 0644;

void SetDefaults(PodSpec& spec);
void SetDefaults(PersistentVolumeClaimSpec& spec);

void SetDefaults(Namespace& obj);
void SetDefaults(Node& obj);
void SetDefaults(Pod& obj);
void SetDefaults(PersistentVolume& obj);
void SetDefaults(PersistentVolumeClaim& obj);
void SetDefaults(ConfigMap& obj);
void SetDefaults(Secret& obj);
void SetDefaults(Event& obj);
void SetDefaults(StorageClass& obj);
void SetDefaults(VolumeAttachment& obj);
void SetDefaults(CSIDriver& obj);
void SetDefaults(CSINode& obj);
void SetDefaults(CSIStorageCapacity& obj);
void SetDefaults(ResourceQuota& obj);
void SetDefaults(Lease& obj);
void SetDefaults(VolumeSnapshotClass& obj);
void SetDefaults(VolumeSnapshot& obj);
void SetDefaults(VolumeSnapshotContent& obj);

}  // namespace kvol::api
