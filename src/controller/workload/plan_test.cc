// Deployment and StatefulSet decisions: what is created, deleted and reported, step by step.
#include "controller/workload/plan.h"

#include <gtest/gtest.h>

namespace kvol::controller::workload {
namespace {

using api::Json;

api::Deployment MakeDeployment(int replicas, const std::string& image = "nginx") {
  api::Deployment d;
  d.metadata.namespace_ = "default";
  d.metadata.name = "nginx";
  d.metadata.uid = "d-uid";
  d.metadata.generation = 2;
  d.spec = Json::parse(R"({"replicas": 1, "selector": {"matchLabels": {"app": "nginx"}},
    "template": {"metadata": {"labels": {"app": "nginx"}},
                 "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}})");
  d.spec["replicas"] = replicas;
  d.spec["template"]["spec"]["containers"][0]["image"] = image;
  return d;
}

api::StatefulSet MakeSet(int replicas, bool parallel = false) {
  api::StatefulSet s;
  s.metadata.namespace_ = "default";
  s.metadata.name = "web";
  s.metadata.uid = "s-uid";
  s.spec = Json::parse(R"({"serviceName": "nginx", "selector": {"matchLabels": {"app": "nginx"}},
    "template": {"metadata": {"labels": {"app": "nginx"}},
                 "spec": {"containers": [{"name": "nginx", "image": "nginx",
                   "volumeMounts": [{"name": "www", "mountPath": "/usr/share/nginx/html"}]}]}},
    "volumeClaimTemplates": [{"metadata": {"name": "www"},
      "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local-path",
               "resources": {"requests": {"storage": "1Gi"}}}}]})");
  s.spec["replicas"] = replicas;
  if (parallel) s.spec["podManagementPolicy"] = "Parallel";
  return s;
}

// A pod as the plan made it, stored under `name`, in `phase` and ready or not.
PodPtr Stored(api::Pod p, const std::string& name, bool ready,
              const std::string& phase = "Running") {
  p.metadata.name = name;
  p.status.phase = phase;
  p.status.conditions.push_back({"Ready", ready ? "True" : "False"});
  return std::make_shared<const api::Pod>(std::move(p));
}

TEST(DeploymentPlan, CreatesReplicasFromTheTemplate) {
  auto plan = PlanDeployment(MakeDeployment(3), {});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->create_pods.size(), 3u);
  const api::Pod& p = plan->create_pods[0];
  const std::string hash = p.metadata.labels.at(std::string(kPodTemplateHash));
  EXPECT_EQ(p.metadata.generate_name, "nginx-" + hash + "-");
  EXPECT_EQ(p.metadata.labels.at("app"), "nginx");
  EXPECT_EQ(p.metadata.namespace_, "default");
  ASSERT_EQ(p.metadata.owner_references.size(), 1u);
  EXPECT_EQ(p.metadata.owner_references[0].kind, "Deployment");
  EXPECT_EQ(p.metadata.owner_references[0].uid, "d-uid");
  EXPECT_TRUE(p.metadata.owner_references[0].controller.value_or(false));
  EXPECT_EQ(p.spec.containers[0].image, "nginx");
  EXPECT_TRUE(plan->delete_pods.empty());
  EXPECT_EQ(plan->status["observedGeneration"], 2);
  EXPECT_EQ(plan->status["unavailableReplicas"], 3);
  EXPECT_EQ(plan->status["conditions"][0]["reason"], "MinimumReplicasUnavailable");
  EXPECT_EQ(hash.find_first_of("aeiou"), std::string::npos) << hash;
}

TEST(DeploymentPlan, SteadyStateWritesNothingAndCountsReadyPods) {
  auto first = PlanDeployment(MakeDeployment(2), {});
  std::vector<PodPtr> owned = {Stored(first->create_pods[0], "nginx-x-aaaaa", true),
                               Stored(first->create_pods[1], "nginx-x-bbbbb", false)};
  auto plan = PlanDeployment(MakeDeployment(2), owned);
  EXPECT_TRUE(plan->create_pods.empty());
  EXPECT_TRUE(plan->delete_pods.empty());
  EXPECT_EQ(plan->status["replicas"], 2);
  EXPECT_EQ(plan->status["readyReplicas"], 1);
  EXPECT_EQ(plan->status["availableReplicas"], 1);
}

