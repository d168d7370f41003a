// The csi volume plugin, as kubelet's: PersistentVolumes with a csi source are attached through
// a VolumeAttachment (when the driver's CSIDriver says attachRequired, or there is none), staged
// once per node with NodeStageVolume at
// plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/globalmount (when the driver offers
// STAGE_UNSTAGE_VOLUME), and published for each pod with NodePublishVolume at
// pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount. A Block volume is staged at
// plugins/kubernetes.io/csi/volumeDevices/staging/<pv> and published at
// .../volumeDevices/publish/<pv>/<pod uid>, which the pod's volumeDevices/ link points to.
// Beside each it writes vol_data.json, so that a restarted agent knows the driver and the
// handle of what it finds. It also grows filesystems (NodeExpandVolume) and reports usage and
// condition (NodeGetVolumeStats). An error after which
// the driver may still be working (kubelet's non-final codes) is reported with code
// DeadlineExceeded, so that the volume manager treats the mount as uncertain.
#pragma once

#include <memory>
#include <string>

#include "volume/plugin.h"

namespace kvol::volume::plugins {

inline constexpr char kCsiPluginName[] = "kubernetes.io/csi";

std::unique_ptr<VolumePlugin> NewCsiPlugin(Host& host);

}  // namespace kvol::volume::plugins
