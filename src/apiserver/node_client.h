// The API server's side of a node agent on another machine, for kubectl logs and exec. As
// kubelet does on its port 10250, `kvol agent` serves over HTTPS
//   GET /containerLogs/NAMESPACE/POD/POD-UID/CONTAINER?follow=&previous=&tailLines=&limitBytes=
//   GET /exec/NAMESPACE/POD/POD-UID/CONTAINER?command=...&stdin=&tty=  (WebSocket,
//       v5.channel.k8s.io)
//   GET /metrics, /healthz  (its own, for nodes/NAME/proxy/...)
// to holders of the bearer token it uses itself; the server dials the address and port its
// Node publishes (status.addresses, status.daemonEndpoints.kubeletEndpoint.Port) and accepts
// only the certificate whose SHA-256 the Node's kvol.io/agent-certificate-sha256 annotation
// names. (Kubernetes' API server does not verify kubelet's certificate by default.)
#pragma once

#include <memory>
#include <string>

#include "api/core.h"
#include "apiserver/errors.h"
#include "apiserver/node_connection.h"

namespace kvol::apiserver {

inline constexpr std::string_view kAgentLogPath = "/containerLogs/";
inline constexpr std::string_view kAgentExecPath = "/exec/";

struct NodeEndpoint {
  std::string node;
  std::string host;  // InternalIP, else ExternalIP, else Hostname
  int port = 0;
  std::string certificate_sha256;
};

// Where the node's agent listens, or 503 naming what the Node lacks.
ApiOr<NodeEndpoint> NodeEndpointOf(const api::Node& node);

class RemoteNodeConnection final : public NodeConnection {
 public:
  // `token` is presented as a bearer token.
  RemoteNodeConnection(NodeEndpoint endpoint, std::string token)
      : endpoint_(std::move(endpoint)), token_(std::move(token)) {}

  ApiOr<std::unique_ptr<LogStream>> Logs(const api::Pod& pod, const PodLogOptions& opts) override;
  ApiOr<std::unique_ptr<ExecProcess>> Exec(const api::Pod& pod, const ExecOptions& opts) override;
  ApiOr<ProxyResponse> Get(const std::string& path) override;

 private:
  const NodeEndpoint endpoint_;
  const std::string token_;
};

}  // namespace kvol::apiserver
