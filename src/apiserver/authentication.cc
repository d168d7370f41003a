// Bearer tokens to users, users to permissions, and the authentication.k8s.io API.
#include "apiserver/authentication.h"

#include <algorithm>

#include "api/codec.h"
#include "apiserver/request_info.h"
#include "base/strings.h"

namespace kvol::apiserver {
namespace {

constexpr std::string_view kGroup = "authentication.k8s.io";

std::optional<Authenticated> Authenticate(std::string_view token, std::string_view admin_token,
                                          ServiceAccountTokens* tokens,
                                          const std::vector<std::string>& audiences,
                                          std::string* why) {
  if (!admin_token.empty() && SameSecret(token, admin_token)) {
    // The admin token is the API server's own credential: good for the audiences asked for
    // only where they are the server's (Kubernetes' audience-agnostic token wrapper).
    const std::vector<std::string> own = tokens ? tokens->audiences() : std::vector<std::string>{};
    if (audiences.empty()) return Authenticated{.user = AdminUser(), .audiences = own};
    Authenticated out{.user = AdminUser()};
    for (const auto& a : audiences) {
      if (std::find(own.begin(), own.end(), a) != own.end()) out.audiences.push_back(a);
    }
    if (!out.audiences.empty()) return out;
    if (why) *why = "the admin token is not for the audiences asked for";
    return std::nullopt;
  }
  if (!tokens) {
    if (why) *why = "invalid bearer token";
    return std::nullopt;
  }
  auto who = tokens->Authenticate(token, audiences);
  if (!who.ok()) {
    if (why) *why = who.status().message();
    return std::nullopt;
  }
  return *std::move(who);
}

// What a service account may do without RBAC: what system:discovery, system:basic-user and
// system:public-info-viewer grant every authenticated user.
bool AllowedToEveryone(const RequestInfo& info, const HttpRequest& req,
                       const std::vector<std::string>& parts) {
  if (!info.resource_request) {
    if (req.method != "GET" && req.method != "HEAD") return false;
    if (parts.empty()) return false;
    const std::string& first = parts[0];
    return first == "api" || first == "apis" || first == "openapi" || first == "version" ||
           first == "healthz" || first == "livez" || first == "readyz";
  }
  return info.group == kGroup && info.resource == "selfsubjectreviews" && info.verb == "POST";
}

// RBAC's verb for a request: get, list, watch, create, update, patch, delete, deletecollection.
std::string RbacVerb(const RequestInfo& info) {
  if (info.verb == "POST") return "create";
  if (info.verb == "PUT") return "update";
  if (info.verb == "APPLY") return "patch";
  if (info.verb == "CONNECT") return "create";
  return AsciiLower(info.verb);
}

std::string Qualified(const RequestInfo& info) {
  return info.group.empty() ? info.resource : info.resource + "." + info.group;
}

}  // namespace

api::authentication::UserInfo AdminUser() {
  api::authentication::UserInfo u;
  u.username = "kvol-admin";
  u.groups = {"system:masters", "system:authenticated"};
  return u;
}

std::optional<Authenticated> AuthenticateRequest(const HttpRequest& req,
                                                 std::string_view admin_token,
                                                 ServiceAccountTokens* tokens) {
  const std::string auth = req.Header("authorization");
  if (auth.rfind("Bearer ", 0) != 0) return std::nullopt;
  const std::string_view token = std::string_view(auth).substr(7);
  if (token.empty()) return std::nullopt;
  return Authenticate(token, admin_token, tokens,
                      tokens ? tokens->audiences() : std::vector<std::string>{}, nullptr);
}

std::optional<ApiError> Authorize(const Authenticated& who, const HttpRequest& req,
                                  const std::vector<std::string>& parts) {
  if (!who.service_account) return std::nullopt;
  const RequestInfo info = RequestInfoOf(req, parts);
  if (AllowedToEveryone(info, req, parts)) return std::nullopt;
  const std::string user = "User \"" + who.user.username + "\"";
  if (!info.resource_request) {
    return Forbidden("forbidden: " + user + " cannot " + AsciiLower(req.method) + " path \"" +
                     req.path + "\"");
  }
  std::string what = Qualified(info);
  if (!info.name.empty()) what += " \"" + info.name + "\"";
  std::string resource = info.resource;
  if (!info.subresource.empty()) resource += "/" + info.subresource;
  std::string where = info.namespace_.empty() ? "at the cluster scope"
                                              : "in the namespace \"" + info.namespace_ + "\"";
  ApiError e =
      Forbidden(what + " is forbidden: " + user + " cannot " + RbacVerb(info) + " resource \"" +
                resource + "\" in API group \"" + info.group + "\" " + where);
  e.name = info.name;
  e.group = info.group;
  e.kind = info.resource;
  return e;
}

bool IsReviewPath(const std::vector<std::string>& parts) {
  return parts.size() == 4 && parts[0] == "apis" && parts[1] == kGroup && parts[2] == "v1" &&
         (parts[3] == "selfsubjectreviews" || parts[3] == "tokenreviews");
}

ApiOr<std::string> CreateToken(ServiceAccountTokens* tokens, std::string_view ns,
                               std::string_view name, const api::Json& body) {
  if (!tokens) return Unavailable("this server issues no service account tokens");
  api::FieldErrors errs;
  auto req = api::DecodeStruct<api::authentication::TokenRequest>(body, &errs);
  if (!errs.empty()) return BadRequest("TokenRequest: " + api::AggregateMessage(errs));
  auto answered = tokens->Request(ns, name, std::move(req));
  if (!answered.ok()) return answered.error();
  return api::EncodeJsonText(*answered);
}

ApiOr<std::string> Review(std::string_view admin_token, ServiceAccountTokens* tokens,
                          const Authenticated& who, const std::vector<std::string>& parts,
                          const api::Json& body) {
  api::FieldErrors errs;
  if (parts[3] == "selfsubjectreviews") {
    auto review = api::DecodeStruct<api::authentication::SelfSubjectReview>(body, &errs);
    if (!errs.empty()) return BadRequest("SelfSubjectReview: " + api::AggregateMessage(errs));
    review.api_version = api::authentication::kAuthenticationApiVersion;
    review.kind = "SelfSubjectReview";
    review.status.user_info = who.user;
    return api::EncodeJsonText(review);
  }
  auto review = api::DecodeStruct<api::authentication::TokenReview>(body, &errs);
  if (!errs.empty()) return BadRequest("TokenReview: " + api::AggregateMessage(errs));
  if (review.spec.token.empty()) {
    return Invalid({kGroup, "v1", "TokenReview", "", "", {}}, "",
                   {api::Required(api::Path("spec").Child("token"), "")});
  }
  review.api_version = api::authentication::kAuthenticationApiVersion;
  review.kind = "TokenReview";
  review.status = {};
  std::string why;
  auto reviewed = Authenticate(review.spec.token, admin_token, tokens, review.spec.audiences, &why);
  if (reviewed) {
    review.status.authenticated = true;
    review.status.user = reviewed->user;
    review.status.audiences = reviewed->audiences;
  } else {
    review.status.error = "[invalid bearer token, " + why + "]";
  }
  return api::EncodeJsonText(review);
}

}  // namespace kvol::apiserver
