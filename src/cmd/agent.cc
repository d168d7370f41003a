// `kvol agent`: the node agent on a machine of its own, talking to the API server over HTTPS,
// as kubelet does: it registers the machine's Node and sets up the volumes of the pods bound
// to it.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/log.h"
#include "client/http.h"
#include "cmd/agent_server.h"
#include "cmd/commands.h"
#include "cmd/controllers.h"
#include "cmd/node_connection.h"
#include "node/runtime/container.h"
#include "os/machine.h"

namespace kvol::cmd {

int RunAgent(const AgentCommandOptions& opts) {
  BlockSignals();
  client::HttpConfig cfg;
  if (!opts.kubeconfig.empty()) {
    auto loaded = client::LoadKubeconfig(opts.kubeconfig);
    if (!loaded.ok()) {
      log::Error(loaded.status().message());
      return 1;
    }
    cfg = *std::move(loaded);
  } else {
    if (opts.server.empty()) {
      log::Error("kvol agent: give --kubeconfig, or --server with --token");
      return 1;
    }
    cfg.server = opts.server;
    cfg.token = opts.token;
    cfg.insecure_skip_tls_verify = opts.insecure_skip_tls_verify;
    if (!opts.certificate_authority.empty()) {
      std::ifstream in(opts.certificate_authority, std::ios::binary);
      std::stringstream pem;
      pem << in.rdbuf();
      if (!in || pem.str().empty()) {
        log::Error("--certificate-authority: cannot read " + opts.certificate_authority);
        return 1;
      }
      cfg.ca_pem = pem.str();
    }
  }
  const std::string server = cfg.server;
  const std::string token = cfg.token;
  auto client = client::HttpClient::Create(std::move(cfg));
  if (!client.ok()) {
    log::Error(client.status().message());
    return 1;
  }
  const std::string root_dir = AgentRootDir(opts.node, opts.data_dir);
  // Its credentials are the agent's alone: covered in every container's root.
  NodeAgentOptions node = opts.node;
  if (node.local_path_root.empty()) node.local_path_root = opts.data_dir + "/storage";
  if (!opts.kubeconfig.empty()) node.hidden_files.push_back(opts.kubeconfig);
  AgentServerOptions so;
  so.address = opts.address;
  so.port = opts.port;
  so.pki_parent = root_dir;
  so.hosts = {opts.node.node_name.empty() ? Hostname() : opts.node.node_name,
              opts.node.node_ip.empty() ? os::ReadMachineInfo(root_dir).address
                                        : opts.node.node_ip};
  so.token = token;
  auto served = AgentServer::Start(so);
  if (!served.ok()) {
    log::Error(served.status().Annotate("serving logs and exec").message());
    return 1;
  }
  if (token.empty()) log::Warn("agent: no bearer token, so logs and exec are refused to all");
  const AgentEndpoint endpoint{(*served)->port(), (*served)->certificate_sha256()};
  auto agent = StartNodeAgent(**client, node, opts.data_dir, nullptr, &endpoint);
  if (!agent.ok()) {
    log::Error(agent.status().message());
    return 1;
  }
  LocalNodeConnection local(*agent->agent);
  (*served)->Serve(&local);
  log::Info("agent: node " + agent->agent->node_name() + " on API server " + server +
            ", volumes under " + root_dir);
  log::Info("agent: logs and exec served on " + opts.address + ":" +
            std::to_string(endpoint.port) + ", certificate SHA-256 " +
            endpoint.certificate_sha256);
  log::Info("kvol agent is ready");
  WaitForSignal();
  (*served)->Stop();
  agent->Stop();
  log::Info("stopped");
  return 0;
}

int RunContainerInit(const std::string& spec_path) {
  std::ifstream in(spec_path);
  std::stringstream text;
  text << in.rdbuf();
  auto spec = node::runtime::SpecFromJson(text.str());
  if (!in || !spec.ok()) {
    std::fprintf(stderr, "kvol: container init: cannot read %s: %s\n", spec_path.c_str(),
                 spec.ok() ? "unreadable" : spec.status().message().c_str());
    return 127;
  }
  return node::runtime::RunContainerInit(*spec);
}

}  // namespace kvol::cmd
