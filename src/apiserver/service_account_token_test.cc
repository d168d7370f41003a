#include "apiserver/service_account_token.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "apiserver/api.h"
#include "apiserver/authentication.h"
#include "apiserver/request_info.h"
#include "os/testing/fake_clock.h"
#include "store/sqlite_store.h"

namespace kvol::apiserver {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::unique_ptr<JwtSigner> NewSigner(const std::string& dir, const std::string& name) {
  auto pem = EnsureSigningKey(dir + "/" + name);
  EXPECT_TRUE(pem.ok()) << pem.status().ToString();
  auto signer = JwtSigner::FromPem(*pem);
  EXPECT_TRUE(signer.ok()) << signer.status().ToString();
  return *std::move(signer);
}

class TokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kvol-tokens-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    store::SqliteOptions so;
    so.path = dir_ + "/kvol.db";
    auto s = store::OpenSqliteStore(so);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = *std::move(s);
    api_ = std::make_unique<Api>(*store_, clock_);
    ASSERT_TRUE(api_->Start().ok());
    ServiceAccountTokenOptions o;
    o.max_expiration = 7200s;
    api_->SetServiceAccountTokens(
        std::make_unique<ServiceAccountTokens>(*api_, NewSigner(dir_, "sa.key"), o));
    sa_uid_ = Create<api::ServiceAccount>("builder");
    Create<api::ServiceAccount>("default");  // what pods naming no account run as
  }
  void TearDown() override {
    api_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }

  ServiceAccountTokens& tokens() { return *api_->service_account_tokens(); }

  template <class T>
  std::string Create(const std::string& name, const std::string& sa = "") {
    T obj;
    obj.metadata.name = name;
    if constexpr (std::is_same_v<T, api::Pod>) {
      obj.spec.service_account_name = sa;
      obj.spec.containers.push_back({.name = "c", .image = "busybox"});
    }
    auto created = api_->registry<T>().Create(obj, "default");
    EXPECT_TRUE(created.ok()) << created.error().message;
    return created.ok() ? created->metadata.uid : "";
  }
  template <class T>
  void Delete(const std::string& name) {
    api::DeleteOptions o;
    o.grace_period_seconds = 0;
    auto deleted = api_->registry<T>().Delete("default", name, o);
    ASSERT_TRUE(deleted.ok()) << deleted.error().message;
  }

  api::authentication::TokenRequest Ask(std::optional<int64_t> seconds = std::nullopt,
                                        std::vector<std::string> audiences = {}) {
    api::authentication::TokenRequest r;
    r.spec.expiration_seconds = seconds;
    r.spec.audiences = std::move(audiences);
    return r;
  }
  std::string Token(api::authentication::TokenRequest r, const std::string& sa = "builder") {
    auto got = tokens().Request("default", sa, std::move(r));
    EXPECT_TRUE(got.ok()) << got.error().message;
    return got.ok() ? got->status.token : "";
  }

  std::string dir_;
  os::testing::FakeClock clock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Api> api_;
  std::string sa_uid_;
};