TEST(DeploymentPlan, ScalingDownTakesUnreadyPodsFirst) {
  auto first = PlanDeployment(MakeDeployment(3), {});
  std::vector<PodPtr> owned = {Stored(first->create_pods[0], "nginx-x-aaaaa", true),
                               Stored(first->create_pods[1], "nginx-x-bbbbb", false),
                               Stored(first->create_pods[2], "nginx-x-ccccc", true)};
  auto plan = PlanDeployment(MakeDeployment(1), owned);
  EXPECT_EQ(plan->delete_pods, (std::vector<std::string>{"nginx-x-bbbbb", "nginx-x-ccccc"}));
  EXPECT_TRUE(plan->create_pods.empty());
}

TEST(DeploymentPlan, ANewTemplateRecreatesThePods) {
  auto first = PlanDeployment(MakeDeployment(1), {});
  std::vector<PodPtr> owned = {Stored(first->create_pods[0], "nginx-x-aaaaa", true)};
  auto plan = PlanDeployment(MakeDeployment(1, "nginx:1.25"), owned);
  EXPECT_EQ(plan->delete_pods, std::vector<std::string>{"nginx-x-aaaaa"});
  ASSERT_EQ(plan->create_pods.size(), 1u);
  EXPECT_EQ(plan->create_pods[0].spec.containers[0].image, "nginx:1.25");
  EXPECT_NE(plan->create_pods[0].metadata.labels.at(std::string(kPodTemplateHash)),
            first->create_pods[0].metadata.labels.at(std::string(kPodTemplateHash)));
}

TEST(DeploymentPlan, FinishedPodsAreReplaced) {
  auto first = PlanDeployment(MakeDeployment(1), {});
  auto plan = PlanDeployment(MakeDeployment(1),
                             {Stored(first->create_pods[0], "nginx-x-aaaaa", false, "Failed")});
  EXPECT_EQ(plan->delete_pods, std::vector<std::string>{"nginx-x-aaaaa"});
  EXPECT_EQ(plan->create_pods.size(), 1u);
}

TEST(DeploymentPlan, PodsCreatedButNotYetSeenAreNotMadeTwice) {
  auto plan = PlanDeployment(MakeDeployment(3), {}, /*pending_creates=*/2);
  EXPECT_EQ(plan->create_pods.size(), 1u);
  plan = PlanDeployment(MakeDeployment(3), {}, 3);
  EXPECT_TRUE(plan->create_pods.empty());
}

TEST(DeploymentPlan, BadSpecIsAnError) {
  api::Deployment d = MakeDeployment(1);
  d.spec["replicas"] = "three";
  EXPECT_EQ(PlanDeployment(d, {}).status().code(), StatusCode::kInvalidArgument);
  d = MakeDeployment(1);
  d.spec.erase("template");
  EXPECT_EQ(PlanDeployment(d, {}).status().message(), "spec.template is required");
}

