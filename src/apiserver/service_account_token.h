// Service account tokens as Kubernetes makes and checks them: the TokenRequest subresource
// (serviceaccounts/NAME/token) issues signed, audience-bound, expiring JWTs naming the service
// account and, optionally, the pod or secret they are bound to; the authenticator accepts them
// while they are current and everything they name still exists.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/authentication.h"
#include "apiserver/errors.h"
#include "apiserver/jwt.h"

namespace kvol::apiserver {

class Api;

// The service account tokens' issuer, and the API server's own audience unless told otherwise.
inline constexpr std::string_view kDefaultTokenIssuer =
    "https://kubernetes.default.svc.cluster.local";
// Expired or not-yet-valid tokens are still accepted this long, for clocks a little apart.
inline constexpr std::chrono::seconds kTokenLeeway{60};

struct ServiceAccountTokenOptions {
  std::string issuer = std::string(kDefaultTokenIssuer);
  // The API server's audiences: a token for none of them is refused for API requests, and
  // requests naming none get them. Empty: {issuer}.
  std::vector<std::string> audiences;
  // Longer requests get tokens this long (the status says so); 0: no limit.
  std::chrono::seconds max_expiration{0};
};

// A user the server has authenticated.
struct Authenticated {
  api::authentication::UserInfo user;
  std::vector<std::string> audiences;  // those of the token's the check asked for
  bool service_account = false;
};

// username system:serviceaccount:NS:NAME; groups system:serviceaccounts[:NS] and
// system:authenticated.
api::authentication::UserInfo ServiceAccountUser(std::string_view ns, std::string_view name,
                                                 std::string uid);

class ServiceAccountTokens {
 public:
  ServiceAccountTokens(Api& api, std::unique_ptr<JwtSigner> signer,
                       ServiceAccountTokenOptions opts);

  // POST namespaces/NS/serviceaccounts/NAME/token: the request answered with its token, as
  // Kubernetes' TokenREST. NotFound for a missing service account or bound object; Invalid
  // for a duration under 10 minutes; Conflict when the bound object's uid is another's.
  ApiOr<api::authentication::TokenRequest> Request(std::string_view ns, std::string_view name,
                                                   api::authentication::TokenRequest req);

  // The user a token names: it must be signed by this server, current (within kTokenLeeway),
  // meant for one of `audiences` (the server's own when empty), and name a service account and
  // bound object that still exist with the same uids and are not being deleted. The error's
  // message says why not, in Kubernetes' words.
  StatusOr<Authenticated> Authenticate(std::string_view token,
                                       const std::vector<std::string>& audiences = {});

  const std::vector<std::string>& audiences() const { return opts_.audiences; }

 private:
  Api& api_;
  const std::unique_ptr<JwtSigner> signer_;
  ServiceAccountTokenOptions opts_;
};

}  // namespace kvol::apiserver
