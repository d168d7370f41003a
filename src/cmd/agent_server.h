// What `kvol agent` serves to the API server, as kubelet does on its port 10250: the logs of
// this node's containers and exec into them (the paths are in apiserver/node_client.h), over
// HTTPS with a self-signed certificate kept under ROOT_DIR/pki, whose SHA-256 the agent
// publishes on its Node for the server to pin. Only holders of the bearer token the agent
// itself uses with the API server are served.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "apiserver/http_server.h"
#include "apiserver/node_connection.h"
#include "base/status.h"

namespace kvol::cmd {

struct AgentServerOptions {
  std::string address = "0.0.0.0";
  int port = 10250;                // 0: any free port
  std::string pki_parent;          // the certificate goes to <pki_parent>/pki
  std::vector<std::string> hosts;  // names and addresses the certificate carries
  std::string token;
};

class AgentServer {
 public:
  // Listening once it returns; answers 503 until Serve.
  static StatusOr<std::unique_ptr<AgentServer>> Start(AgentServerOptions opts);
  ~AgentServer();

  int port() const { return http_->port(); }
  const std::string& certificate_sha256() const { return certificate_sha256_; }
  // Serves through `node` (null: 503 again). `node` must outlive its use here.
  void Serve(apiserver::NodeConnection* node) { node_.store(node); }
  void Stop();

 private:
  explicit AgentServer(std::string token) : token_(std::move(token)) {}
  void Handle(const apiserver::HttpRequest& req, apiserver::ResponseWriter& w);

  const std::string token_;
  std::string certificate_sha256_;
  std::atomic<apiserver::NodeConnection*> node_{nullptr};
  std::unique_ptr<apiserver::HttpServer> http_;
};

}  // namespace kvol::cmd