TEST(StatefulSetPlan, OrderedReadyMakesOnePodAndItsClaimsAtATime) {
  auto none = [](const std::string&) { return false; };
  auto plan = PlanStatefulSet(MakeSet(3), {}, none);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->create_claims.size(), 1u);
  const auto& claim = plan->create_claims[0];
  EXPECT_EQ(claim.metadata.name, "www-web-0");
  EXPECT_EQ(claim.metadata.labels.at("app"), "nginx");
  EXPECT_EQ(claim.spec.storage_class_name.value_or(""), "local-path");
  EXPECT_TRUE(claim.metadata.owner_references.empty()) << "claims outlive the set";
  ASSERT_EQ(plan->create_pods.size(), 1u);
  const api::Pod& web0 = plan->create_pods[0];
  EXPECT_EQ(web0.metadata.name, "web-0");
  EXPECT_EQ(web0.metadata.labels.at(std::string(kStatefulSetPodName)), "web-0");
  EXPECT_EQ(web0.spec.unknown_fields["hostname"], "web-0");
  EXPECT_EQ(web0.spec.unknown_fields["subdomain"], "nginx");
  ASSERT_EQ(web0.spec.volumes.size(), 1u);
  EXPECT_EQ(web0.spec.volumes[0].name, "www");
  EXPECT_EQ(web0.spec.volumes[0].persistent_volume_claim->claim_name, "www-web-0");
  EXPECT_EQ(plan->events.back().second, "create Pod web-0 in StatefulSet web successful");
  EXPECT_EQ(plan->events.front().second,
            "create Claim www-web-0 Pod web-0 in StatefulSet web success");

  auto has = [](const std::string& c) { return c == "www-web-0"; };
  // web-0 exists but is not ready: nothing more.
  auto waiting = PlanStatefulSet(MakeSet(3), {Stored(web0, "web-0", false, "Pending")}, has);
  EXPECT_TRUE(waiting->create_pods.empty());
  EXPECT_TRUE(waiting->create_claims.empty());
  EXPECT_EQ(waiting->status["replicas"], 1);
  // web-0 is Running and Ready: web-1 and its claim come next.
  auto next = PlanStatefulSet(MakeSet(3), {Stored(web0, "web-0", true)}, has);
  ASSERT_EQ(next->create_pods.size(), 1u);
  EXPECT_EQ(next->create_pods[0].metadata.name, "web-1");
  ASSERT_EQ(next->create_claims.size(), 1u);
  EXPECT_EQ(next->create_claims[0].metadata.name, "www-web-1");
}

TEST(StatefulSetPlan, ParallelMakesEverythingAtOnce) {
  auto plan = PlanStatefulSet(MakeSet(3, true), {}, [](const std::string&) { return false; });
  ASSERT_EQ(plan->create_pods.size(), 3u);
  EXPECT_EQ(plan->create_pods[2].metadata.name, "web-2");
  EXPECT_EQ(plan->create_claims.size(), 3u);
}

TEST(StatefulSetPlan, ScalingDownRemovesTheHighestOrdinalAndKeepsClaims) {
  auto all = PlanStatefulSet(MakeSet(3, true), {}, [](const std::string&) { return false; });
  std::vector<PodPtr> owned;
  for (int i = 0; i < 3; ++i) {
    owned.push_back(Stored(all->create_pods[i], "web-" + std::to_string(i), true));
  }
  auto plan = PlanStatefulSet(MakeSet(1), owned, [](const std::string&) { return true; });
  EXPECT_EQ(plan->delete_pods, std::vector<std::string>{"web-2"}) << "one at a time, highest first";
  EXPECT_TRUE(plan->create_claims.empty());
  EXPECT_EQ(plan->events.back().second, "delete Pod web-2 in StatefulSet web successful");
}

TEST(StatefulSetPlan, OrderedScaleDownWaitsForThePodOnItsWayOut) {
  auto all = PlanStatefulSet(MakeSet(3, true), {}, [](const std::string&) { return false; });
  std::vector<PodPtr> owned;
  for (int i = 0; i < 3; ++i) {
    api::Pod p = all->create_pods[i];
    if (i == 2) p.metadata.deletion_timestamp = api::Time::FromUnixSeconds(1);
    owned.push_back(Stored(p, "web-" + std::to_string(i), true));
  }
  auto plan = PlanStatefulSet(MakeSet(1), owned, [](const std::string&) { return true; });
  EXPECT_TRUE(plan->delete_pods.empty()) << "web-1 waits until web-2 is gone";
}

TEST(StatefulSetPlan, OrdinalsOfOtherNamesAreIgnored) {
  auto all = PlanStatefulSet(MakeSet(1), {}, [](const std::string&) { return false; });
  auto plan = PlanStatefulSet(MakeSet(1), {Stored(all->create_pods[0], "web-x", true)},
                              [](const std::string&) { return false; });
  ASSERT_EQ(plan->create_pods.size(), 1u);
  EXPECT_EQ(plan->create_pods[0].metadata.name, "web-0");
}

}  // namespace
}  // namespace kvol::controller::workload
