// The HTTP transport: a Client that speaks Kubernetes' REST protocol over HTTPS to kvol (or any
// Kubernetes API server), reusing keep-alive connections, with the server, CA and bearer token
// taken from a kubeconfig as kubectl reads it.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "base/status.h"
#include "client/client.h"

namespace kvol::client {

struct HttpConfig {
  std::string server;  // "https://host:port"
  std::string token;   // bearer token; empty for none
  std::string ca_pem;  // trusted CA certificates (PEM); empty: the system's
  bool insecure_skip_tls_verify = false;
  std::string default_namespace = "default";  // the context's namespace
  std::chrono::milliseconds timeout{30'000};  // per request (not per watch)
  size_t max_idle_connections = 16;
};

// Reads a kubeconfig: the named context (or current-context), its cluster (server,
// certificate-authority-data or certificate-authority, insecure-skip-tls-verify) and user
// (token or tokenFile). Client certificates and exec plugins are not supported and say so.
StatusOr<HttpConfig> LoadKubeconfig(const std::string& path, std::string_view context = "");

class HttpTransport;

class HttpClient final : public Client {
 public:
  // Checks the configuration (server URL, CA); connections are made on first use.
  static StatusOr<std::unique_ptr<HttpClient>> Create(HttpConfig config);
  ~HttpClient() override;

  const HttpConfig& config() const;
  std::optional<ApiError> BindPod(const api::Binding& binding) override;
  ApiOr<api::Namespace> FinalizeNamespace(const api::Namespace& ns) override;
  ApiOr<api::authentication::TokenRequest> CreateToken(std::string_view ns, std::string_view name,
                                       const api::authentication::TokenRequest& request) override;

 private:
  explicit HttpClient(std::unique_ptr<HttpTransport> transport);
  std::unique_ptr<HttpTransport> transport_;
};

}  // namespace kvol::client