TEST(JwtTest, SignedTokensVerifyAndAnyChangeIsRefused) {
  std::string tmpl = (fs::temp_directory_path() / "kvol-jwt-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  auto a = NewSigner(tmpl, "a.key");
  auto b = NewSigner(tmpl, "b.key");
  // The key is kept: asking again gives the same key.
  EXPECT_EQ(NewSigner(tmpl, "a.key")->key_id(), a->key_id());
  EXPECT_NE(a->key_id(), b->key_id());
  auto token = a->Sign({{"sub", "me"}, {"n", 1}});
  ASSERT_TRUE(token.ok());
  auto claims = a->Verify(*token);
  ASSERT_TRUE(claims.ok()) << claims.status().ToString();
  EXPECT_EQ((*claims)["sub"], "me");

  const size_t dot = token->find('.');
  std::string other_claims = token->substr(0, dot + 1) +
                             Base64UrlEncode(R"({"sub":"admin","n":1})") +
                             token->substr(token->rfind('.'));
  std::string flipped = *token;
  char& c = flipped[flipped.rfind('.') + 5];
  c = c == 'A' ? 'B' : 'A';
  struct Case {
    std::string name;
    std::string token;
    std::string why;
  } cases[] = {
      {.name = "claims changed", .token = other_claims, .why = "does not verify"},
      {.name = "signature changed", .token = flipped, .why = "does not verify"},
      {.name = "two parts", .token = "a.b", .why = "three parts"},
      {.name = "not base64url", .token = "a+.b.c", .why = "base64url"},
      {.name = "unsigned", .token = Base64UrlEncode(R"({"alg":"none"})") + ".e30.", .why = "ES256"},
      {.name = "alg not a string",
       .token = Base64UrlEncode(R"({"alg":1})") + ".e30.",
       .why = "ES256"},
      {.name = "kid not a string",
       .token = Base64UrlEncode(R"({"alg":"ES256","kid":[]})") + ".e30.",
       .why = "another key"},
      {.name = "header not an object", .token = Base64UrlEncode("[]") + ".e30.", .why = "header"},
  };
  for (const auto& c : cases) {
    auto got = a->Verify(c.token);
    ASSERT_FALSE(got.ok()) << c.name;
    EXPECT_NE(got.status().message().find(c.why), std::string::npos)
        << c.name << ": " << got.status().message();
  }
  EXPECT_FALSE(b->Verify(*token).ok()) << "signed by another key";
  fs::remove_all(tmpl);
}

TEST_F(TokenTest, RequestsAreAnsweredOrRefusedAsKubernetesDoes) {
  Create<api::Pod>("runs-builder", "builder");
  Create<api::Pod>("runs-default", "");
  api::authentication::BoundObjectReference to_pod{"Pod", "v1", "runs-builder", ""};
  struct Case {
    std::string name;
    std::string sa = "builder";
    api::authentication::TokenRequest req;
    int code = 0;  // 0: issued
    std::string message;
  } cases[] = {
      {.name = "defaults", .req = Ask()},
      {.name = "no such account",
       .sa = "nobody",
       .req = Ask(),
       .code = 404,
       .message = "serviceaccounts \"nobody\" not found"},
      {.name = "too short",
       .req = Ask(599),
       .code = 422,
       .message = "TokenRequest.authentication.k8s.io \"builder\" is invalid: "
                  "spec.expirationSeconds: Invalid value: 599: may not specify a duration less "
                  "than 10 minutes"},
      {.name = "bound to its pod",
       .req =
           [&] {
             auto r = Ask();
             r.spec.bound_object_ref = to_pod;
             return r;
           }()},
      {.name = "bound to another account's pod",
       .req =
           [&] {
             auto r = Ask();
             r.spec.bound_object_ref = to_pod;
             r.spec.bound_object_ref->name = "runs-default";
             return r;
           }(),
       .code = 400,
       .message = "cannot bind token for serviceaccount \"builder\" to pod running with "
                  "serviceaccount \"default\""},
      {.name = "bound to a pod of another uid",
       .req =
           [&] {
             auto r = Ask();
             r.spec.bound_object_ref = to_pod;
             r.spec.bound_object_ref->uid = "not-its-uid";
             return r;
           }(),
       .code = 409,
       .message = "the UID in the bound object reference (not-its-uid) does not match"},
      {.name = "bound to a node",
       .req =
           [&] {
             auto r = Ask();
             r.spec.bound_object_ref =
                 api::authentication::BoundObjectReference{"Node", "v1", "n1", ""};
             return r;
           }(),
       .code = 400,
       .message = "cannot bind token to object of type /v1, Kind=Node"},
  };
  for (auto& c : cases) {
    auto got = tokens().Request("default", c.sa, c.req);
    if (c.code == 0) {
      ASSERT_TRUE(got.ok()) << c.name << ": " << got.error().message;
      EXPECT_EQ(got->kind, "TokenRequest");
      EXPECT_EQ(got->spec.expiration_seconds, 3600) << c.name;
      EXPECT_EQ(got->spec.audiences, std::vector<std::string>{std::string(kDefaultTokenIssuer)});
      EXPECT_EQ(got->status.expiration_timestamp.unix_seconds(),
                std::chrono::duration_cast<std::chrono::seconds>(
                    (clock_.Now() + 3600s).time_since_epoch())
                    .count());
      EXPECT_TRUE(tokens().Authenticate(got->status.token).ok()) << c.name;
      continue;
    }
    ASSERT_FALSE(got.ok()) << c.name;
    EXPECT_EQ(got.error().code, c.code) << c.name;
    EXPECT_NE(got.error().message.find(c.message), std::string::npos)
        << c.name << ": " << got.error().message;
  }
}

TEST_F(TokenTest, LongerThanTheLimitIsCutToTheLimit) {
  auto got = tokens().Request("default", "builder", Ask(100000));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->spec.expiration_seconds, 7200);
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(clock_.Now().time_since_epoch());
  EXPECT_EQ(got->status.expiration_timestamp.unix_seconds(), now.count() + 7200);
}

