// Subcommands of the kvol binary, each registered on the CLI11 app by src/cmd/main.cc.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "csi/driver/driver.h"
#include "node/pressure.h"
#include "volume/plugins/plugins.h"

namespace kvol::cmd {

// kvol's version (`kvol --version`, and the version its nodes report).
inline constexpr const char* kVersion = "0.1.0";

struct ValidateOptions {
  std::vector<std::string> files;  // files, directories, or "-" for standard input
};

// The in-process provisioners' flags.
struct ProvisionerOptions {
  std::string node_name;        // default: the hostname
  std::string local_path_root;  // default: <data-dir>/storage
  std::string shared_dir;       // default: <data-dir>/shared
  std::string shared_nfs;       // SERVER:PATH when shared_dir is that export
};

// The node agent's flags, shared by `kvol server` (the agent for this machine) and `kvol agent`.
struct NodeAgentOptions {
  std::string node_name;    // default: the hostname
  std::string root_dir;     // default: <data-dir>/agent
  std::string node_labels;  // "k=v,k2=v2", added to the node's well-known labels
  std::string node_ip;      // default: the machine's first non-loopback IPv4 address
  std::string volume_plugin_dir = std::string(volume::plugins::kDefaultFlexVolumeDir);
  // Files of the agent's own no container may see (its --kubeconfig), besides the data
  // directory, its root directory and the node's secrets.
  std::vector<std::string> hidden_files;
  // CSI drivers to register without node-driver-registrar: unix:///path/csi.sock.
  std::vector<std::string> csi_drivers;
  // How often volumes' usage and condition are gathered (--volume-stats-agg-period).
  std::chrono::milliseconds volume_stats_period{60'000};
  // How often the volume manager sets every pod's volumes up again (--sync-frequency):
  // configMaps, secrets and projected tokens are brought up to date at least this often.
  std::chrono::milliseconds sync_frequency{60'000};
  // The attach/detach controller attaches this node's volumes
  // (--enable-controller-attach-detach).
  bool controller_attach_detach = true;
  // The node's CSI provisioner also serves claims no node was selected for (Immediate
  // binding): the agent inside `kvol server`.
  bool central_provisioner = false;
  // Where the node's own kvol.io/local-path makes the directories of claims given to this node;
  // empty when the PV controller of the same process serves the node (`kvol server`).
  std::string local_path_root;
  // A CRI runtime to run containers from their images (--container-runtime-endpoint); kvol's
  // own runtime, the node's binaries, when empty. Pods' logs go under pod_logs_dir then.
  std::string container_runtime_endpoint;
  std::string pod_logs_dir = "/var/log/pods";
  // What sets the node's pressure conditions (--eviction-hard,
  // --eviction-pressure-transition-period).
  std::vector<node::Threshold> eviction_hard = node::DefaultEvictionHard();
  std::chrono::milliseconds eviction_pressure_transition_period{std::chrono::minutes(5)};
};

// The attach/detach controller's settings.
struct AttachDetachOptions {
  // How long a volume a node may still use waits before it is detached from a node that is not
  // Ready (--max-wait-for-unmount).
  std::chrono::milliseconds max_wait_for_unmount{std::chrono::minutes(6)};
  bool disable_force_detach_on_timeout = false;
};

struct ServerOptions {
  std::string data_dir = "./data";
  std::string listen = "127.0.0.1:6443";
  std::string store = "sqlite";  // or etcd://host:port[,host:port...]
  ProvisionerOptions provisioners;
  AttachDetachOptions attach_detach;
  bool controllers = true;  // run the controllers and the scheduler in this process
  bool agent = true;        // run the node agent for this machine in this process
  // Run the bundled CSI driver, loop.csi.kvol.io, for this machine's node (with the agent).
  bool bundled_csi_driver = true;
  // "containerd": run a containerd of the server's own (under DATA_DIR/containerd) and the
  // agent's pods through it; "kvol": kvol's own runtime.
  std::string container_runtime = "kvol";
  std::string pause_image;  // the sandboxes' image for that containerd; its default if empty
  NodeAgentOptions node;
  // Service account tokens: their issuer, the key that signs them (default
  // DATA_DIR/pki/sa.key, made at first start), and the longest one issued (0: no limit).
  std::string service_account_issuer;
  std::string service_account_signing_key_file;
  std::chrono::seconds service_account_max_token_expiration{0};
};

struct AgentCommandOptions {
  std::string kubeconfig;  // or:
  std::string server;      // https://HOST:PORT
  std::string token;
  std::string certificate_authority;  // CA file for the server's certificate
  bool insecure_skip_tls_verify = false;
  std::string data_dir = "/var/lib/kvol";  // root dir default: <data-dir>/agent
  NodeAgentOptions node;
  std::string address = "0.0.0.0";  // where logs and exec are served to the API server
  int port = 10250;
};

struct ControllerManagerOptions {
  std::string kubeconfig;
  std::string data_dir = "/var/lib/kvol";  // where local-path and shared volumes go by default
  ProvisionerOptions provisioners;
  AttachDetachOptions attach_detach;
  int workers = 16;
  // Where FlexVolume drivers are installed, as on the nodes (kube-controller-manager's
  // --flex-volume-plugin-dir).
  std::string flex_volume_plugin_dir = std::string(volume::plugins::kDefaultFlexVolumeDir);
};

// Runs until SIGINT/SIGTERM; returns the process exit code.
int RunServer(const ServerOptions& opts);

// The controllers and the scheduler as their own process, on a remote API server (HTTPS from a
// kubeconfig); runs until SIGINT/SIGTERM and returns the process exit code.
int RunControllerManager(const ControllerManagerOptions& opts);

// The node agent for this machine against a remote API server; runs until SIGINT/SIGTERM and
// returns the process exit code.
int RunAgent(const AgentCommandOptions& opts);

// `kvol container-init SPEC`: becomes a container's first process (node/runtime); returns the
// container's exit status.
int RunContainerInit(const std::string& spec_path);

struct CsiCallOptions {
  std::string endpoint;
  enum class Call { kCreate, kDelete, kExpand } call = Call::kCreate;
  std::string name;
  int64_t size = 0;
  std::string fs_type;
  bool block = false;
  std::string volume_id;
};

// `kvol csi create-volume|delete-volume|expand-volume`; prints the answer as JSON; returns the
// exit code.
int RunCsiCall(const CsiCallOptions& opts);

// The bundled CSI driver on its own; runs until SIGINT/SIGTERM and returns the process exit code.
int RunCsiDriver(const csi::driver::DriverOptions& opts);

// Prints one line per object ("Kind/name: valid" or one line per problem) and per unreadable
// document; returns the process exit code: 0 when everything is valid.
int RunValidate(const ValidateOptions& opts);

}  // namespace kvol::cmd
