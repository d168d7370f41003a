// Who a request is from and what a service account may do; the authentication.k8s.io API
// (TokenRequest, TokenReview, SelfSubjectReview).
//
// Two kinds of bearer token are accepted: the admin token, whose holder may do anything, and
// service account tokens (service_account_token.h). Service accounts may read discovery and
// ask who they are (`kubectl auth whoami`); kvol does not evaluate RBAC yet, so everything
// else is forbidden to them, in Kubernetes' words.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/http_server.h"
#include "apiserver/service_account_token.h"

namespace kvol::apiserver {

// The admin token's user: kvol-admin in system:masters.
api::authentication::UserInfo AdminUser();

// The user the request's bearer token names, or nullopt (401): `admin_token` is compared in
// constant time; other tokens go to `tokens` when there is one.
std::optional<Authenticated> AuthenticateRequest(const HttpRequest& req,
                                                 std::string_view admin_token,
                                                 ServiceAccountTokens* tokens);

// nullopt when `who` may make the request; the Forbidden error otherwise. `parts` is
// PathParts(req.path).
std::optional<ApiError> Authorize(const Authenticated& who, const HttpRequest& req,
                                  const std::vector<std::string>& parts);

// Whether `parts` is /apis/authentication.k8s.io/v1/<reviews>: selfsubjectreviews or
// tokenreviews, which are made, not stored.
bool IsReviewPath(const std::vector<std::string>& parts);

// POST namespaces/NS/serviceaccounts/NAME/token with `body`: the TokenRequest answered, as
// JSON.
ApiOr<std::string> CreateToken(ServiceAccountTokens* tokens, std::string_view ns,
                               std::string_view name, const api::Json& body);

// POST to an IsReviewPath with `body`: the review answered, as JSON.
ApiOr<std::string> Review(std::string_view admin_token, ServiceAccountTokens* tokens,
                          const Authenticated& who, const std::vector<std::string>& parts,
                          const api::Json& body);

}  // namespace kvol::apiserver
