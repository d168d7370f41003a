// The server's TLS identity: a self-signed CA and a serving certificate signed by it, created in
// the data directory on first start and reused afterwards; plus the admin bearer token and the
// kubeconfig that carries both to kubectl.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kvol::apiserver {

struct TlsFiles {
  std::string ca_cert_pem;
  std::string server_cert_pem;
  std::string server_key_pem;
};

// Loads <dir>/pki/{ca.crt,ca.key,server.crt,server.key}, creating what is missing. The serving
// certificate is (re)issued when it does not cover every name in `hosts` (IP addresses or DNS
// names) or expires within 30 days. Keys are ECDSA P-256, files mode 0600 (certificates 0644).
StatusOr<TlsFiles> EnsureTls(const std::string& dir, const std::vector<std::string>& hosts);

// The SHA-256 of a certificate's DER encoding, in lower-case hex: how a node agent's
// self-signed certificate is published and pinned.
StatusOr<std::string> CertificateSha256(std::string_view cert_pem);

// The admin token in <dir>/token (mode 0600), created with 256 random bits if absent.
StatusOr<std::string> EnsureAdminToken(const std::string& dir);

// Writes <dir>/kubeconfig (mode 0600) pointing kubectl at `server_url` with the CA and token.
Status WriteKubeconfig(const std::string& dir, const std::string& server_url,
                       const std::string& ca_cert_pem, const std::string& token);

}  // namespace kvol::apiserver
