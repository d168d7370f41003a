#include "controller/rootca/publisher.h"

#include <gtest/gtest.h>

#include "api/well_known.h"
#include "client/testing/fake_client.h"

namespace kvol::controller::rootca {
namespace {

using client::testing::FakeClient;

constexpr char kBundle[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

TEST(RootCaPublisherTest, Sync) {
  struct Row {
    std::string name;
    bool namespace_exists = true;
    bool terminating = false;
    std::optional<std::map<std::string, std::string>> data;  // the ConfigMap's, when it exists
    bool described = true;
    std::optional<std::string> want;  // the ConfigMap's ca.crt after the pass; none: absent
    bool want_written = false;
  };
  const std::vector<Row> rows = {
      {.name = "new namespace - published", .want = kBundle, .want_written = true},
      {.name = "current - left alone", .data = {{{"ca.crt", kBundle}}}, .want = kBundle},
      {.name = "another bundle - replaced",
       .data = {{{"ca.crt", "old"}}},
       .want = kBundle,
       .want_written = true},
      {.name = "a key added - dropped",
       .data = {{{"ca.crt", kBundle}, {"extra", "x"}}},
       .want = kBundle,
       .want_written = true},
      {.name = "description removed - put back",
       .data = {{{"ca.crt", kBundle}}},
       .described = false,
       .want = kBundle,
       .want_written = true},
      {.name = "terminating namespace - none made", .terminating = true},
      {.name = "namespace gone - none made", .namespace_exists = false},
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
    std::string seeded_version;
    if (row.data) {
      api::ConfigMap cm;
      cm.metadata.namespace_ = "t1";
      cm.metadata.name = api::kRootCaConfigMap;
      cm.data = *row.data;
      if (row.described) cm.metadata.annotations[std::string(kDescriptionAnnotation)] = "d";
      seeded_version = api.fake<api::ConfigMap>().Seed(cm).metadata.resource_version;
    }
    Publisher publisher(api, Options{.ca_bundle = kBundle});
    ASSERT_TRUE(publisher.Sync("t1").ok());
    auto got = api.fake<api::ConfigMap>().Get("t1", api::kRootCaConfigMap);
    if (!row.want) {
      EXPECT_FALSE(got.ok());
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->data.size(), 1u);
    EXPECT_EQ(got->data[std::string(api::kRootCaKey)], *row.want);
    EXPECT_FALSE(got->metadata.annotations[std::string(kDescriptionAnnotation)].empty());
    EXPECT_EQ(got->metadata.resource_version != seeded_version, row.want_written);
  }
}

}  // namespace
}  // namespace kvol::controller::rootca
