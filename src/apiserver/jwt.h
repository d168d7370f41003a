// JSON Web Tokens signed with ES256 (ECDSA P-256 with SHA-256, RFC 7518 3.4): what the API
// server's service account tokens are. The key is a PEM private key, kept beside the server's
// certificates.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "api/codec.h"
#include "base/status.h"

namespace kvol::apiserver {

class JwtSigner {
 public:
  ~JwtSigner();
  JwtSigner(const JwtSigner&) = delete;
  JwtSigner& operator=(const JwtSigner&) = delete;

  // From an EC P-256 private key in PEM.
  static StatusOr<std::unique_ptr<JwtSigner>> FromPem(std::string_view pem);

  // header.payload.signature, the header naming ES256 and key_id().
  StatusOr<std::string> Sign(const api::Json& claims) const;
  // The claims of a token this key signed. InvalidArgument when the token is not a JWT, names
  // another algorithm or key, or its signature does not verify.
  StatusOr<api::Json> Verify(std::string_view token) const;

  // base64url(SHA-256(DER of the public key)), the "kid" of its tokens.
  const std::string& key_id() const { return key_id_; }

 private:
  struct Key;
  JwtSigner(std::unique_ptr<Key> key, std::string key_id);
  std::unique_ptr<Key> key_;
  std::string key_id_;
};

// The signing key at `path` (PEM, mode 0600), made as a new EC P-256 key when there is none.
StatusOr<std::string> EnsureSigningKey(const std::string& path);

// base64url without padding (RFC 7515 2), and back; nullopt for bytes outside the alphabet.
std::string Base64UrlEncode(std::string_view data);
std::optional<std::string> Base64UrlDecode(std::string_view in);

}  // namespace kvol::apiserver
