#include "controller/namespace/namespace_controller.h"

#include <gtest/gtest.h>

#include "api/well_known.h"
#include "client/testing/fake_client.h"
#include "controller/namespace/content.h"

namespace kvol::controller::namespace_ {
namespace {

using client::testing::FakeClient;

api::Namespace Namespace(std::string name, bool deleting,
                         std::vector<std::string> finalizers = {"kubernetes"}) {
  api::Namespace ns;
  ns.metadata.name = std::move(name);
  ns.spec.finalizers = std::move(finalizers);
  ns.status.phase = deleting ? "Terminating" : "Active";
  if (deleting) ns.metadata.deletion_timestamp = api::Time::FromUnixSeconds(1);
  return ns;
}

api::ConfigMap ConfigMap(std::string ns, std::string name) {
  api::ConfigMap cm;
  cm.metadata.namespace_ = std::move(ns);
  cm.metadata.name = std::move(name);
  return cm;
}

api::PersistentVolumeClaim Claim(std::string ns, std::string name) {
  api::PersistentVolumeClaim c;
  c.metadata.namespace_ = std::move(ns);
  c.metadata.name = std::move(name);
  c.metadata.finalizers = {std::string(api::kPVCProtectionFinalizer)};
  return c;
}

// "<type>=<status>:<reason>: <message>", one per condition, for comparing.
std::vector<std::string> Describe(const std::vector<api::NamespaceCondition>& cs) {
  std::vector<std::string> out;
  for (const auto& c : cs)
    out.push_back(c.type + "=" + c.status + ":" + c.reason + ": " + c.message);
  return out;
}

struct Row {
  std::string name;
  std::vector<api::Namespace> namespaces;
  std::vector<api::ConfigMap> config_maps;
  std::vector<api::PersistentVolumeClaim> claims;
  std::function<void(FakeClient&)> inject;
  // After one pass over namespace "t1":
  bool namespace_gone = false;
  std::vector<std::string> spec_finalizers;  // if it stays
  std::vector<std::string> config_maps_left;
  std::vector<std::string> claims_left;  // "<ns>/<name>"
  bool requeued = false;
  std::vector<std::string> conditions;  // of the namespace, if it stays; empty: not checked
};

TEST(NamespaceControllerTest, Sync) {
  const std::vector<Row> rows = {
      {.name = "active namespace - nothing deleted",
       .namespaces = {Namespace("t1", false)},
       .config_maps = {ConfigMap("t1", "c")},
       .spec_finalizers = {"kubernetes"},
       .config_maps_left = {"t1/c"}},
      {.name = "terminating - content deleted, then the namespace",
       .namespaces = {Namespace("t1", true), Namespace("t2", false)},
       .config_maps = {ConfigMap("t1", "c"), ConfigMap("t1", "d"), ConfigMap("t2", "e")},
       .namespace_gone = true,
       .config_maps_left = {"t2/e"}},
      {.name = "terminating - a claim's finalizer holds it",
       .namespaces = {Namespace("t1", true)},
       .config_maps = {ConfigMap("t1", "c")},
       .claims = {Claim("t1", "data")},
       .spec_finalizers = {"kubernetes"},
       .claims_left = {"t1/data"},
       .requeued = true,
       .conditions =
           {"NamespaceDeletionDiscoveryFailure=False:ResourcesDiscovered: All resources "
            "successfully discovered",
            "NamespaceDeletionGroupVersionParsingFailure=False:ParsedGroupVersions: All legacy "
            "kube types successfully parsed",
            "NamespaceDeletionContentFailure=False:ContentDeleted: All content successfully "
            "deleted, may be waiting on finalization",
            "NamespaceContentRemaining=True:SomeResourcesRemain: Some resources are remaining: "
            "persistentvolumeclaims. has 1 resource instances",
            "NamespaceFinalizersRemaining=True:SomeFinalizersRemain: Some content in the "
            "namespace has finalizers remaining: kubernetes.io/pvc-protection in 1 resource "
            "instances"}},
      {.name = "terminating - a failed delete is reported and retried",
       .namespaces = {Namespace("t1", true)},
       .config_maps = {ConfigMap("t1", "c")},
       .inject =
           [](FakeClient& c) {
             c.state().InjectError("delete", "configmaps",
                                   {500, "InternalError", "etcd is down", {}, {}, {}, {}});
           },
       .spec_finalizers = {"kubernetes"},
       .config_maps_left = {"t1/c"},
       .requeued = true,
       .conditions =
           {"NamespaceDeletionDiscoveryFailure=False:ResourcesDiscovered: All resources "
            "successfully discovered",
            "NamespaceDeletionGroupVersionParsingFailure=False:ParsedGroupVersions: All legacy "
            "kube types successfully parsed",
            "NamespaceDeletionContentFailure=True:ContentDeletionFailed: Failed to delete all "
            "resource types, 1 remaining: configmaps.: etcd is down",
            "NamespaceContentRemaining=True:SomeResourcesRemain: Some resources are remaining: "
            "configmaps. has 1 resource instances",
            "NamespaceFinalizersRemaining=False:ContentHasNoFinalizers: All content-preserving "
            "finalizers finished"}},
      {.name = "finalized already - the namespace is deleted",
       .namespaces = {Namespace("t1", true, {})},
       .namespace_gone = true},
      {.name = "another controller's finalizer - waits for it",
       .namespaces = {Namespace("t1", true, {"example.com/cleanup"})},
       .spec_finalizers = {"example.com/cleanup"}},
      {.name = "both finalizers - ours goes, the other stays",
       .namespaces = {Namespace("t1", true, {"example.com/cleanup", "kubernetes"})},
       .config_maps = {ConfigMap("t1", "c")},
       .spec_finalizers = {"example.com/cleanup"}},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    FakeClient api;
    for (const auto& ns : row.namespaces) api.fake<api::Namespace>().Seed(ns);
    for (const auto& cm : row.config_maps) api.fake<api::ConfigMap>().Seed(cm);
    for (const auto& c : row.claims) api.fake<api::PersistentVolumeClaim>().Seed(c);
    if (row.inject) row.inject(api);
    Controller ctrl(api);
    auto result = ctrl.Sync("t1");
    ASSERT_TRUE(result.ok()) << result.status().message();
    EXPECT_EQ(result->requeue.has_value(), row.requeued);
    auto ns = api.resource<api::Namespace>().Get("", "t1");
    EXPECT_EQ(!ns.ok(), row.namespace_gone);
    if (ns.ok()) {
      EXPECT_EQ(ns->spec.finalizers, row.spec_finalizers);
      if (!row.conditions.empty()) EXPECT_EQ(Describe(ns->status.conditions), row.conditions);
    }
    std::vector<std::string> cms, claims;
    for (const auto& [key, _] : api.fake<api::ConfigMap>().Objects()) cms.push_back(key);
    for (const auto& [key, _] : api.fake<api::PersistentVolumeClaim>().Objects()) {
      claims.push_back(key);
    }
    EXPECT_EQ(cms, row.config_maps_left);
    EXPECT_EQ(claims, row.claims_left);
  }
}

TEST(NamespaceConditionsTest, TransitionTimeChangesOnlyWithStatus) {
  const auto t1 = api::Time::FromUnixSeconds(100), t2 = api::Time::FromUnixSeconds(200);
  Remaining some;
  some.resources["pods."] = 2;
  auto first = DeletionConditions(some, {}, t1);
  some.resources["pods."] = 1;  // fewer, still True: the time stays
  auto second = DeletionConditions(some, first, t2);
  auto third = DeletionConditions(Remaining{}, second, t2);
  ASSERT_EQ(first.size(), 5u);
  EXPECT_EQ(second[3].last_transition_time, t1);
  EXPECT_EQ(second[3].message, "Some resources are remaining: pods. has 1 resource instances");
  EXPECT_EQ(third[3].last_transition_time, t2);
  EXPECT_EQ(third[3].status, "False");
  EXPECT_EQ(third[0].last_transition_time, t1);
}

}  // namespace
}  // namespace kvol::controller::namespace_
