// What `kvol server` and `kvol controller-manager` share: the in-process provisioners built
// from their flags, and running the controllers until a signal.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "client/client.h"
#include "cmd/commands.h"
#include "controller/attacher/attacher.h"
#include "controller/provisioner/capacity.h"
#include "controller/provisioner/node_local.h"
#include "controller/provisioner/provisioner.h"
#include "controller/resizer/resizer.h"
#include "controller/snapshotter/snapshotter.h"
#include "node/agent.h"
#include "os/mounter.h"
#include "volume/local_path.h"
#include "volume/subdir.h"

namespace kvol::cmd {

// Where the in-process provisioners work, for the start-up log.
struct Provisioners {
  std::string node_name;
  std::string shared_dir;
};

// Registers kvol.io/local-path and k8s-sigs.io/nfs-subdir-external-provisioner with `plugins`,
// from the flags; directories default to `default_dir`/storage and `default_dir`/shared, the
// node name to the hostname.
StatusOr<Provisioners> RegisterProvisioners(const ProvisionerOptions& opts,
                                            const std::string& default_dir,
                                            volume::PluginManager& plugins);

// A running node agent with the in-tree volume plugins and the mounter it uses.
struct RunningAgent {
  std::unique_ptr<os::Mounter> mounter;
  std::unique_ptr<node::Agent> agent;
  // The built-in attacher, provisioner, resizer and snapshotter of the CSI drivers registered
  // on the agent's node.
  std::unique_ptr<controller::attacher::Controller> attacher;
  std::unique_ptr<controller::provisioner::Controller> provisioner;
  std::unique_ptr<controller::provisioner::CapacityPublisher> capacity;
  std::unique_ptr<controller::resizer::Controller> resizer;
  std::unique_ptr<controller::snapshotter::Controller> snapshotter;
  // The node's own kvol.io/local-path, for claims given to it (NodeAgentOptions.local_path_root).
  std::unique_ptr<volume::LocalPathProvisioner> local_path;
  std::unique_ptr<controller::provisioner::NodeLocalController> local_provisioner;
  // Stops the provisioners, the snapshotter, the resizer and the attacher, then the agent.
  void Stop() {
    if (local_provisioner) local_provisioner->Stop();
    if (snapshotter) snapshotter->Stop();
    if (resizer) resizer->Stop();
    if (provisioner) provisioner->Stop();
    if (capacity) capacity->Stop();
    if (attacher) attacher->Stop();
    if (agent) agent->Stop();
  }
};

// Where the agent serves logs and exec, published on its Node.
struct AgentEndpoint {
  int port = 0;
  std::string certificate_sha256;
};

// The agent's root directory: from the flags, default `default_dir`/agent.
std::string AgentRootDir(const NodeAgentOptions& opts, const std::string& default_dir);

// Starts the node agent on `client`: node name from the flags (default the hostname), root
// directory AgentRootDir.
// Its plugins are registered with `plugins` when given (shared with the process's
// controllers), else with the agent's own manager. `endpoint`, when given, is published.
// `informers`, when given, are the process's, shared with its controllers.
StatusOr<RunningAgent> StartNodeAgent(client::Client& client, const NodeAgentOptions& opts,
                                      const std::string& default_dir,
                                      volume::PluginManager* plugins = nullptr,
                                      const AgentEndpoint* endpoint = nullptr,
                                      client::SharedInformers* informers = nullptr);

// The machine's hostname, or "kvol".
std::string Hostname();

// Blocks SIGINT and SIGTERM in this thread and every thread started after it, so that
// WaitForSignal receives them.
void BlockSignals();
// Waits for SIGINT or SIGTERM and logs which.
void WaitForSignal();

}  // namespace kvol::cmd
