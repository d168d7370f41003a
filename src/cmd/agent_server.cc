#include "cmd/agent_server.h"

#include "apiserver/node_client.h"
#include "apiserver/streaming.h"
#include "apiserver/tls.h"
#include "base/strings.h"
#include "cmd/node_connection.h"

namespace kvol::cmd {
namespace {

// NAMESPACE/POD/POD-UID/CONTAINER after `prefix`, or false.
bool ParsePodPath(std::string_view path, std::string_view prefix, api::Pod* pod,
                  std::string* container) {
  if (path.substr(0, prefix.size()) != prefix) return false;
  path.remove_prefix(prefix.size());
  std::string parts[4];
  for (int i = 0; i < 4; ++i) {
    const size_t slash = path.find('/');
    if ((i < 3) == (slash == std::string_view::npos)) return false;
    parts[i] = std::string(path.substr(0, slash));
    if (parts[i].empty()) return false;
    path = i < 3 ? path.substr(slash + 1) : std::string_view();
  }
  pod->metadata.namespace_ = parts[0];
  pod->metadata.name = parts[1];
  pod->metadata.uid = parts[2];
  *container = parts[3];
  return true;
}

}  // namespace

StatusOr<std::unique_ptr<AgentServer>> AgentServer::Start(AgentServerOptions opts) {
  auto tls = apiserver::EnsureTls(opts.pki_parent, opts.hosts);
  if (!tls.ok()) return tls.status().Annotate("the agent's certificate");
  auto sha = apiserver::CertificateSha256(tls->server_cert_pem);
  if (!sha.ok()) return sha.status().Annotate("the agent's certificate");
  std::unique_ptr<AgentServer> s(new AgentServer(opts.token));
  s->certificate_sha256_ = *sha;
  apiserver::HttpServerOptions ho;
  ho.host = opts.address;
  ho.port = opts.port;
  ho.cert_pem = tls->server_cert_pem;
  ho.key_pem = tls->server_key_pem;
  ho.max_body_bytes = 64 * 1024;
  AgentServer* self = s.get();
  s->http_ = std::make_unique<apiserver::HttpServer>(
      ho, [self](const apiserver::HttpRequest& req, apiserver::ResponseWriter& w) {
        self->Handle(req, w);
      });
  KVOL_RETURN_IF_ERROR(s->http_->Start());
  return s;
}

AgentServer::~AgentServer() { Stop(); }

void AgentServer::Stop() {
  node_.store(nullptr);
  if (http_) http_->Stop();
}

void AgentServer::Handle(const apiserver::HttpRequest& req, apiserver::ResponseWriter& w) {
  using apiserver::SendError;
  const std::string auth = req.Header("authorization");
  if (token_.empty() || auth.rfind("Bearer ", 0) != 0 ||
      !SameSecret(std::string_view(auth).substr(7), token_)) {
    return SendError(w, apiserver::Unauthorized());
  }
  w.Authenticated();
  if (auto own = AgentOwnPath(req.path)) {  // as kubelet serves its own on its port
    if (req.method != "GET") return SendError(w, apiserver::MethodNotAllowed());
    w.Send(own->code, own->content_type, own->body);
    return;
  }
  api::Pod pod;
  std::string container;
  const bool logs = ParsePodPath(req.path, apiserver::kAgentLogPath, &pod, &container);
  const bool exec = !logs && ParsePodPath(req.path, apiserver::kAgentExecPath, &pod, &container);
  if (!logs && !exec) {
    apiserver::ApiError e;
    e.code = 404;
    e.reason = "NotFound";
    e.message = "the node agent serves no " + req.path;
    return SendError(w, e);
  }
  if (req.method != "GET" && req.method != "POST") {
    return SendError(w, apiserver::MethodNotAllowed());
  }
  apiserver::NodeConnection* node = node_.load();
  if (!node) return SendError(w, apiserver::Unavailable("the node agent is starting"));
  if (logs) {
    auto lo = apiserver::LogOptionsOf(req);
    if (!lo.ok()) return SendError(w, lo.error());
    lo->container = container;
    auto stream = node->Logs(pod, *lo);
    if (!stream.ok()) return SendError(w, stream.error());
    return apiserver::ServeLog(w, **stream);
  }
  auto er = apiserver::ExecRequestOf(req);
  if (!er.ok()) return SendError(w, er.error());
  er->options.container = container;
  auto upgrade = apiserver::ExecUpgradeOf(req);
  if (!upgrade.ok()) return SendError(w, upgrade.error());
  auto process = node->Exec(pod, er->options);
  if (!process.ok()) return SendError(w, process.error());
  apiserver::ServeExec(req, w, *er, *upgrade, **process);
}

}  // namespace kvol::cmd
