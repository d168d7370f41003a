// What one container of a pod runs with: its command line, environment and mounts, computed
// from the pod's spec, the volumes the volume manager set up, and the ConfigMaps and Secrets
// its environment names. Kubernetes' rules: env entries in order, each able to use the ones
// before it as $(NAME); command and args expanded the same way ($$ for a literal $); subPaths
// resolved inside their volume.
//
// Images are not pulled: a container runs the node's own binaries. A container with neither
// command nor args (the image's entrypoint, which kvol does not have) runs a stand-in that
// waits until it is told to stop (`kvol pause`).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "api/core.h"
#include "base/status.h"
#include "node/runtime/container.h"
#include "volume/plugin.h"

namespace kvol::node::runtime {

// Where the volume manager set a pod volume up: a directory, or (block) the device's path.
struct MountedVolume {
  std::string path;
  bool block = false;
  bool read_only = false;  // bound read-only into every container, whatever its volumeMount says
};

inline constexpr std::string_view kDefaultPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// `$(NAME)` replaced by vars[NAME] when it is defined (left as written when not), `$$(NAME)`
// as the literal `$(NAME)`.
std::string ExpandVars(std::string_view in, const std::map<std::string, std::string>& vars);

// The container's environment, "NAME=value" in order: PATH and HOSTNAME, then spec.env.
// Errors in kubelet's words for CreateContainerConfigError: `configmap "x" not found`,
// `couldn't find key k in ConfigMap default/x`.
StatusOr<std::vector<std::string>> ContainerEnv(const api::Pod& pod, const api::Container& c,
                                                volume::Host& host);

// The command line: command + args, expanded with the environment; `stand_in` when the
// container gives neither.
std::vector<std::string> ContainerArgv(const api::Container& c, const std::vector<std::string>& env,
                                       const std::vector<std::string>& stand_in);

// volumeMounts and volumeDevices as bind mounts: a volume's directory (or the file or
// directory its subPath names inside it) at mountPath, a block volume's device at devicePath.
// A subPathExpr is expanded with the container's environment `env` ("NAME=value") first.
StatusOr<std::vector<BindMount>> ContainerMounts(
    const api::Container& c, const std::map<std::string, MountedVolume>& volumes,
    const std::vector<std::string>& env = {});

}  // namespace kvol::node::runtime
