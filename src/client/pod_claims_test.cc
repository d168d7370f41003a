// The index of which pods use which claims, and the claim a volume is bound to.
#include "client/pod_claims.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace kvol::client {
namespace {

api::Pod PodUsing(const std::string& name, std::vector<std::string> claims,
                  bool ephemeral = false) {
  api::Pod p;
  p.metadata.namespace_ = "ns";
  p.metadata.name = name;
  for (const auto& c : claims) {
    api::Volume v;
    v.name = c;
    v.persistent_volume_claim.emplace();
    v.persistent_volume_claim->claim_name = c;
    p.spec.volumes.push_back(std::move(v));
  }
  if (ephemeral) {
    api::Volume v;
    v.name = "scratch";
    v.ephemeral.emplace();
    p.spec.volumes.push_back(std::move(v));
  }
  return p;
}

TEST(PodClaimIndexTest, Table) {
  struct Case {
    const char* name;
    std::function<void(PodClaimIndex&)> events;
    std::vector<std::string> in_use;
    std::vector<std::string> not_in_use;
  };
  const std::vector<Case> cases = {
      {.name = "empty", .events = [](PodClaimIndex&) {}, .in_use = {}, .not_in_use = {"ns/a", ""}},
      {.name = "a pod's claims, and the claim made for its ephemeral volume",
       .events =
           [](PodClaimIndex& i) {
             i.Upsert(PodUsing("p", {"a", "b"}, true));
           },
       .in_use = {"ns/a", "ns/b", "ns/p-scratch"},
       .not_in_use = {"ns/c", "other/a", ""}},
      {.name = "an update drops the claims the pod no longer uses",
       .events =
           [](PodClaimIndex& i) {
             i.Upsert(PodUsing("p", {"a", "b"}));
             i.Upsert(PodUsing("p", {"b"}));
           },
       .in_use = {"ns/b"},
       .not_in_use = {"ns/a"}},
      {.name = "a claim stays in use while another pod uses it",
       .events =
           [](PodClaimIndex& i) {
             i.Upsert(PodUsing("p", {"a"}));
             i.Upsert(PodUsing("q", {"a"}));
             i.Remove("ns", "p");
           },
       .in_use = {"ns/a"},
       .not_in_use = {}},
      {.name = "removed with its last pod",
       .events =
           [](PodClaimIndex& i) {
             i.Upsert(PodUsing("p", {"a"}));
             i.Remove("ns", "p");
             i.Remove("ns", "never-added");
           },
       .in_use = {},
       .not_in_use = {"ns/a"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    PodClaimIndex index;
    c.events(index);
    for (const auto& k : c.in_use) {
      EXPECT_TRUE(index.InUse(k)) << k;
      EXPECT_FALSE(index.PodsUsing(k).empty()) << k;
    }
    for (const auto& k : c.not_in_use) {
      EXPECT_FALSE(index.InUse(k)) << k;
      EXPECT_TRUE(index.PodsUsing(k).empty()) << k;
    }
  }
}

TEST(PodClaimIndexTest, UpsertAndRemoveReturnTheClaimsTouched) {
  PodClaimIndex index;
  EXPECT_EQ(index.Upsert(PodUsing("p", {"b", "a"})), (std::vector<std::string>{"ns/a", "ns/b"}));
  EXPECT_EQ(index.Upsert(PodUsing("p", {"c"})), (std::vector<std::string>{"ns/a", "ns/b", "ns/c"}));
  EXPECT_EQ(index.Remove("ns", "p"), (std::vector<std::string>{"ns/c"}));
}

TEST(ClaimKeyOfVolumeTest, Table) {
  struct Case {
    const char* name;
    std::optional<api::ObjectReference> claim_ref;
    std::string want;
  };
  api::ObjectReference bound;
  bound.namespace_ = "ns";
  bound.name = "data";
  api::ObjectReference nameless;
  nameless.namespace_ = "ns";
  const std::vector<Case> cases = {
      {.name = "no claimRef", .claim_ref = std::nullopt, .want = ""},
      {.name = "bound or reserved", .claim_ref = bound, .want = "ns/data"},
      {.name = "a claimRef without a name", .claim_ref = nameless, .want = ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    api::PersistentVolume pv;
    pv.spec.claim_ref = c.claim_ref;
    EXPECT_EQ(ClaimKeyOfVolume(pv), c.want);
  }
}

TEST(WhenUsedTest, CallsOnlyForClaimsAndVolumesPodsUse) {
  PodClaimIndex index;
  index.Upsert(PodUsing("p", {"used"}));
  int calls = 0;
  auto claims = WhenClaimUsed(index, [&] { ++calls; });
  auto volumes = WhenVolumeUsed(index, [&] { ++calls; });
  auto claim = [](const std::string& name) {
    auto c = std::make_shared<api::PersistentVolumeClaim>();
    c->metadata.namespace_ = "ns";
    c->metadata.name = name;
    return std::shared_ptr<const api::PersistentVolumeClaim>(c);
  };
  auto volume = [](const std::string& claim_name) {
    auto pv = std::make_shared<api::PersistentVolume>();
    pv->metadata.name = "pv";
    if (!claim_name.empty()) {
      pv->spec.claim_ref.emplace();
      pv->spec.claim_ref->namespace_ = "ns";
      pv->spec.claim_ref->name = claim_name;
    }
    return std::shared_ptr<const api::PersistentVolume>(pv);
  };
  struct Case {
    const char* name;
    std::function<void()> event;
    int want_calls;
  };
  const std::vector<Case> cases = {
      {.name = "claim used: added",
       .event = [&] { claims.on_add(claim("used")); },
       .want_calls = 1},
      {.name = "claim used: updated",
       .event = [&] { claims.on_update(claim("used"), claim("used")); },
       .want_calls = 1},
      {.name = "claim used: deleted",
       .event = [&] { claims.on_delete(claim("used")); },
       .want_calls = 1},
      {.name = "claim no pod uses",
       .event = [&] { claims.on_add(claim("idle")); },
       .want_calls = 0},
      {.name = "volume bound to a used claim",
       .event = [&] { volumes.on_add(volume("used")); },
       .want_calls = 1},
      {.name = "volume unbound from a used claim",
       .event = [&] { volumes.on_update(volume("used"), volume("")); },
       .want_calls = 1},
      {.name = "volume bound to it now",
       .event = [&] { volumes.on_update(volume(""), volume("used")); },
       .want_calls = 1},
      {.name = "volume of a claim no pod uses",
       .event = [&] { volumes.on_update(volume("idle"), volume("idle")); },
       .want_calls = 0},
      {.name = "volume without a claim",
       .event = [&] { volumes.on_delete(volume("")); },
       .want_calls = 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    calls = 0;
    c.event();
    EXPECT_EQ(calls, c.want_calls);
  }
}

}  // namespace
}  // namespace kvol::client
