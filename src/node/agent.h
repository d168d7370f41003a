// The node agent: registers this machine's Node and keeps it Ready, watches the pods bound to
// it and the objects their volumes name, runs the volume manager over the plugins the caller
// registers (with the status writer that reports it on the pods), and the pod runtime that
// starts the pods' containers once their volumes are ready. Runs inside `kvol server`
// (in-process client) or as `kvol agent` (HTTPS).
//
//   node::Agent agent(client, {.node_name = "n1", .root_dir = "/var/lib/kvol/agent"}, mounter);
//   for (auto& p : volume::plugins::InTreePlugins(agent.host()))
//     agent.plugins().Register(std::move(p));
//   agent.Start();
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "client/client.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "client/pod_claims.h"
#include "node/csi_node_info.h"
#include "node/csi_registration.h"
#include "node/node_status.h"
#include "node/pluginwatcher/plugin_watcher.h"
#include "node/pressure.h"
#include "node/runtime/pod_runtime.h"
#include "node/token_manager.h"
#include "node/volume_health.h"
#include "node/volume_stats_metrics.h"
#include "node/volume_status.h"
#include "node/volumemanager/volume_manager.h"
#include "os/clock.h"
#include "os/exec.h"
#include "os/machine.h"
#include "os/mounter.h"
#include "volume/plugin.h"
#include "volume/plugins/csi/csi_drivers.h"