TEST_F(TokenTest, TokensStopWorkingWhenTheyExpireOrWhatTheyNameGoes) {
  const std::string pod_uid = Create<api::Pod>("p", "builder");
  auto bound = Ask(600);
  bound.spec.bound_object_ref = api::authentication::BoundObjectReference{"Pod", "v1", "p", ""};
  const std::string plain = Token(Ask(600));
  const std::string for_vault = Token(Ask(600, {"vault"}));
  const std::string to_pod = Token(bound);

  auto who = tokens().Authenticate(to_pod);
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_EQ(who->user.username, "system:serviceaccount:default:builder");
  EXPECT_EQ(who->user.uid, sa_uid_);
  EXPECT_EQ(who->user.groups,
            (std::vector<std::string>{"system:serviceaccounts", "system:serviceaccounts:default",
                                      "system:authenticated"}));
  EXPECT_EQ(who->user.extra["authentication.kubernetes.io/pod-uid"],
            std::vector<std::string>{pod_uid});
  EXPECT_EQ(who->user.extra["authentication.kubernetes.io/credential-id"].size(), 1u);

  auto refused = [&](const std::string& token, const std::vector<std::string>& auds = {}) {
    auto got = tokens().Authenticate(token, auds);
    return got.ok() ? std::string("accepted") : got.status().message();
  };
  EXPECT_EQ(refused(for_vault),
            "token audiences [\"vault\"] is invalid for the target audiences "
            "[\"https://kubernetes.default.svc.cluster.local\"]");
  EXPECT_EQ(refused(for_vault, {"vault"}), "accepted");
  EXPECT_EQ(refused("not-a-token"), "not a JWT: it has not three parts");

  // The pod goes: its token stops working, the others do not.
  Delete<api::Pod>("p");
  EXPECT_EQ(refused(to_pod), "service account token has been invalidated");
  EXPECT_EQ(refused(plain), "accepted");
  // A pod of the same name is another pod.
  const std::string again = Create<api::Pod>("p", "builder");
  EXPECT_EQ(refused(to_pod), "pod UID (" + again +
                                 ") does not match service account pod ref "
                                 "claim (" +
                                 pod_uid + ")");

  // Expiry: still accepted within the leeway, refused after.
  clock_.Advance(600s + kTokenLeeway);
  EXPECT_EQ(refused(plain), "accepted");
  clock_.Advance(2s);
  EXPECT_EQ(refused(plain), "service account token has expired");

  // The account goes, then comes back with another uid.
  const std::string fresh = Token(Ask(600));
  Delete<api::ServiceAccount>("builder");
  EXPECT_EQ(refused(fresh), "serviceaccounts \"builder\" not found");
  const std::string new_uid = Create<api::ServiceAccount>("builder");
  EXPECT_EQ(refused(fresh),
            "service account UID (" + new_uid + ") does not match claim (" + sa_uid_ + ")");
}

