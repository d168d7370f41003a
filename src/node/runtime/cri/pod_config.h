// How a pod and its containers are described to a CRI runtime, as kubelet's kuberuntime does
// (generatePodSandboxConfig, generateContainerConfig): the metadata and the labels kubelet
// finds its sandboxes and containers by again, the log directory and paths `kubectl logs`
// reads, the namespaces, DNS, the command with its $(VAR)s expanded, the environment, the
// volumes' mounts and devices, the security context and the resources.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/core.h"
#include "base/status.h"
#include "node/runtime/container.h"
#include "node/runtime/cri/api.pb.h"

namespace kvol::node::cri {

namespace pb = ::runtime::v1;

// Labels kubelet puts on every sandbox and container (kubelet's types package).
inline constexpr std::string_view kPodNameLabel = "io.kubernetes.pod.name";
inline constexpr std::string_view kPodNamespaceLabel = "io.kubernetes.pod.namespace";
inline constexpr std::string_view kPodUidLabel = "io.kubernetes.pod.uid";
inline constexpr std::string_view kContainerNameLabel = "io.kubernetes.container.name";
// Annotations kubelet reads back from a container's status.
inline constexpr std::string_view kRestartCountAnnotation = "io.kubernetes.container.restartCount";
inline constexpr std::string_view kTerminationMessagePathAnnotation =
    "io.kubernetes.container.terminationMessagePath";
inline constexpr std::string_view kTerminationMessagePolicyAnnotation =
    "io.kubernetes.container.terminationMessagePolicy";
inline constexpr std::string_view kTerminationGracePeriodAnnotation =
    "io.kubernetes.pod.terminationGracePeriod";

// Where kubelet keeps pods' logs: a directory per pod under it.
inline constexpr std::string_view kPodLogsRoot = "/var/log/pods";

// The node's namespaces a pod's spec asks for (hostNetwork, hostPID, hostIPC), and whether its
// containers share one PID namespace (shareProcessNamespace).
struct PodNamespaces {
  bool host_network = false;
  bool host_pid = false;
  bool host_ipc = false;
  bool share_process_namespace = false;
};

// A resolv.conf's nameservers, search domains and options.
struct Resolv {
  std::vector<std::string> servers, searches, options;
};

// `text` as resolv.conf(5) reads it: the last search line wins, comments are skipped.
Resolv ParseResolvConf(std::string_view text);

struct SandboxInputs {
  std::string logs_root = std::string(kPodLogsRoot);
  PodNamespaces namespaces;
  // The runtime's NetworkReady. When false (no CNI configuration), the pod runs in the node's
  // network, as with hostNetwork, and has no hostname of its own.
  bool network_ready = false;
  std::string hostname;  // the pod's (spec.hostname, or its name)
  Resolv dns;            // the node's, for dnsPolicy Default and ClusterFirst (no cluster DNS)
  uint32_t attempt = 0;  // the sandboxes made for the pod before this one
};

// <logs_root>/<namespace>_<name>_<uid>, as kubelet names a pod's log directory.
std::string PodLogDirectory(std::string_view logs_root, const api::Pod& pod);

// Whether the pod runs in the node's network.
bool UsesNodeNetwork(const SandboxInputs& in);

pb::PodSandboxConfig SandboxConfig(const api::Pod& pod, const SandboxInputs& in);

struct ContainerInputs {
  uint32_t restart_count = 0;    // the runs before this one: the attempt, and the log's name
  std::string image;             // the runtime's reference to the pulled image
  std::vector<std::string> env;  // "NAME=value", as runtime::ContainerEnv resolves them
  std::vector<runtime::BindMount> mounts;  // as runtime::ContainerMounts resolves them
};

// The configuration of container `c` in the sandbox made from `sandbox`. InvalidArgument,
// naming the field, for a mountPropagation kvol does not know.
StatusOr<pb::ContainerConfig> ContainerConfig(const api::Pod& pod, const api::Container& c,
                                              const SandboxInputs& sandbox,
                                              const ContainerInputs& in);

}  // namespace kvol::node::cri