namespace kvol::node {

struct AgentOptions {
  std::string node_name;
  std::string root_dir;  // pods/<uid>/volumes/..., plugins/
  std::map<std::string, std::string> node_labels;
  std::string version = "0.0.0";  // kvol's, shown as the node's kubelet and runtime version
  std::chrono::milliseconds resync{60'000};
  // How often every pod volume's usage and condition are gathered (kubelet's
  // --volume-stats-agg-period).
  std::chrono::milliseconds volume_stats_period{60'000};
  // The kvol binary the pod runtime starts containers with (`kvol container-init`); "" runs
  // no containers (volumes only; pods being deleted are still finished).
  std::string init_binary;
  // A CRI runtime's endpoint (kubelet's --container-runtime-endpoint,
  // "unix:///run/containerd/containerd.sock"): containers run from their images through it,
  // rather than from the node's own binaries. Pods' logs then go under pod_logs_dir.
  std::string container_runtime_endpoint;
  std::string pod_logs_dir = "/var/log/pods";
  // The process's plugin manager, shared with its controllers (`kvol server`); the agent's
  // own when null.
  volume::PluginManager* plugins = nullptr;
  // The process's informers of claims, volumes, ConfigMaps and Secrets, shared with its
  // controllers (`kvol server`); the agent's own when null. The pod informer is the agent's own
  // always: only this node's pods.
  client::SharedInformers* informers = nullptr;
  // The node's InternalIP (pods' hostIP); "" for the machine's first non-loopback address.
  std::string node_ip;
  // Where the agent serves logs and exec to the API server, published on its Node: the port
  // (status.daemonEndpoints.kubeletEndpoint.Port; 0 for none) and annotations (the pinned
  // certificate's SHA-256).
  int32_t daemon_port = 0;
  std::map<std::string, std::string> node_annotations;
  // Node paths no container may see, besides root_dir and the node's secrets: kvol's data
  // directory (its store, token, kubeconfig and CA key).
  std::vector<std::string> hidden_paths;
  // CSI drivers registered without a registration socket (--csi-driver unix:///...); drivers
  // also register through <root_dir>/plugins_registry/.
  std::vector<std::string> csi_endpoints;
  // Whether the attach/detach controller attaches and detaches this node's volumes
  // (--enable-controller-attach-detach): the Node then has the annotation
  // volumes.kubernetes.io/controller-managed-attach-detach: "true", and the agent waits for
  // the controller's status.volumesAttached instead of attaching.
  bool controller_attach_detach = true;
  // The process's table of registered CSI drivers, shared with its controllers (`kvol
  // server`); the agent's own when null.
  volume::plugins::CsiDrivers* csi_drivers = nullptr;
  // What sets the node's MemoryPressure, DiskPressure and PIDPressure conditions (kubelet's
  // --eviction-hard and --eviction-pressure-transition-period).
  std::vector<Threshold> eviction_hard = DefaultEvictionHard();
  std::chrono::milliseconds eviction_pressure_transition_period{std::chrono::minutes(5)};
};

class Agent {
 public:
  Agent(client::Client& client, AgentOptions options, os::Mounter& mounter,
        os::Exec& exec = os::RealExec(), os::Clock& clock = os::RealClock());
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // What plugins are made with, and where they are registered before Start.
  volume::Host& host();
  volume::PluginManager& plugins() { return *plugins_; }
  // The CSI drivers registered on this node.
  volume::plugins::CsiDrivers& csi_drivers() { return *csi_drivers_; }

  // Registers the node, fills the caches (Unavailable if they do not sync in time), and
  // starts the volume manager.
  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();

  const std::string& node_name() const { return options_.node_name; }
  volumemanager::VolumeManager& volume_manager() { return *volume_manager_; }
  runtime::PodRuntime& pod_runtime() { return *runtime_; }
  // The pod of that namespace and name on this node, from the agent's cache.
  std::shared_ptr<const api::Pod> FindPod(std::string_view ns, std::string_view name) const;

 private:
  // The volume manager with its status writer, and the pod runtime, over the caches; Start
  // starts them once the caches are synced.
  void MakeVolumeManager();
  // The backend the pod runtime runs containers with: the CRI runtime's, kvol's own, or none.
  StatusOr<std::unique_ptr<runtime::Backend>> MakeBackend();
  void MakePodRuntime(std::unique_ptr<runtime::Backend> backend);
  // Watches plugins_registry/ and registers the --csi-driver endpoints.
  Status StartPluginWatcher();
  class AgentHost;

  client::Client& client_;
  const AgentOptions options_;
  os::Clock& clock_;
  const os::MachineInfo machine_;
  std::unique_ptr<AgentHost> host_;
  volume::PluginManager own_plugins_;
  volume::PluginManager* plugins_;
  volume::plugins::CsiDrivers own_csi_drivers_;
  volume::plugins::CsiDrivers* csi_drivers_;
  std::unique_ptr<CsiNodeInfo> csi_node_info_;
  std::unique_ptr<CsiRegistrationHandler> csi_registration_;
  std::unique_ptr<pluginwatcher::PluginWatcher> plugin_watcher_;
  std::unique_ptr<client::EventRecorder> recorder_;
  // The claims this node's pods use, kept by the pod handlers; before the informers, which
  // call into it until they go.
  client::PodClaimIndex pod_claims_;
  std::unique_ptr<client::Informer<api::Pod>> pods_;
  // This node's Node object: its status.volumesAttached and volumesInUse, when the controller
  // manages attachments.
  std::unique_ptr<client::Informer<api::Node>> node_;
  std::unique_ptr<client::InformerScope> informers_;
  client::Informer<api::PersistentVolumeClaim>* claims_ = nullptr;
  client::Informer<api::PersistentVolume>* volumes_ = nullptr;
  client::Informer<api::ConfigMap>* config_maps_ = nullptr;
  client::Informer<api::Secret>* secrets_ = nullptr;
  // CSIDriver objects: attachRequired, volumeLifecycleModes, podInfoOnMount, requiresRepublish.
  client::Informer<api::CSIDriver>* csi_driver_objects_ = nullptr;
  std::unique_ptr<PressureMonitor> pressure_;  // asked by status_'s thread only
  std::unique_ptr<NodeStatusManager> status_;
  std::unique_ptr<VolumeStatusWriter> volume_status_;
  std::unique_ptr<volumemanager::VolumeManager> volume_manager_;
  std::unique_ptr<VolumeHealthMonitor> volume_health_;
  // kubelet_volume_stats_* and volume_manager_total_volumes, while they run.
  std::shared_ptr<metrics::Collector> volume_metrics_;
  std::unique_ptr<runtime::PodRuntime> runtime_;
  // Pods' service account tokens, for their projected volumes.
  TokenManager tokens_;
};

}  // namespace kvol::node
