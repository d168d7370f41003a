// What objects count for against quotas, which quotas they count against, status.used, and the
// admission check with Kubernetes' messages.
#include "api/quota.h"

#include <gtest/gtest.h>

namespace kvol::api {
namespace {

ResourceList List(std::initializer_list<std::pair<const char*, const char*>> entries) {
  ResourceList out;
  for (const auto& [name, q] : entries) out[name] = Quantity::MustParse(q);
  return out;
}

template <class T>
T Decode(const char* json) {
  FieldErrors errs;
  T obj = DecodeStruct<T>(Json::parse(json), &errs);
  EXPECT_TRUE(errs.empty()) << json;
  return obj;
}

// Equal as quotas compare: by value ("1Gi" == "1024Mi").
void ExpectList(const ResourceList& got, const ResourceList& want) {
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [name, q] : want) {
    auto it = got.find(name);
    if (it == got.end()) {
      ADD_FAILURE() << "missing " << name;
    } else {
      EXPECT_EQ(it->second, q) << name << ": " << it->second.ToString();
    }
  }
  for (const auto& [name, q] : got) {
    if (!want.count(name)) ADD_FAILURE() << "unexpected " << name << "=" << q.ToString();
  }
}

struct ItemRow {
  const char* name;
  QuotaItem item;
  const char* resource;
  ResourceList usage;
  bool best_effort = false;
};

TEST(QuotaItemTest, WhatEachObjectCountsFor) {
  const ItemRow rows[] = {
      {.name = "a claim of class gold",
       .item = QuotaItemOf(Decode<PersistentVolumeClaim>(
           R"({"spec": {"storageClassName": "gold",
                        "resources": {"requests": {"storage": "1Gi"}}}})")),
       .resource = "persistentvolumeclaims",
       .usage = List({{"count/persistentvolumeclaims", "1"},
                      {"persistentvolumeclaims", "1"},
                      {"requests.storage", "1Gi"},
                      {"gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1"},
                      {"gold.storageclass.storage.k8s.io/requests.storage", "1Gi"}})},
      {.name = "a claim naming its class by the beta annotation, asking no size",
       .item = QuotaItemOf(Decode<PersistentVolumeClaim>(
           R"({"metadata": {"annotations":
                 {"volume.beta.kubernetes.io/storage-class": "silver"}}})")),
       .resource = "persistentvolumeclaims",
       .usage = List({{"count/persistentvolumeclaims", "1"},
                      {"persistentvolumeclaims", "1"},
                      {"silver.storageclass.storage.k8s.io/persistentvolumeclaims", "1"}})},
      {.name = "a running pod: containers add up, the largest init container counts",
       .item = QuotaItemOf(Decode<Pod>(R"({"spec": {
           "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"},
                                                      "limits": {"memory": "1Gi"}}},
                          {"name": "b", "resources": {"requests": {"cpu": "200m",
                                                                   "example.com/gpu": "1"}}}],
           "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "500m"}}}]},
           "status": {"phase": "Running"}})")),
       .resource = "pods",
       .usage = List({{"count/pods", "1"},
                      {"pods", "1"},
                      {"cpu", "500m"},
                      {"requests.cpu", "500m"},
                      {"limits.memory", "1Gi"},
                      {"requests.example.com/gpu", "1"}})},
      {.name = "a pod that has finished counts as an object only",
       .item = QuotaItemOf(Decode<Pod>(R"({"spec": {"containers": [{"name": "a"}]},
                           "status": {"phase": "Succeeded"}})")),
       .resource = "pods",
       .usage = List({{"count/pods", "1"}}),
       .best_effort = true},
      {.name = "a load balancer with two ports",
       .item = QuotaItemOf(Decode<Service>(
           R"({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}})")),
       .resource = "services",
       .usage = List({{"count/services", "1"},
                      {"services", "1"},
                      {"services.loadbalancers", "1"},
                      {"services.nodeports", "2"}})},
      {.name = "a configMap, under its legacy name too",
       .item = QuotaItemOf(ConfigMap{}),
       .resource = "configmaps",
       .usage = List({{"count/configmaps", "1"}, {"configmaps", "1"}})},
      {.name = "a deployment",
       .item = QuotaItemOf(Deployment{}),
       .resource = "deployments",
       .usage = List({{"count/deployments.apps", "1"}})},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(row.item.resource, row.resource);
    ExpectList(row.item.usage, row.usage);
    if (row.item.pod) {
      EXPECT_EQ(row.item.best_effort, row.best_effort);
    }
  }
}

