#include "node/token_manager.h"

#include <gtest/gtest.h>

#include "client/testing/fake_client.h"
#include "os/testing/fake_clock.h"

namespace kvol::node {
namespace {

using namespace std::chrono_literals;

TEST(TokenNeedsRefreshTest, AtEightyPercentOfItsLifeOrADay) {
  const os::WallTime t0(std::chrono::seconds(1'700'000'000));
  struct Case {
    std::string name;
    std::chrono::seconds life;
    std::chrono::seconds age;
    bool refresh;
  } cases[] = {
      {.name = "new", .life = 3600s, .age = 0s, .refresh = false},
      {.name = "just under 80%", .life = 3600s, .age = 2879s, .refresh = false},
      {.name = "at 80%", .life = 3600s, .age = 2880s, .refresh = true},
      {.name = "expired", .life = 3600s, .age = 4000s, .refresh = true},
      {.name = "a year's token a day old", .life = 365 * 24h, .age = 24h, .refresh = true},
      {.name = "a year's token an hour old", .life = 365 * 24h, .age = 1h, .refresh = false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(TokenNeedsRefresh(t0, t0 + c.life, t0 + c.age), c.refresh) << c.name;
  }
}

class TokenManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pod_.metadata.namespace_ = "ns";
    pod_.metadata.name = "p";
    pod_.metadata.uid = "uid-p";
    pod_.spec.service_account_name = "builder";
    client_.token_issuer = [this](std::string_view ns, std::string_view name,
                                  const api::authentication::TokenRequest& req)
        -> api::ApiOr<api::authentication::TokenRequest> {
      asked_.push_back(req);
      api::authentication::TokenRequest out = req;
      out.status.token =
          std::string(ns) + "/" + std::string(name) + "#" + std::to_string(asked_.size());
      out.status.expiration_timestamp = api::Time::FromTimePoint(
          clock_.Now() + std::chrono::seconds(req.spec.expiration_seconds.value_or(3600)));
      return out;
    };
  }
  int Asked() const { return static_cast<int>(asked_.size()); }

  api::Pod pod_;
  os::testing::FakeClock clock_;
  client::testing::FakeClient client_;
  std::vector<api::authentication::TokenRequest> asked_;
  TokenManager tokens_{client_, clock_};
};

TEST_F(TokenManagerTest, KeepsATokenWhileFreshAndRenewsItBeforeItExpires) {
  auto first = tokens_.Get(pod_, "vault", 600);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->token, "ns/builder#1");
  ASSERT_EQ(Asked(), 1);
  EXPECT_EQ(asked_[0].spec.audiences, std::vector<std::string>{"vault"});
  EXPECT_EQ(asked_[0].spec.expiration_seconds, 600);
  ASSERT_TRUE(asked_[0].spec.bound_object_ref);
  EXPECT_EQ(asked_[0].spec.bound_object_ref->kind, "Pod");
  EXPECT_EQ(asked_[0].spec.bound_object_ref->uid, "uid-p");

  clock_.Advance(479s);
  EXPECT_EQ(tokens_.Get(pod_, "vault", 600)->token, "ns/builder#1");
  // Another audience or duration is another token; the API server's audience is asked by
  // naming none.
  EXPECT_EQ(tokens_.Get(pod_, "", 600)->token, "ns/builder#2");
  EXPECT_TRUE(asked_[1].spec.audiences.empty());
  clock_.Advance(1s);  // 80% of 600 s
  EXPECT_EQ(tokens_.Get(pod_, "vault", 600)->token, "ns/builder#3");
  EXPECT_EQ(Asked(), 3);
}

TEST_F(TokenManagerTest, AKeptTokenServesWhileTheServerFailsThenTheErrorShows) {
  pod_.spec.service_account_name.clear();  // the default account
  ASSERT_EQ(tokens_.Get(pod_, "", 600)->token, "ns/default#1");
  clock_.Advance(500s);
  client_.state().InjectError("create", "serviceaccounts/token",
                              {503, "ServiceUnavailable", "the server is down"}, 2);
  EXPECT_EQ(tokens_.Get(pod_, "", 600)->token, "ns/default#1");
  clock_.Advance(100s);  // expired: nothing to give
  auto got = tokens_.Get(pod_, "", 600);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "failed to fetch token: the server is down");
  EXPECT_EQ(tokens_.Get(pod_, "", 600)->token, "ns/default#2");
}

TEST_F(TokenManagerTest, APodsTokensAreForgottenWhenItGoes) {
  ASSERT_TRUE(tokens_.Get(pod_, "", 600).ok());
  api::Pod other = pod_;
  other.metadata.uid = "uid-q";
  ASSERT_TRUE(tokens_.Get(other, "", 600).ok());
  EXPECT_EQ(tokens_.size(), 2u);
  tokens_.ForgetPod("uid-p");
  EXPECT_EQ(tokens_.size(), 1u);
}

}  // namespace
}  // namespace kvol::node
