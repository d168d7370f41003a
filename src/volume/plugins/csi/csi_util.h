// What the csi volume plugin and kvol's attachers both derive from a PersistentVolume and its
// driver: the CSI volume capability, as kubelet and external-attacher map it, and whether the
// volume is attached at all.
#pragma once

#include <map>
#include <string>

#include "api/core.h"
#include "api/storage.h"
#include "base/status.h"
#include "csi/proto/csi.pb.h"

namespace kvol::volume::plugins {

// The capability of a CSI PersistentVolume: block for volumeMode Block, else a mount with the
// volume's fsType and mountOptions; the access mode from its first access mode (ReadWriteOnce
// as SINGLE_NODE_MULTI_WRITER when the driver offers it, as kubelet does).
::csi::v1::VolumeCapability VolumeCapabilityOf(const api::PersistentVolumeSpec& pv,
                                               bool single_node_multi_writer);

// Whether a CSI volume of a driver is attached (a VolumeAttachment): unless its CSIDriver object
// says attachRequired: false. Without the object (null) it is, as in Kubernetes.
inline bool AttachRequired(const api::CSIDriver* driver) {
  return !driver || driver->spec.attach_required.value_or(true);
}

// A Secret's data as the CSI secrets of a request: each value decoded from base64.
// InvalidArgument naming the key that is not base64.
StatusOr<std::map<std::string, std::string>> CsiSecrets(const api::Secret& secret);

}  // namespace kvol::volume::plugins
