// The HTTP face of the API: authentication, Kubernetes' URL layout, verbs, content negotiation
// (JSON or Table), watch streams, discovery and OpenAPI.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "apiserver/api.h"
#include "apiserver/http_server.h"
#include "apiserver/node_connection.h"
#include "apiserver/service_account_token.h"

namespace kvol::apiserver {

struct RestOptions {
  std::string token;  // the bearer token every request except health checks needs; also the
                      // one remote node agents take from the server
  std::string server_address;  // host:port, for /api
  std::chrono::seconds max_watch{1800};
  std::chrono::seconds bookmark_interval{60};
  // The node agents in this process, for pods' logs and exec; others are dialled at the
  // endpoint their Node publishes.
  NodeConnections* nodes = nullptr;
};

class RestHandler {
 public:
  RestHandler(Api& api, RestOptions opts);
  // Answers health checks and /version to anyone; the rest (the API, discovery, OpenAPI,
  // /metrics) to holders of the token, counted in apiserver_request_total.
  void Handle(const HttpRequest& req, ResponseWriter& w);
  // Ends every watch stream now and any started later, so that stopping the HTTP server need
  // not wait for them to notice. Call before HttpServer::Stop.
  void Shutdown();

 private:
  // The live view's page (ui/assets.h) at /ui/.
  void ServeUi(const HttpRequest& req, ResponseWriter& w);
  // `parts`: the path's segments (PathParts).
  void HandleAuthenticated(const HttpRequest& req, ResponseWriter& w,
                           const std::vector<std::string>& parts, const Authenticated& who);
  // Discovery and OpenAPI documents; false when `parts` names none.
  bool ServeDiscovery(const HttpRequest& req, ResponseWriter& w,
                      const std::vector<std::string>& parts);
  // A resource path: /api/v1/... or /apis/<group>/<version>/...
  void HandlePath(const HttpRequest& req, ResponseWriter& w, const std::vector<std::string>& parts);
  void HandleResource(const HttpRequest& req, ResponseWriter& w, Resource& res,
                      const std::string& ns, const std::string& name,
                      const std::string& subresource, bool cluster_list);
  void Watch(const HttpRequest& req, ResponseWriter& w, Resource& res, const std::string& ns,
             const ListOptions& opts, bool table);
  // PUT on a collection: several updates at once (see rest.cc).
  void UpdateTogether(const HttpRequest& req, ResponseWriter& w);
  void UpdateMany(const HttpRequest& req, ResponseWriter& w, Resource& res,
                  const std::string& ns);
  // GET .../pods/NAME/log
  void PodLog(const HttpRequest& req, ResponseWriter& w, const std::string& ns,
              const std::string& name);
  // GET .../pods/NAME/exec, upgraded to WebSocket (v5.channel.k8s.io or v4.channel.k8s.io).
  void PodExec(const HttpRequest& req, ResponseWriter& w, const std::string& ns,
               const std::string& name);
  // The pod and the connection to its node, for log and exec: the one registered for the
  // node (the agent in this process), else one to the endpoint the Node publishes.
  struct PodNode {
    api::Pod pod;
    NodeConnection* node = nullptr;
    std::unique_ptr<NodeConnection> remote;  // owns `node` when it is a remote agent
  };
  // `container` resolved (the only one, or the default-container annotation's) and checked.
  ApiOr<PodNode> PodOnNode(const std::string& ns, const std::string& name,
                           std::string& container);
  // The connection to a node's agent: the one registered for it, else one to the endpoint its
  // Node publishes (NotFound when there is no such Node).
  struct NodeLink {
    NodeConnection* node = nullptr;
    std::unique_ptr<NodeConnection> remote;  // owns `node` when it is a remote agent
  };
  ApiOr<NodeLink> LinkTo(const std::string& node_name);
  // GET .../nodes/NAME/proxy/PATH: the agent's own PATH (/metrics, /healthz).
  void NodeProxy(const HttpRequest& req, ResponseWriter& w, const std::string& node,
                 const std::string& path);

  Api& api_;
  RestOptions opts_;
  std::mutex streams_mu_;
  std::set<EventStream*> streams_;
  bool shutting_down_ = false;
};

}  // namespace kvol::apiserver