TEST(QuotaSourceTest, WhichObjectsEachNameCounts) {
  using Source = std::optional<std::pair<std::string, std::string>>;
  const std::pair<const char*, Source> rows[] = {
      {"requests.storage", Source({"persistentvolumeclaims", ""})},
      {"gold.storageclass.storage.k8s.io/persistentvolumeclaims",
       Source({"persistentvolumeclaims", ""})},
      {"gold.storageclass.storage.k8s.io/cpu", std::nullopt},
      {"requests.cpu", Source({"pods", ""})},
      {"limits.memory", Source({"pods", ""})},
      {"requests.example.com/gpu", Source({"pods", ""})},
      {"services.nodeports", Source({"services", ""})},
      {"secrets", Source({"secrets", ""})},
      {"count/replicasets.apps", Source({"replicasets", "apps"})},
      {"count/persistentvolumeclaims", Source({"persistentvolumeclaims", ""})},
      {"count/widgets.example.com", std::nullopt},  // not served: left out of status.used
      {"count/persistentvolumes", std::nullopt},    // cluster-scoped: no namespace counts it
  };
  for (const auto& [name, want] : rows) EXPECT_EQ(QuotaSourceOf(name), want) << name;
}

ResourceQuota Quota(const char* json) { return Decode<ResourceQuota>(json); }

TEST(QuotaMatchesTest, ScopesCountPodsOnly) {
  const QuotaItem claim = QuotaItemOf(PersistentVolumeClaim{});
  const QuotaItem best_effort =
      QuotaItemOf(Decode<Pod>(R"({"spec": {"containers": [{"name": "a"}]}})"));
  const QuotaItem guaranteed = QuotaItemOf(Decode<Pod>(
      R"({"spec": {"priorityClassName": "high", "activeDeadlineSeconds": 30, "containers":
           [{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}})"));
  struct Row {
    const char* name;
    const char* quota;
    bool claim, best_effort, guaranteed;
  };
  const Row rows[] = {
      {"no scope: everything", R"({"spec": {}})", true, true, true},
      {"BestEffort", R"({"spec": {"scopes": ["BestEffort"]}})", false, true, false},
      {"NotBestEffort and Terminating", R"({"spec": {"scopes": ["NotBestEffort", "Terminating"]}})",
       false, false, true},
      {"NotTerminating", R"({"spec": {"scopes": ["NotTerminating"]}})", false, true, false},
      {"PriorityClass In",
       R"({"spec": {"scopeSelector": {"matchExpressions":
            [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}})",
       false, false, true},
      {"PriorityClass DoesNotExist",
       R"({"spec": {"scopeSelector": {"matchExpressions":
            [{"scopeName": "PriorityClass", "operator": "DoesNotExist"}]}}})",
       false, true, false},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    const ResourceQuota q = Quota(row.quota);
    EXPECT_EQ(QuotaMatches(q, claim), row.claim);
    EXPECT_EQ(QuotaMatches(q, best_effort), row.best_effort);
    EXPECT_EQ(QuotaMatches(q, guaranteed), row.guaranteed);
  }
}

TEST(QuotaUsedTest, TrackedNamesFromZero) {
  const ResourceQuota q = Quota(R"({"spec": {"hard": {
      "persistentvolumeclaims": "10", "requests.storage": "10Gi", "count/deployments.apps": "2",
      "gold.storageclass.storage.k8s.io/requests.storage": "5Gi", "resourcequotas": "1",
      "count/widgets.example.com": "1"}}})");
  const auto claim = [](const char* cls, const char* size) {
    PersistentVolumeClaim c;
    c.spec.storage_class_name = cls;
    c.spec.resources.requests["storage"] = Quantity::MustParse(size);
    return QuotaItemOf(c);
  };
  ExpectList(QuotaUsed(q, {}), List({{"persistentvolumeclaims", "0"},
                                     {"requests.storage", "0"},
                                     {"count/deployments.apps", "0"},
                                     {"gold.storageclass.storage.k8s.io/requests.storage", "0"},
                                     {"resourcequotas", "0"}}));
  ExpectList(QuotaUsed(q, {claim("gold", "1Gi"), claim("silver", "2Gi"), QuotaItemOf(q)}),
             List({{"persistentvolumeclaims", "2"},
                   {"requests.storage", "3Gi"},
                   {"count/deployments.apps", "0"},
                   {"gold.storageclass.storage.k8s.io/requests.storage", "1Gi"},
                   {"resourcequotas", "1"}}));
}

