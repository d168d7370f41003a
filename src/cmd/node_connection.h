// The API server's connection to the node agent running in the same process: pods' logs read
// from the agent's container log files, exec run in the containers' namespaces.
#pragma once

#include <optional>
#include <string>

#include "apiserver/node_connection.h"
#include "node/agent.h"

namespace kvol::cmd {

// What an agent serves at its own paths, as kubelet does: /metrics (the process's, in the
// Prometheus text format) and /healthz; nullopt for any other path.
std::optional<apiserver::ProxyResponse> AgentOwnPath(const std::string& path);

class LocalNodeConnection final : public apiserver::NodeConnection {
 public:
  explicit LocalNodeConnection(node::Agent& agent) : agent_(agent) {}

  apiserver::ApiOr<std::unique_ptr<apiserver::LogStream>> Logs(
      const api::Pod& pod, const apiserver::PodLogOptions& opts) override;
  apiserver::ApiOr<std::unique_ptr<apiserver::ExecProcess>> Exec(
      const api::Pod& pod, const apiserver::ExecOptions& opts) override;
  apiserver::ApiOr<apiserver::ProxyResponse> Get(const std::string& path) override;

 private:
  node::Agent& agent_;
};

}  // namespace kvol::cmd
