// The in-tree volume plugins. Each factory returns a plugin bound to `host`; the agent
// registers them with its PluginManager at start-up.
#pragma once

#include <memory>
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

}  // namespace kvol::volume::plugins