TEST(QuotaGrowthTest, OnlyWhatGrew) {
  PersistentVolumeClaim before;
  before.spec.storage_class_name = "gold";
  before.spec.resources.requests["storage"] = Quantity::MustParse("1Gi");
  PersistentVolumeClaim after = before;
  after.spec.resources.requests["storage"] = Quantity::MustParse("3Gi");
  ExpectList(QuotaGrowth(QuotaItemOf(after), QuotaItemOf(before)).usage,
             List({{"requests.storage", "2Gi"},
                   {"gold.storageclass.storage.k8s.io/requests.storage", "2Gi"}}));
  EXPECT_TRUE(QuotaGrowth(QuotaItemOf(before), QuotaItemOf(after)).usage.empty())
      << "a smaller request frees nothing here: the controller counts it";
}

struct CheckRow {
  const char* name;
  const char* quota;
  QuotaItem item;
  std::optional<std::string> refusal;
  std::optional<ResourceList> used;
};

TEST(CheckQuotaTest, AdmissionAgainstOneQuota) {
  const char* kStorage = R"({"metadata": {"name": "q"},
      "spec": {"hard": {"persistentvolumeclaims": "2", "requests.storage": "2Gi"}},
      "status": {"used": {"persistentvolumeclaims": "1", "requests.storage": "1Gi"}}})";
  const auto claim = [](const char* size) {
    PersistentVolumeClaim c;
    c.spec.resources.requests["storage"] = Quantity::MustParse(size);
    return QuotaItemOf(c);
  };
  const CheckRow rows[] = {
      {.name = "fits: charged",
       .quota = kStorage,
       .item = claim("1Gi"),
       .used = List({{"persistentvolumeclaims", "2"}, {"requests.storage", "2Gi"}})},
      {.name = "too big",
       .quota = kStorage,
       .item = claim("1536Mi"),
       .refusal = "exceeded quota: q, requested: requests.storage=1536Mi, used: "
                  "requests.storage=1Gi, limited: requests.storage=2Gi"},
      {.name = "not counted yet",
       .quota = R"({"metadata": {"name": "q"},
           "spec": {"hard": {"persistentvolumeclaims": "2", "requests.storage": "2Gi"}}})",
       .item = claim("1Gi"),
       .refusal = "status unknown for quota: q, resources: persistentvolumeclaims,"
                  "requests.storage"},
      {.name = "nothing the quota limits", .quota = kStorage, .item = QuotaItemOf(ConfigMap{})},
      {.name = "a pod that does not say how much cpu it wants",
       .quota = R"({"metadata": {"name": "compute"},
           "spec": {"hard": {"requests.cpu": "1", "limits.memory": "1Gi"}},
           "status": {"used": {"requests.cpu": "0", "limits.memory": "0"}}})",
       .item = QuotaItemOf(Decode<Pod>(R"({"spec": {"containers": [
           {"name": "a", "resources": {"requests": {"cpu": "100m"}}},
           {"name": "b", "resources": {"limits": {"memory": "1Gi"}}}]}})")),
       .refusal = "failed quota: compute: must specify limits.memory,requests.cpu"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    const QuotaDecision d = CheckQuota(Quota(row.quota), row.item);
    EXPECT_EQ(d.refusal, row.refusal);
    ASSERT_EQ(d.used.has_value(), row.used.has_value());
    if (d.used) ExpectList(*d.used, *row.used);
  }
}

}  // namespace
}  // namespace kvol::api
