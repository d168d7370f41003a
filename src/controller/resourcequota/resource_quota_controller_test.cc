#include "controller/resourcequota/resource_quota_controller.h"

#include <gtest/gtest.h>

#include "client/testing/fake_client.h"

namespace kvol::controller::resourcequota {
namespace {

using client::testing::FakeClient;

api::ResourceList List(std::initializer_list<std::pair<const char*, const char*>> entries) {
  api::ResourceList out;
  for (const auto& [name, q] : entries) out[name] = api::Quantity::MustParse(q);
  return out;
}

api::PersistentVolumeClaim Claim(const char* ns, const char* name, const char* cls,
                                 const char* size) {
  api::PersistentVolumeClaim c;
  c.metadata.namespace_ = ns;
  c.metadata.name = name;
  c.spec.storage_class_name = cls;
  c.spec.resources.requests["storage"] = api::Quantity::MustParse(size);
  return c;
}

struct Row {
  std::string name;
  api::ResourceList hard;
  std::optional<api::ResourceQuotaStatus> status;  // as stored before the pass
  std::vector<api::PersistentVolumeClaim> claims;
  int configmaps = 0;
  api::ResourceList want_used;
  bool written = true;
};

TEST(ResourceQuotaControllerTest, Sync) {
  const api::ResourceList storage =
      List({{"persistentvolumeclaims", "5"},
            {"requests.storage", "5Gi"},
            {"gold.storageclass.storage.k8s.io/requests.storage", "2Gi"},
            {"configmaps", "3"},
            {"count/deployments.apps", "1"},
            {"count/widgets.example.com", "1"}});
  const std::vector<Row> rows = {
      {.name = "a new quota: hard copied, everything it tracks counted",
       .hard = storage,
       .claims = {Claim("t1", "a", "gold", "1Gi"), Claim("t1", "b", "", "2Gi"),
                  Claim("t2", "other", "gold", "4Gi")},
       .configmaps = 1,
       .want_used = List({{"persistentvolumeclaims", "2"},
                          {"requests.storage", "3Gi"},
                          {"gold.storageclass.storage.k8s.io/requests.storage", "1Gi"},
                          {"configmaps", "1"},
                          {"count/deployments.apps", "0"}})},
      {.name = "counted already (as admission charged it): not written again",
       .hard = List({{"persistentvolumeclaims", "5"}}),
       .status = api::ResourceQuotaStatus{.hard = List({{"persistentvolumeclaims", "5"}}),
                                          .used = List({{"persistentvolumeclaims", "1"}})},
       .claims = {Claim("t1", "a", "", "1Gi")},
       .want_used = List({{"persistentvolumeclaims", "1"}}),
       .written = false},
      {.name = "a claim gone: its usage released",
       .hard = List({{"persistentvolumeclaims", "5"}, {"requests.storage", "5Gi"}}),
       .status =
           api::ResourceQuotaStatus{
               .hard = List({{"persistentvolumeclaims", "5"}, {"requests.storage", "5Gi"}}),
               .used = List({{"persistentvolumeclaims", "1"}, {"requests.storage", "1Gi"}})},
       .want_used = List({{"persistentvolumeclaims", "0"}, {"requests.storage", "0"}})},
      {.name = "spec.hard changed: status.hard follows",
       .hard = List({{"persistentvolumeclaims", "7"}}),
       .status = api::ResourceQuotaStatus{.hard = List({{"persistentvolumeclaims", "5"}}),
                                          .used = List({{"persistentvolumeclaims", "0"}})},
       .want_used = List({{"persistentvolumeclaims", "0"}})},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    FakeClient api;
    api::ResourceQuota q;
    q.metadata.namespace_ = "t1";
    q.metadata.name = "q";
    q.spec.hard = row.hard;
    if (row.status) q.status = *row.status;
    api.fake<api::ResourceQuota>().Seed(q);
    for (const auto& c : row.claims) api.fake<api::PersistentVolumeClaim>().Seed(c);
    for (int i = 0; i < row.configmaps; ++i) {
      api::ConfigMap cm;
      cm.metadata.namespace_ = "t1";
      cm.metadata.name = "cm" + std::to_string(i);
      api.fake<api::ConfigMap>().Seed(cm);
    }
    api.state().ClearActions();
    Controller ctrl(api);
    ASSERT_TRUE(ctrl.Sync("t1").ok());
    const auto stored = api.fake<api::ResourceQuota>().Objects().at("t1/q");
    EXPECT_EQ(stored.status.hard, row.hard);
    EXPECT_EQ(stored.status.used, row.want_used);
    EXPECT_EQ(stored.status.used.size(), row.want_used.size());
    int writes = 0;
    for (const auto& a : api.state().actions()) writes += a.verb == "update-status";
    EXPECT_EQ(writes, row.written ? 1 : 0);
  }
}

TEST(ResourceQuotaControllerTest, ANamespaceWithoutQuotasIsNotCounted) {
  FakeClient api;
  api.fake<api::PersistentVolumeClaim>().Seed(Claim("t1", "a", "", "1Gi"));
  api.state().ClearActions();
  Controller ctrl(api);
  ASSERT_TRUE(ctrl.Sync("t1").ok());
  for (const auto& a : api.state().actions()) {
    EXPECT_EQ(a.resource, "resourcequotas") << "only the quotas are listed";
  }
}

}  // namespace
}  // namespace kvol::controller::resourcequota
