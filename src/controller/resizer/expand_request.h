// What kvol's built-in CSI resizer derives from a claim and its volume, as external-resizer
// does: whether the volume is to be grown, and the ControllerExpandVolume request that grows it.
#pragma once

#include <map>
#include <string>

#include "api/core.h"
#include "base/status.h"
#include "csi/proto/csi.pb.h"

namespace kvol::controller::resizer {

// Whether `pv` is the volume of `claim` (a claim that wants more, see ClaimWantsMore) and is
// still to be grown by the controller: smaller than the request, or as big but with the claim
// not yet waiting for its node (a resize that stopped after the volume grew is finished by
// asking the driver again, which answers at once for a size reached).
bool VolumeNeedsResize(const api::PersistentVolumeClaim& claim, const api::PersistentVolume& pv);

// ControllerExpandVolume for `pv` to `required_bytes`: its handle, the capability it is used
// with, and the secrets of its controllerExpandSecretRef. InvalidArgument for a volume that
// is not CSI or has no handle.
StatusOr<::csi::v1::ControllerExpandVolumeRequest> MakeExpandRequest(
    const api::PersistentVolume& pv, int64_t required_bytes,
    const std::map<std::string, std::string>& secrets, bool single_node_multi_writer);

// The volume's size after a ControllerExpandVolume: the driver's answer, or what was asked
// for when the driver did not say.
int64_t ExpandedSize(const ::csi::v1::ControllerExpandVolumeResponse& resp,
                     int64_t required_bytes);

}  // namespace kvol::controller::resizer
