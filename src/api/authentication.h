// authentication.k8s.io/v1 types: TokenRequest (the serviceaccounts/NAME/token subresource),
// TokenReview and SelfSubjectReview, and the user they name.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/codec.h"
#include "api/meta.h"
#include "api/time.h"

// In a namespace of their own, as in Kubernetes' packages: storage.k8s.io has a TokenRequest of
// its own (CSIDriver.spec.tokenRequests).
namespace kvol::api::authentication {

inline constexpr std::string_view kAuthenticationApiVersion = "authentication.k8s.io/v1";

// The default and the least a TokenRequest or a projected token may ask for.
inline constexpr int64_t kDefaultTokenExpirationSeconds = 3600;
inline constexpr int64_t kMinTokenExpirationSeconds = 600;

// The object a token is bound to: it stops working when the object goes.
struct BoundObjectReference {
  std::string kind;  // Pod or Secret
  std::string api_version;
  std::string name;
  std::string uid;
  KVOL_FIELDS(BoundObjectReference) {
    v("kind", s.kind);
    v("apiVersion", s.api_version);
    v("name", s.name);
    v("uid", s.uid);
  }
};

struct TokenRequestSpec {
  std::vector<std::string> audiences;  // empty: the API server's own
  std::optional<int64_t> expiration_seconds;
  std::optional<BoundObjectReference> bound_object_ref;
  KVOL_FIELDS(TokenRequestSpec) {
    v("audiences", s.audiences, Emit::kAlways);
    v("expirationSeconds", s.expiration_seconds);
    v("boundObjectRef", s.bound_object_ref);
  }
};

struct TokenRequestStatus {
  std::string token;
  Time expiration_timestamp;
  KVOL_FIELDS(TokenRequestStatus) {
    v("token", s.token, Emit::kAlways);
    v("expirationTimestamp", s.expiration_timestamp, Emit::kAlways);
  }
};

struct TokenRequest {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  TokenRequestSpec spec;
  TokenRequestStatus status;
  KVOL_FIELDS(TokenRequest) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata, Emit::kAlways);
    v("spec", s.spec, Emit::kAlways);
    v("status", s.status, Emit::kAlways);
  }
};

struct UserInfo {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
  KVOL_FIELDS(UserInfo) {
    v("username", s.username);
    v("uid", s.uid);
    v("groups", s.groups);
    v("extra", s.extra);
  }
};

struct TokenReviewSpec {
  std::string token;
  std::vector<std::string> audiences;
  KVOL_FIELDS(TokenReviewSpec) {
    v("token", s.token);
    v("audiences", s.audiences);
  }
};

struct TokenReviewStatus {
  bool authenticated = false;
  UserInfo user;
  std::vector<std::string> audiences;
  std::string error;
  KVOL_FIELDS(TokenReviewStatus) {
    v("authenticated", s.authenticated);
    v("user", s.user, Emit::kAlways);
    v("audiences", s.audiences);
    v("error", s.error);
  }
};

struct TokenReview {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  TokenReviewSpec spec;
  TokenReviewStatus status;
  KVOL_FIELDS(TokenReview) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata, Emit::kAlways);
    v("spec", s.spec, Emit::kAlways);
    v("status", s.status, Emit::kAlways);
  }
};

struct SelfSubjectReviewStatus {
  UserInfo user_info;
  KVOL_FIELDS(SelfSubjectReviewStatus) { v("userInfo", s.user_info, Emit::kAlways); }
};

struct SelfSubjectReview {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  SelfSubjectReviewStatus status;
  KVOL_FIELDS(SelfSubjectReview) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata, Emit::kAlways);
    v("status", s.status, Emit::kAlways);
  }
};

}  // namespace kvol::api::authentication
