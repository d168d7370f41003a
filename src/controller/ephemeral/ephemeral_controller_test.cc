#include "controller/ephemeral/ephemeral_controller.h"

#include <gtest/gtest.h>

#include "client/testing/fake_client.h"

namespace kvol::controller::ephemeral {
namespace {

using client::testing::FakeClient;

api::Pod PodWithScratch(bool deleting = false) {
  api::Pod p;
  p.metadata.namespace_ = "default";
  p.metadata.name = "web";
  p.metadata.uid = "pod-uid";
  if (deleting) p.metadata.deletion_timestamp = api::Time::FromUnixSeconds(1);
  auto& v = p.spec.volumes.emplace_back();
  v.name = "scratch";
  auto& t = v.ephemeral.emplace().volume_claim_template.emplace();
  t.metadata.labels["type"] = "scratch";
  t.spec.access_modes = {"ReadWriteOnce"};
  t.spec.storage_class_name = "fast";
  auto& other = p.spec.volumes.emplace_back();
  other.name = "cache";
  other.empty_dir.emplace();
  return p;
}

api::PersistentVolumeClaim Existing(std::string owner_uid) {
  api::PersistentVolumeClaim c;
  c.metadata.namespace_ = "default";
  c.metadata.name = "web-scratch";
  if (!owner_uid.empty()) {
    api::OwnerReference r;
    r.kind = "Pod";
    r.name = "web";
    r.uid = std::move(owner_uid);
    r.controller = true;
    c.metadata.owner_references = {r};
  }
  return c;
}

TEST(EphemeralControllerTest, SyncPod) {
  struct Row {
    std::string name;
    bool deleting = false;
    std::optional<api::PersistentVolumeClaim> existing;
    std::function<void(FakeClient&)> inject;
    bool ok = true;
    std::string claim_owner;  // uid of the claim's controller afterwards; "" for no claim
    std::string claim_label;  // its "type" label
    std::string event;        // "<type> <reason> <message>"
  };
  const std::vector<Row> rows = {
      {.name = "no claim yet - made from the template, owned by the pod",
       .claim_owner = "pod-uid",
       .claim_label = "scratch"},
      {.name = "the pod's claim exists - left alone",
       .existing = Existing("pod-uid"),
       .claim_owner = "pod-uid"},
      {.name = "a claim of that name another pod owns - refused with an event",
       .existing = Existing("other-uid"),
       .ok = false,
       .claim_owner = "other-uid",
       .event = "Warning FailedBinding ephemeral volume scratch: PVC default/web-scratch was not "
                "created for pod default/web (pod is not owner)"},
      {.name = "a claim of that name made by hand - refused",
       .existing = Existing(""),
       .ok = false,
       .event = "Warning FailedBinding ephemeral volume scratch: PVC default/web-scratch was not "
                "created for pod default/web (pod is not owner)"},
      {.name = "pod being deleted - nothing made", .deleting = true},
      {.name = "create fails - an event, and tried again",
       .inject =
           [](FakeClient& c) {
             c.state().InjectError("create", "persistentvolumeclaims",
                                   {403, "Forbidden", "quota exceeded", {}, {}, {}, {}});
           },
       .ok = false,
       .event = "Warning FailedBinding ephemeral volume scratch: create PVC web-scratch: quota "
                "exceeded"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    FakeClient api;
    if (row.existing) api.fake<api::PersistentVolumeClaim>().Seed(*row.existing);
    if (row.inject) row.inject(api);
    std::vector<std::string> events;
    Controller ctrl(
        api, {.events = [&](const api::ObjectReference&, std::string_view type,
                            std::string_view reason, std::string message) {
          events.push_back(std::string(type) + " " + std::string(reason) + " " + message);
        }});
    EXPECT_EQ(ctrl.SyncPod(PodWithScratch(row.deleting)).ok(), row.ok);
    auto claim = api.resource<api::PersistentVolumeClaim>().Get("default", "web-scratch");
    std::string owner, label;
    if (claim.ok()) {
      for (const auto& r : claim->metadata.owner_references) {
        if (r.controller.value_or(false)) owner = r.uid;
      }
      label = claim->metadata.labels["type"];
    }
    EXPECT_EQ(owner, row.claim_owner);
    EXPECT_EQ(label, row.claim_label);
    EXPECT_EQ(events,
              row.event.empty() ? std::vector<std::string>{} : std::vector<std::string>{row.event});
  }
}

TEST(EphemeralControllerTest, ClaimForCopiesTheTemplate) {
  auto pod = PodWithScratch();
  auto c = ClaimFor(pod, pod.spec.volumes[0]);
  EXPECT_EQ(c.metadata.name, "web-scratch");
  EXPECT_EQ(c.metadata.namespace_, "default");
  ASSERT_EQ(c.metadata.owner_references.size(), 1u);
  const auto& r = c.metadata.owner_references[0];
  EXPECT_EQ(r.api_version + " " + r.kind + " " + r.name + " " + r.uid, "v1 Pod web pod-uid");
  EXPECT_TRUE(r.block_owner_deletion.value_or(false));
  EXPECT_EQ(c.spec.storage_class_name.value_or(""), "fast");
}

}  // namespace
}  // namespace kvol::controller::ephemeral
