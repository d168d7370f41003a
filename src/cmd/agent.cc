// `kvol agent`: the node agent on a machine of its own, talking to the API server over HTTPS,
// as kubelet does: it registers the machine's Node and sets up the volumes of the pods bound
// to it.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/log.h"
#include "client/http.h"
#include "cmd/commands.h"
#include "cmd/controllers.h"
#include "node/runtime/container.h"

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
  auto client = client::HttpClient::Create(std::move(cfg));
  if (!client.ok()) {
    log::Error(client.status().message());
    return 1;
  }
  auto agent = StartNodeAgent(**client, opts.node, opts.data_dir);
  if (!agent.ok()) {
    log::Error(agent.status().message());
    return 1;
  }
  log::Info("agent: node " + agent->agent->node_name() + " on API server " + server +
            ", volumes under " +
            (opts.node.root_dir.empty() ? opts.data_dir + "/agent" : opts.node.root_dir));
  log::Info("kvol agent is ready");
  WaitForSignal();
  agent->agent->Stop();
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
