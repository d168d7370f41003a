#include "controller/garbagecollector/garbage_collector.h"

#include <gtest/gtest.h>

#include "api/generic.h"
#include "api/well_known.h"
#include "client/testing/fake_client.h"

namespace kvol::controller::garbagecollector {
namespace {

using client::testing::FakeClient;

api::OwnerReference Ref(std::string name, std::string uid, bool block = true,
                        std::string kind = "Deployment", std::string api_version = "apps/v1") {
  api::OwnerReference r;
  r.api_version = std::move(api_version);
  r.kind = std::move(kind);
  r.name = std::move(name);
  r.uid = std::move(uid);
  r.controller = true;
  r.block_owner_deletion = block;
  return r;
}

api::Deployment Deployment(std::string name, std::string uid,
                           std::vector<std::string> finalizers = {}) {
  api::Deployment d;
  d.metadata.namespace_ = "default";
  d.metadata.name = std::move(name);
  d.metadata.uid = std::move(uid);
  d.metadata.finalizers = std::move(finalizers);
  if (!d.metadata.finalizers.empty()) d.metadata.deletion_timestamp = api::Time::FromUnixSeconds(1);
  return d;
}

api::Pod Pod(std::string name, std::vector<api::OwnerReference> owners) {
  api::Pod p;
  p.metadata.namespace_ = "default";
  p.metadata.name = name;
  p.metadata.uid = "uid-" + name;
  p.metadata.owner_references = std::move(owners);
  return p;
}

// Passes of a fresh collector over everything until nothing changes (at most 6).
void Collect(FakeClient& api) {
  for (int round = 0; round < 6; ++round) {
    Collector gc(api);
    std::vector<std::string> keys;
    for (const auto& [_, d] : api.fake<api::Deployment>().Objects()) {
      gc.Observe(d);
      keys.push_back(ObjectKey("apps/v1", "Deployment", "default", d.metadata.name));
    }
    for (const auto& [_, p] : api.fake<api::Pod>().Objects()) {
      gc.Observe(p);
      keys.push_back(ObjectKey("v1", "Pod", "default", p.metadata.name));
    }
    for (const auto& key : keys) ASSERT_TRUE(gc.Sync(key).ok()) << key;
  }
}

// "name" or "name<-owner,owner" for every pod; deployments as "name[finalizers]".
std::string Describe(FakeClient& api) {
  std::string out;
  for (const auto& [_, d] : api.fake<api::Deployment>().Objects()) {
    out += "deploy/" + d.metadata.name;
    for (const auto& f : d.metadata.finalizers) out += "[" + f + "]";
    out += " ";
  }
  for (const auto& [_, p] : api.fake<api::Pod>().Objects()) {
    out += "pod/" + p.metadata.name;
    std::string sep = "<-";
    for (const auto& r : p.metadata.owner_references) {
      out += sep + r.name;
      sep = ",";
    }
    out += " ";
  }
  return out;
}

TEST(GarbageCollectorTest, Collect) {
  struct Row {
    std::string name;
    std::vector<api::Deployment> deployments;
    std::vector<api::Pod> pods;
    std::string want;
  };
  const std::vector<Row> rows = {
      {.name = "owner present - dependent kept",
       .deployments = {Deployment("web", "d1")},
       .pods = {Pod("a", {Ref("web", "d1")})},
       .want = "deploy/web pod/a<-web "},
      {.name = "owner gone - dependent deleted",
       .pods = {Pod("a", {Ref("web", "d1")}), Pod("free", {})},
       .want = "pod/free "},
      {.name = "owner recreated (another uid) - dependent of the old one deleted",
       .deployments = {Deployment("web", "d2")},
       .pods = {Pod("a", {Ref("web", "d1")}), Pod("b", {Ref("web", "d2")})},
       .want = "deploy/web pod/b<-web "},
      {.name = "one owner gone, another stays - only its reference goes",
       .deployments = {Deployment("web", "d1")},
       .pods = {Pod("a", {Ref("web", "d1"), Ref("old", "d0")})},
       .want = "deploy/web pod/a<-web "},
      {.name = "owner of a kind not served - kept",
       .pods = {Pod("a", {Ref("x", "u9", true, "Widget", "example.com/v1")})},
       .want = "pod/a<-x "},
      {.name = "orphan - dependents keep going without it, then it goes",
       .deployments = {Deployment("web", "d1", {"orphan"})},
       .pods = {Pod("a", {Ref("web", "d1")}), Pod("b", {Ref("web", "d1")})},
       .want = "pod/a pod/b "},
      {.name = "foreground - blocking dependents deleted first, then it goes",
       .deployments = {Deployment("web", "d1", {"foregroundDeletion"})},
       .pods = {Pod("a", {Ref("web", "d1")}), Pod("b", {Ref("web", "d1", false)})},
       .want = ""},
      {.name = "foreground - a dependent with another owner loses only the reference",
       .deployments = {Deployment("web", "d1", {"foregroundDeletion"}), Deployment("api", "d2")},
       .pods = {Pod("a", {Ref("web", "d1"), Ref("api", "d2")})},
       .want = "deploy/api pod/a<-api "},
      {.name = "foreground - another finalizer holds a dependent, so the owner waits",
       .deployments = {Deployment("web", "d1", {"foregroundDeletion"})},
       .pods = {[] {
         auto p = Pod("a", {Ref("web", "d1")});
         p.metadata.finalizers = {"example.com/hold"};
         return p;
       }()},
       .want = "deploy/web[foregroundDeletion] pod/a<-web "},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    FakeClient api;
    for (const auto& d : row.deployments) api.fake<api::Deployment>().Seed(d);
    for (const auto& p : row.pods) api.fake<api::Pod>().Seed(p);
    Collect(api);
    EXPECT_EQ(Describe(api), row.want);
  }
}

TEST(DependentsTest, TracksReferencesAsTheyChange) {
  Dependents deps;
  bool changed = false;
  EXPECT_TRUE(deps.Observe("k1", {Ref("web", "d1"), Ref("api", "d2")}, &changed).empty());
  EXPECT_TRUE(changed);
  deps.Observe("k2", {Ref("web", "d1")}, &changed);
  EXPECT_EQ(deps.Of("d1"), (std::vector<std::string>{"k1", "k2"}));
  deps.Observe("k1", {Ref("web", "d1"), Ref("api", "d2")}, &changed);
  EXPECT_FALSE(changed);
  auto dropped = deps.Observe("k1", {Ref("api", "d2")}, &changed);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].uid, "d1");
  EXPECT_EQ(deps.Of("d1"), (std::vector<std::string>{"k2"}));
  EXPECT_EQ(deps.Forget("k2").size(), 1u);
  EXPECT_TRUE(deps.Of("d1").empty());
  EXPECT_EQ(deps.size(), 1u);
  EXPECT_FALSE(deps.Reference("k1", "d1").has_value());
  EXPECT_TRUE(deps.Reference("k1", "d2").has_value());
}

TEST(ObjectKeyTest, RoundTrips) {
  auto id = ParseObjectKey(ObjectKey("apps/v1", "Deployment", "default", "web"));
  EXPECT_EQ(id.api_version, "apps/v1");
  EXPECT_EQ(id.kind, "Deployment");
  EXPECT_EQ(id.ns, "default");
  EXPECT_EQ(id.name, "web");
  id = ParseObjectKey(ObjectKey("v1", "Node", "", "n1"));
  EXPECT_EQ(id.ns, "");
  EXPECT_EQ(id.name, "n1");
}

}  // namespace
}  // namespace kvol::controller::garbagecollector
