// What the csi volume plugin and kvol's built-in attacher both derive from a PersistentVolume:
// the CSI volume capability, as kubelet and external-attacher map it.
#pragma once

#include "api/core.h"
#include "csi/proto/csi.pb.h"

namespace kvol::volume::plugins {

// The capability of a CSI PersistentVolume: block for volumeMode Block, else a mount with the
// volume's fsType and mountOptions; the access mode from its first access mode (ReadWriteOnce
// as SINGLE_NODE_MULTI_WRITER when the driver offers it, as kubelet does).
::csi::v1::VolumeCapability VolumeCapabilityOf(const api::PersistentVolumeSpec& pv,
                                               bool single_node_multi_writer);

}  // namespace kvol::volume::plugins
