#include "controller/serviceaccount/serviceaccount_controller.h"

#include <gtest/gtest.h>

#include "client/testing/fake_client.h"

namespace kvol::controller::serviceaccount {
namespace {

using client::testing::FakeClient;

TEST(ServiceAccountControllerTest, Sync) {
  struct Row {
    std::string name;
    bool namespace_exists = true;
    bool terminating = false;
    bool has_default = false;
    std::vector<std::string> want;  // ServiceAccounts after the pass, "ns/name"
  };
  const std::vector<Row> rows = {
      {.name = "new namespace - default created", .want = {"t1/default"}},
      {.name = "default exists - kept", .has_default = true, .want = {"t1/default"}},
      {.name = "terminating namespace - none created", .terminating = true, .want = {}},
      {.name = "namespace gone - none created", .namespace_exists = false, .want = {}},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    FakeClient api;
    if (row.namespace_exists) {
      api::Namespace ns;
      ns.metadata.name = "t1";
      ns.status.phase = row.terminating ? "Terminating" : "Active";
      if (row.terminating) ns.metadata.deletion_timestamp = api::Time::FromUnixSeconds(1);
      api.fake<api::Namespace>().Seed(ns);
    }
    if (row.has_default) {
      api::ServiceAccount sa;
      sa.metadata.namespace_ = "t1";
      sa.metadata.name = "default";
      api.fake<api::ServiceAccount>().Seed(sa);
    }
    Controller ctrl(api);
    ASSERT_TRUE(ctrl.Sync("t1").ok());
    std::vector<std::string> got;
    for (const auto& [key, _] : api.fake<api::ServiceAccount>().Objects()) got.push_back(key);
    EXPECT_EQ(got, row.want);
  }
}

}  // namespace
}  // namespace kvol::controller::serviceaccount
