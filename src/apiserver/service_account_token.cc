// Issuing service account tokens and checking them, as Kubernetes' TokenREST and its service
// account token authenticator (pkg/serviceaccount) do.
#include "apiserver/service_account_token.h"

#include <algorithm>

#include "api/field_errors.h"
#include "apiserver/api.h"
#include "apiserver/objects.h"

namespace kvol::apiserver {
namespace {

const api::KindInfo kTokenRequestKind{"authentication.k8s.io", "v1", "TokenRequest", "", "", {}};

constexpr std::string_view kServiceAccountPrefix = "system:serviceaccount:";
constexpr std::string_view kPrivateClaims = "kubernetes.io";

// Why a token is not accepted.
Status Refused(std::string why) { return {StatusCode::kUnauthenticated, std::move(why)}; }

int64_t UnixSeconds(os::WallTime t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

api::FieldErrors ValidateTokenRequest(const api::authentication::TokenRequest& r) {
  api::FieldErrors errs;
  const int64_t exp =
      r.spec.expiration_seconds.value_or(api::authentication::kDefaultTokenExpirationSeconds);
  const api::Path p = api::Path("spec").Child("expirationSeconds");
  if (exp < api::authentication::kMinTokenExpirationSeconds) {
    errs.push_back(api::Invalid(p, exp, "may not specify a duration less than 10 minutes"));
  }
  if (exp > (int64_t{1} << 32)) {
    errs.push_back(api::Invalid(p, exp, "may not specify a duration larger than 2^32 seconds"));
  }
  return errs;
}

// {"name": ..., "uid": ...}
api::Json Ref(std::string_view name, std::string_view uid) {
  return {{"name", name}, {"uid", uid}};
}

// The "aud" claim, a string or an array of strings.
std::vector<std::string> AudiencesOf(const api::Json& claims) {
  std::vector<std::string> out;
  auto it = claims.find("aud");
  if (it == claims.end()) return out;
  if (it->is_string()) out.push_back(it->get<std::string>());
  if (it->is_array()) {
    for (const auto& a : *it) {
      if (a.is_string()) out.push_back(a.get<std::string>());
    }
  }
  return out;
}

std::string Quoted(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? " \"" : "\"") + v[i] + "\"";
  return out + "]";
}

// A string member, "" when it is missing or not a string (claims come from the token's bearer).
std::string StringClaim(const api::Json& obj, std::string_view key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t NumberClaim(const api::Json& claims, std::string_view key) {
  auto it = claims.find(key);
  return it != claims.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

struct ClaimRef {
  std::string name;
  std::string uid;
  bool present = false;
};

ClaimRef RefClaim(const api::Json& private_claims, std::string_view key) {
  auto it = private_claims.find(key);
  if (it == private_claims.end() || !it->is_object()) return {};
  return {StringClaim(*it, "name"), StringClaim(*it, "uid"), true};
}

// Whether an object being deleted was marked longer ago than the leeway.
bool DeletedBefore(const api::ObjectMeta& m, int64_t limit) {
  return m.deletion_timestamp && m.deletion_timestamp->unix_seconds() < limit;
}

}  // namespace

api::authentication::UserInfo ServiceAccountUser(std::string_view ns, std::string_view name,
                                                 std::string uid) {
  api::authentication::UserInfo u;
  u.username = std::string(kServiceAccountPrefix) + std::string(ns) + ":" + std::string(name);
  u.uid = std::move(uid);
  u.groups = {"system:serviceaccounts", "system:serviceaccounts:" + std::string(ns),
              "system:authenticated"};
  return u;
}

ServiceAccountTokens::ServiceAccountTokens(Api& api, std::unique_ptr<JwtSigner> signer,
                                           ServiceAccountTokenOptions opts)
    : api_(api), signer_(std::move(signer)), opts_(std::move(opts)) {
  if (opts_.audiences.empty()) opts_.audiences = {opts_.issuer};
}

ApiOr<api::authentication::TokenRequest> ServiceAccountTokens::Request(
    std::string_view ns, std::string_view name, api::authentication::TokenRequest req) {
  if (!req.spec.expiration_seconds) {
    req.spec.expiration_seconds = api::authentication::kDefaultTokenExpirationSeconds;
  }
  if (auto errs = ValidateTokenRequest(req); !errs.empty()) {
    return Invalid(kTokenRequestKind, name, std::move(errs));
  }
  auto sa = api_.registry<api::ServiceAccount>().Get(ns, name);
  if (!sa.ok()) return sa.error();
  api::Json private_claims = {{"namespace", ns}, {"serviceaccount", Ref(name, sa->metadata.uid)}};
  if (const auto& ref = req.spec.bound_object_ref) {
    std::string uid;
    const bool core = ref->api_version == "v1" || ref->api_version.empty();
    if (core && ref->kind == "Pod") {
      auto pod = api_.registry<api::Pod>().Get(ns, ref->name);
      if (!pod.ok()) return pod.error();
      const std::string& runs_as =
          pod->spec.service_account_name.empty() ? "default" : pod->spec.service_account_name;
      if (runs_as != name) {
        return BadRequest("cannot bind token for serviceaccount \"" + std::string(name) +
                          "\" to pod running with serviceaccount \"" + runs_as + "\"");
      }
      uid = pod->metadata.uid;
      private_claims["pod"] = Ref(ref->name, uid);
    } else if (core && ref->kind == "Secret") {
      auto secret = api_.registry<api::Secret>().Get(ns, ref->name);
      if (!secret.ok()) return secret.error();
      uid = secret->metadata.uid;
      private_claims["secret"] = Ref(ref->name, uid);
    } else {
      const size_t slash = ref->api_version.find('/');
      const std::string group = slash == std::string::npos ? "" : ref->api_version.substr(0, slash);
      const std::string version =
          slash == std::string::npos ? ref->api_version : ref->api_version.substr(slash + 1);
      return BadRequest("cannot bind token to object of type " + group + "/" + version +
                        ", Kind=" + ref->kind);
    }
    if (!ref->uid.empty() && ref->uid != uid) {
      ApiError e = Conflict(kTokenRequestKind, ref->name,
                            "the UID in the bound object reference (" + ref->uid +
                                ") does not match the UID in record (" + uid +
                                "). The object might have been deleted and then recreated");
      e.message = "Operation cannot be fulfilled on " + ref->kind + " \"" + ref->name +
                  "\": " + e.message.substr(e.message.find("\": ") + 3);
      return e;
    }
  }
  if (req.spec.audiences.empty()) req.spec.audiences = opts_.audiences;

  // Cut to the limit, spec and status alike, as Kubernetes does: kubelet reads the token's
  // life from spec.expirationSeconds.
  int64_t lifetime = *req.spec.expiration_seconds;
  if (opts_.max_expiration.count() > 0 && lifetime > opts_.max_expiration.count()) {
    lifetime = opts_.max_expiration.count();
    req.spec.expiration_seconds = lifetime;
  }
  const int64_t now = UnixSeconds(api_.clock().Now());
  const api::Json claims = {
      {"iss", opts_.issuer},
      {"sub", std::string(kServiceAccountPrefix) + std::string(ns) + ":" + std::string(name)},
      {"aud", req.spec.audiences},
      {"iat", now},
      {"nbf", now},
      {"exp", now + lifetime},
      {"jti", NewUid()},
      {std::string(kPrivateClaims), std::move(private_claims)}};
  auto token = signer_->Sign(claims);
  if (!token.ok()) return Internal("failed to generate token: " + token.status().message());

  req.api_version = api::authentication::kAuthenticationApiVersion;
  req.kind = "TokenRequest";
  req.metadata.name = name;
  req.metadata.namespace_ = ns;
  req.status.token = *std::move(token);
  req.status.expiration_timestamp = api::Time::FromUnixSeconds(now + lifetime);
  return req;
}

StatusOr<Authenticated> ServiceAccountTokens::Authenticate(
    std::string_view token, const std::vector<std::string>& audiences) {
  KVOL_ASSIGN_OR_RETURN(api::Json claims, signer_->Verify(token));
  if (StringClaim(claims, "iss") != opts_.issuer) {
    return Refused("the token's issuer is not " + opts_.issuer);
  }
  const int64_t now = UnixSeconds(api_.clock().Now());
  const int64_t leeway = kTokenLeeway.count();
  if (NumberClaim(claims, "exp") + leeway < now) {
    return Refused("service account token has expired");
  }
  if (NumberClaim(claims, "nbf") - leeway > now) {
    return Refused("service account token is not valid yet");
  }
  if (NumberClaim(claims, "iat") - leeway > now) {
    return Refused("service account token is issued in the future");
  }
  const std::vector<std::string>& wanted = audiences.empty() ? opts_.audiences : audiences;
  Authenticated out;
  for (const auto& a : AudiencesOf(claims)) {
    if (std::find(wanted.begin(), wanted.end(), a) != wanted.end()) out.audiences.push_back(a);
  }
  if (out.audiences.empty()) {
    return Refused("token audiences " + Quoted(AudiencesOf(claims)) +
                   " is invalid for the target audiences " + Quoted(wanted));
  }
  auto pc = claims.find(kPrivateClaims);
  if (pc == claims.end() || !pc->is_object()) {
    return Refused("the token names no service account");
  }
  const std::string ns = StringClaim(*pc, "namespace");
  const ClaimRef sa_ref = RefClaim(*pc, "serviceaccount");
  const ClaimRef pod_ref = RefClaim(*pc, "pod");
  const ClaimRef secret_ref = RefClaim(*pc, "secret");
  if (ns.empty() || sa_ref.name.empty()) {
    return Refused("the token names no service account");
  }
  const int64_t deleted_before = now - leeway;
  auto sa = api_.registry<api::ServiceAccount>().Get(ns, sa_ref.name);
  if (!sa.ok()) return Refused(sa.error().message);
  if (DeletedBefore(sa->metadata, deleted_before)) {
    return Refused("service account " + ns + "/" + sa_ref.name + " has been deleted");
  }
  if (sa->metadata.uid != sa_ref.uid) {
    return Refused("service account UID (" + sa->metadata.uid + ") does not match claim (" +
                   sa_ref.uid + ")");
  }
  if (secret_ref.present) {
    auto secret = api_.registry<api::Secret>().Get(ns, secret_ref.name);
    if (!secret.ok() || DeletedBefore(secret->metadata, deleted_before)) {
      return Refused("service account token has been invalidated");
    }
    if (secret->metadata.uid != secret_ref.uid) {
      return Refused("secret UID (" + secret->metadata.uid +
                     ") does not match service account secret ref claim (" + secret_ref.uid + ")");
    }
  }
  if (pod_ref.present) {
    auto pod = api_.registry<api::Pod>().Get(ns, pod_ref.name);
    if (!pod.ok() || DeletedBefore(pod->metadata, deleted_before)) {
      return Refused("service account token has been invalidated");
    }
    if (pod->metadata.uid != pod_ref.uid) {
      return Refused("pod UID (" + pod->metadata.uid +
                     ") does not match service account pod ref claim (" + pod_ref.uid + ")");
    }
  }
  out.user = ServiceAccountUser(ns, sa_ref.name, sa_ref.uid);
  out.service_account = true;
  if (pod_ref.present) {
    out.user.extra["authentication.kubernetes.io/pod-name"] = {pod_ref.name};
    out.user.extra["authentication.kubernetes.io/pod-uid"] = {pod_ref.uid};
  }
  if (auto jti = StringClaim(claims, "jti"); !jti.empty()) {
    out.user.extra["authentication.kubernetes.io/credential-id"] = {"JTI=" + jti};
  }
  return out;
}

}  // namespace kvol::apiserver
