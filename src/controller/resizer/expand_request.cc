#include "controller/resizer/expand_request.h"

#include "api/pod_status.h"
#include "api/well_known.h"
#include "volume/plugins/csi/csi_util.h"

namespace kvol::controller::resizer {

bool VolumeNeedsResize(const api::PersistentVolumeClaim& claim, const api::PersistentVolume& pv) {
  if (!pv.spec.claim_ref || pv.spec.claim_ref->uid != claim.metadata.uid ||
      pv.spec.claim_ref->namespace_ != claim.metadata.namespace_) {
    return false;
  }
  auto requested = claim.spec.resources.requests.find("storage");
  if (requested == claim.spec.resources.requests.end()) return false;
  auto size = pv.spec.capacity.find("storage");
  if (size != pv.spec.capacity.end() && !(size->second < requested->second)) {
    return !api::HasClaimCondition(claim.status, api::kClaimFileSystemResizePending);
  }
  return true;
}

StatusOr<::csi::v1::ControllerExpandVolumeRequest> MakeExpandRequest(
    const api::PersistentVolume& pv, int64_t required_bytes,
    const std::map<std::string, std::string>& secrets, bool single_node_multi_writer) {
  if (!pv.spec.csi) {
    return InvalidArgumentError("volume " + pv.metadata.name + " is not a CSI volume");
  }
  if (pv.spec.csi->volume_handle.empty()) {
    return InvalidArgumentError("volume " + pv.metadata.name +
                                ": spec.csi.volumeHandle is empty");
  }
  ::csi::v1::ControllerExpandVolumeRequest req;
  req.set_volume_id(pv.spec.csi->volume_handle);
  req.mutable_capacity_range()->set_required_bytes(required_bytes);
  for (const auto& [k, v] : secrets) (*req.mutable_secrets())[k] = v;
  *req.mutable_volume_capability() =
      volume::plugins::VolumeCapabilityOf(pv.spec, single_node_multi_writer);
  return req;
}

int64_t ExpandedSize(const ::csi::v1::ControllerExpandVolumeResponse& resp,
                     int64_t required_bytes) {
  return resp.capacity_bytes() > 0 ? resp.capacity_bytes() : required_bytes;
}

}  // namespace kvol::controller::resizer
