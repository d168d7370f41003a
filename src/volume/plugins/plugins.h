// The in-tree volume plugins. Each factory returns a plugin bound to `host`; the agent
// registers them with its PluginManager at start-up.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "volume/plugin.h"

namespace kvol::volume::plugins {

inline constexpr std::string_view kEmptyDir = "kubernetes.io/empty-dir";
inline constexpr std::string_view kHostPath = "kubernetes.io/host-path";
inline constexpr std::string_view kLocal = "kubernetes.io/local-volume";
inline constexpr std::string_view kNfs = "kubernetes.io/nfs";
inline constexpr std::string_view kConfigMap = "kubernetes.io/configmap";
inline constexpr std::string_view kSecret = "kubernetes.io/secret";
inline constexpr std::string_view kDownwardApi = "kubernetes.io/downward-api";
inline constexpr std::string_view kProjected = "kubernetes.io/projected";

// emptyDir: a directory under the pod, or a tmpfs for medium Memory (sized by sizeLimit).
std::unique_ptr<VolumePlugin> NewEmptyDirPlugin(Host& host);
// hostPath (pod volumes and PVs): the node's path used in place, checked and created by type.
std::unique_ptr<VolumePlugin> NewHostPathPlugin(Host& host);
// local PVs: the node's directory bind-mounted under the pod.
std::unique_ptr<VolumePlugin> NewLocalPlugin(Host& host);
// nfs (pod volumes and PVs): mount -t nfs server:path, with readOnly and the PV's mountOptions.
std::unique_ptr<VolumePlugin> NewNfsPlugin(Host& host);
// configMap, secret (on a tmpfs), downwardAPI and projected (on a tmpfs): files written by the
// atomic writer, brought up to date whenever SetUp runs again.
std::unique_ptr<VolumePlugin> NewConfigMapPlugin(Host& host);
std::unique_ptr<VolumePlugin> NewSecretPlugin(Host& host);
std::unique_ptr<VolumePlugin> NewDownwardApiPlugin(Host& host);
std::unique_ptr<VolumePlugin> NewProjectedPlugin(Host& host);

// Every plugin above.
std::vector<std::unique_ptr<VolumePlugin>> InTreePlugins(Host& host);

// FlexVolume: drivers installed as executables <dir>/<vendor~driver>/<driver>, called with the
// FlexVolume exec protocol (JSON on stdout; {"status": "Not supported"} falls back to the
// default). Each driver is a plugin of its own, "flexvolume-<vendor>/<driver>", serving
// volumes whose flexVolume.driver is "<vendor>/<driver>". A driver whose `init` reports
// capability attach (the default) has its volumes attached, their device mounted for the node
// and bind-mounted into pods; the others are mounted by the driver's `mount`.
inline constexpr std::string_view kFlexVolumePrefix = "flexvolume-";
inline constexpr std::string_view kDefaultFlexVolumeDir =
    "/usr/libexec/kubernetes/kubelet-plugins/volume/exec";

struct FlexVolumeOptions {
  std::string dir = std::string(kDefaultFlexVolumeDir);
  // How long one call of a driver may run before it is killed (waitforattach included).
  std::chrono::milliseconds call_timeout{std::chrono::minutes(2)};
  // How often the prober looks for drivers installed since (by the host's clock).
  std::chrono::milliseconds probe_interval{std::chrono::seconds(1)};
};

// Finds the drivers installed under options.dir: each call (at most one per probe_interval;
// the others return nothing) gives a plugin for each driver it has not made before, once the
// driver's `init` succeeded (a driver whose init fails is logged and tried at the next call).
// Call it once at start and register what it gives, then make it the PluginManager's prober
// for drivers installed while the process runs.
PluginManager::Prober FlexVolumeProber(Host& host, FlexVolumeOptions options);

}  // namespace kvol::volume::plugins