TEST_F(TokenTest, TokenReviewsSayWhoATokenIsForTheAudiencesAsked) {
  const Authenticated admin{.user = AdminUser()};
  const auto parts = PathParts("/apis/authentication.k8s.io/v1/tokenreviews");
  auto review = [&](const std::string& token, std::vector<std::string> auds) {
    api::Json body = {{"spec", {{"token", token}, {"audiences", auds}}}};
    auto answer = Review("admin-secret", &tokens(), admin, parts, body);
    EXPECT_TRUE(answer.ok());
    return api::ParseJson(*answer).value()["status"];
  };
  const std::string vault = Token(Ask(600, {"vault"}));
  struct Case {
    std::string name;
    std::string token;
    std::vector<std::string> audiences;
    std::string user;  // empty: refused
    std::vector<std::string> answered;
  } cases[] = {
      {.name = "the admin, for the API",
       .token = "admin-secret",
       .user = "kvol-admin",
       .answered = {std::string(kDefaultTokenIssuer)}},
      {.name = "the admin is not for vault", .token = "admin-secret", .audiences = {"vault"}},
      {.name = "a vault token for vault",
       .token = vault,
       .audiences = {"vault", "other"},
       .user = "system:serviceaccount:default:builder",
       .answered = {"vault"}},
      {.name = "a vault token for the API", .token = vault},
      {.name = "garbage", .token = "x.y.z"},
  };
  for (const auto& c : cases) {
    const api::Json status = review(c.token, c.audiences);
    if (c.user.empty()) {
      EXPECT_FALSE(status.value("authenticated", false)) << c.name;
      EXPECT_TRUE(status.value("error", "").starts_with("[invalid bearer token, ")) << c.name;
      continue;
    }
    EXPECT_TRUE(status.value("authenticated", false)) << c.name << ": " << status.dump();
    EXPECT_EQ(status["user"]["username"], c.user) << c.name;
    EXPECT_EQ(status["audiences"], api::Json(c.answered)) << c.name;
  }
}

TEST(AuthorizeTest, ServiceAccountsMayReadDiscoveryAndAskWhoTheyAre) {
  Authenticated sa{.user = ServiceAccountUser("default", "builder", "u1"), .service_account = true};
  Authenticated admin{.user = AdminUser()};
  struct Case {
    std::string method;
    std::string path;
    std::string query;
    std::string forbidden;  // empty: allowed
  } cases[] = {
      {.method = "GET", .path = "/api"},
      {.method = "GET", .path = "/apis/storage.k8s.io/v1"},
      {.method = "GET", .path = "/openapi/v2"},
      {.method = "POST", .path = "/apis/authentication.k8s.io/v1/selfsubjectreviews"},
      {.method = "GET",
       .path = "/api/v1/namespaces/default/pods",
       .forbidden = "pods is forbidden: User \"system:serviceaccount:default:builder\" cannot "
                    "list resource \"pods\" in API group \"\" in the namespace \"default\""},
      {.method = "GET",
       .path = "/api/v1/namespaces/default/pods",
       .query = "watch=true",
       .forbidden = "cannot watch resource \"pods\""},
      {.method = "DELETE",
       .path = "/apis/storage.k8s.io/v1/storageclasses/fast",
       .forbidden = "storageclasses.storage.k8s.io \"fast\" is forbidden: User "
                    "\"system:serviceaccount:default:builder\" cannot delete resource "
                    "\"storageclasses\" in API group \"storage.k8s.io\" at the cluster scope"},
      {.method = "POST",
       .path = "/api/v1/namespaces/default/serviceaccounts/builder/token",
       .forbidden = "cannot create resource \"serviceaccounts/token\""},
      {.method = "POST",
       .path = "/apis/authentication.k8s.io/v1/tokenreviews",
       .forbidden = "cannot create resource \"tokenreviews\""},
      {.method = "GET",
       .path = "/metrics",
       .forbidden = "forbidden: User \"system:serviceaccount:default:builder\" cannot get path "
                    "\"/metrics\""},
  };
  for (const auto& c : cases) {
    HttpRequest req;
    req.method = c.method;
    req.path = c.path;
    req.target = c.path + (c.query.empty() ? "" : "?" + c.query);
    if (c.query == "watch=true") req.query["watch"] = "true";
    const auto parts = PathParts(c.path);
    EXPECT_FALSE(Authorize(admin, req, parts)) << c.path;
    auto denied = Authorize(sa, req, parts);
    if (c.forbidden.empty()) {
      EXPECT_FALSE(denied) << c.method << " " << c.path << ": " << denied->message;
      continue;
    }
    ASSERT_TRUE(denied) << c.method << " " << c.path;
    EXPECT_EQ(denied->code, 403);
    EXPECT_NE(denied->message.find(c.forbidden), std::string::npos) << denied->message;
  }
}

}  // namespace
}  // namespace kvol::apiserver
