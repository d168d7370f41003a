// Which volume source a pod volume or a PV uses, counting the sources kvol keeps only as unknown
// fields (iscsi, rbd, cephfs, ...), in the order Kubernetes checks them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/core.h"

namespace kvol::api {

// JSON keys of every pod volume source, in Kubernetes' validation order.
const std::vector<std::string_view>& PodVolumeSourceKeys();
// JSON keys of every PersistentVolume source, in Kubernetes' validation order.
const std::vector<std::string_view>& PersistentVolumeSourceKeys();

// The source keys present on a volume / PV spec, in validation order.
std::vector<std::string_view> PresentSources(const Volume& v);
std::vector<std::string_view> PresentSources(const PersistentVolumeSpec& spec);

// The claim a pod volume uses: its persistentVolumeClaim's claimName, or for a generic
// ephemeral volume the claim made for it, "<pod>-<volume>"; nothing for other sources.
std::optional<std::string> ClaimNameOf(const Pod& pod, const Volume& v);
// Why a pod may not use `claim` as the claim of one of its ephemeral volumes (another pod's, or
// one made by hand, under the same name), in Kubernetes' words; nothing when the pod controls it.
std::optional<std::string> EphemeralClaimNotForPod(const Pod& pod,
                                                   const PersistentVolumeClaim& claim);

// Whether two PV specs have the same volume source (the part that is immutable).
bool SamePersistentVolumeSource(const PersistentVolumeSpec& a, const PersistentVolumeSpec& b);

}  // namespace kvol::api
