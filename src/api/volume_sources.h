// Which volume source a pod volume or a PV uses, counting the sources kvol keeps only as unknown
// fields (iscsi, rbd, cephfs, ...), in the order Kubernetes checks them.
#pragma once

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

// Whether two PV specs have the same volume source (the part that is immutable).
bool SamePersistentVolumeSource(const PersistentVolumeSpec& a, const PersistentVolumeSpec& b);

}  // namespace kvol::api
