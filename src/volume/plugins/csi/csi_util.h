// What the csi volume plugin and kvol's built-in attacher both derive from a PersistentVolume:
// the CSI volume capability, as kubelet and external-attacher map it.
#pragma once

#include <map>
#include <string>

#include "api/core.h"
#include "base/status.h"
#include "csi/proto/csi.pb.h"

namespace kvol::volume::plugins {

// The capability of a CSI PersistentVolume: block for volumeMode Block, else a mount with the
// volume's fsType and mountOptions; the access mode from its first access mode (ReadWriteOnce
// as SINGLE_NODE_MULTI_WRITER when the driver offers it, as kubelet does).
::csi::v1::VolumeCapability VolumeCapabilityOf(const api::PersistentVolumeSpec& pv,
                                               bool single_node_multi_writer);

// A Secret's data as the CSI secrets of a request: each value decoded from base64.
// InvalidArgument naming the key that is not base64.
StatusOr<std::map<std::string, std::string>> CsiSecrets(const api::Secret& secret);

}  // namespace kvol::volume::plugins
