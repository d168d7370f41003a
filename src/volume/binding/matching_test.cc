#include "volume/binding/matching.h"

#include <gtest/gtest.h>

#include "api/well_known.h"

namespace kvol::volume::binding {
namespace {

using api::PersistentVolume;
using api::PersistentVolumeClaim;

struct Vol {
  std::string name;
  std::string size = "1Gi";
  std::vector<std::string> modes = {"ReadWriteOnce"};
  std::string cls;
  std::string phase = "Available";
  std::string claim;  // "ns/name[/uid]" pre-binds
  std::map<std::string, std::string> labels;
  std::optional<std::string> mode;
  std::string node;  // node affinity to kubernetes.io/hostname=node
  bool deleting = false;
};

VolumePtr MakeVolume(const Vol& v) {
  auto pv = std::make_shared<PersistentVolume>();
  pv->metadata.name = v.name;
  pv->metadata.labels = v.labels;
  pv->spec.capacity["storage"] = api::Quantity::MustParse(v.size);
  pv->spec.access_modes = v.modes;
  pv->spec.storage_class_name = v.cls;
  pv->spec.volume_mode = v.mode;
  pv->status.phase = v.phase;
  if (v.deleting) pv->metadata.deletion_timestamp = api::Time::FromUnixSeconds(1);
  if (!v.claim.empty()) {
    auto& ref = pv->spec.claim_ref.emplace();
    auto slash = v.claim.find('/');
    ref.namespace_ = v.claim.substr(0, slash);
    std::string rest = v.claim.substr(slash + 1);
    auto uid = rest.find('/');
    ref.name = rest.substr(0, uid);
    if (uid != std::string::npos) ref.uid = rest.substr(uid + 1);
  }
  if (!v.node.empty()) {
    api::NodeSelectorRequirement r;
    r.key = "kubernetes.io/hostname";
    r.operator_ = "In";
    r.values = {v.node};
    api::NodeSelectorTerm t;
    t.match_expressions = {r};
    pv->spec.node_affinity.emplace().required.emplace().node_selector_terms = {t};
  }
  return pv;
}

struct Claim {
  std::string size = "1Gi";
  std::vector<std::string> modes = {"ReadWriteOnce"};
  std::optional<std::string> cls = "";
  std::map<std::string, std::string> selector;
  std::optional<std::string> mode;
};

PersistentVolumeClaim MakeClaim(const Claim& c) {
  PersistentVolumeClaim pvc;
  pvc.metadata.namespace_ = "ns";
  pvc.metadata.name = "claim";
  pvc.metadata.uid = "uid-1";
  pvc.spec.resources.requests["storage"] = api::Quantity::MustParse(c.size);
  pvc.spec.access_modes = c.modes;
  pvc.spec.storage_class_name = c.cls;
  pvc.spec.volume_mode = c.mode;
  if (!c.selector.empty()) pvc.spec.selector.emplace().match_labels = c.selector;
  return pvc;
}

api::Node MakeNode(std::string name) {
  api::Node n;
  n.metadata.name = name;
  n.metadata.labels["kubernetes.io/hostname"] = name;
  return n;
}

// Each case runs through both the list form (FindMatchingVolume) and the index.
struct Case {
  std::string name;
  std::vector<Vol> volumes;
  Claim claim;
  std::string want;  // "" for no match
  bool delay = false;
  std::string node;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class MatchingTest : public ::testing::TestWithParam<Case> {};

TEST_P(MatchingTest, ListAndIndexAgree) {
  const Case& c = GetParam();
  std::vector<VolumePtr> volumes;
  VolumeIndex index;
  for (const auto& v : c.volumes) {
    volumes.push_back(MakeVolume(v));
    index.Upsert(volumes.back());
  }
  auto claim = MakeClaim(c.claim);
  api::Node node = MakeNode(c.node);
  MatchOptions o{c.delay, c.node.empty() ? nullptr : &node};
  auto listed = FindMatchingVolume(claim, volumes, o);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(*listed ? (*listed)->metadata.name : "", c.want) << "list";
  auto indexed = index.FindBestMatch(claim, o);
  ASSERT_TRUE(indexed.ok()) << indexed.status().ToString();
  EXPECT_EQ(*indexed ? (*indexed)->metadata.name : "", c.want) << "index";
}

const Vol kSmall{.name = "small", .size = "1Gi"};
const Vol kMedium{.name = "medium", .size = "5Gi"};
const Vol kLarge{.name = "large", .size = "10Gi"};

INSTANTIATE_TEST_SUITE_P(
    Cases, MatchingTest,
    ::testing::Values(
        Case{"smallest_that_fits", {kLarge, kSmall, kMedium}, {.size = "2Gi"}, "medium"},
        Case{"exact_size", {kLarge, kMedium}, {.size = "5Gi"}, "medium"},
        Case{"none_big_enough", {kSmall, kMedium}, {.size = "6Gi"}, ""},
        Case{"equal_sizes_by_name", {{.name = "b"}, {.name = "a"}}, {}, "a"},
        Case{"class_must_match", {{.name = "gold", .cls = "gold"}, {.name = "plain"}},
             {.cls = "gold"}, "gold"},
        Case{"no_class_wants_no_class", {{.name = "gold", .cls = "gold"}}, {.cls = ""}, ""},
        Case{"absent_class_is_no_class", {{.name = "plain"}}, {.cls = std::nullopt}, "plain"},
        Case{"access_mode_superset", {{.name = "rwx", .modes = {"ReadWriteOnce", "ReadWriteMany"}}},
             {.modes = {"ReadWriteOnce"}}, "rwx"},
        Case{"access_mode_missing", {{.name = "rwo"}}, {.modes = {"ReadWriteMany"}}, ""},
        Case{"volume_mode_block", {{.name = "fs"}, {.name = "blk", .mode = "Block"}},
             {.mode = "Block"}, "blk"},
        Case{"volume_mode_defaults_to_filesystem", {{.name = "fs", .mode = "Filesystem"}}, {},
             "fs"},
        Case{"selector", {{.name = "gold", .labels = {{"tier", "gold"}}}, {.name = "plain"}},
             {.selector = {{"tier", "gold"}}}, "gold"},
        Case{"selector_matches_nothing", {{.name = "plain"}}, {.selector = {{"tier", "gold"}}},
             ""},
        Case{"not_available", {{.name = "released", .phase = "Released"}, {.name = "new", .phase = "Pending"}},
             {}, ""},
        Case{"bound_elsewhere", {{.name = "taken", .claim = "ns/other"}}, {}, ""},
        Case{"being_deleted", {{.name = "going", .deleting = true}}, {}, ""},
        Case{"prebound_wins_over_smaller",
             {kSmall, {.name = "mine", .size = "10Gi", .phase = "Bound", .claim = "ns/claim"}},
             {}, "mine"},
        Case{"prebound_with_uid", {{.name = "mine", .claim = "ns/claim/uid-1"}}, {}, "mine"},
        Case{"prebound_to_an_older_claim", {{.name = "old", .claim = "ns/claim/uid-0"}, kLarge},
             {}, "large"},
        Case{"prebound_ignores_class_and_selector",
             {{.name = "mine", .cls = "other", .claim = "ns/claim"}},
             {.cls = "gold", .selector = {{"a", "b"}}}, "mine"},
        Case{"prebound_too_small", {{.name = "mine", .size = "1Gi", .claim = "ns/claim"}},
             {.size = "2Gi"}, ""},
        Case{"delayed_binding_takes_only_prebound", {kSmall}, {}, "", true},
        Case{"delayed_binding_prebound", {{.name = "mine", .claim = "ns/claim"}}, {}, "mine", true},
        Case{"node_affinity_on_the_node", {{.name = "n1", .node = "n1"}, {.name = "n2", .node = "n2"}},
             {}, "n2", true, "n2"},
        Case{"node_affinity_elsewhere", {{.name = "n1", .node = "n1"}}, {}, "", true, "n2"},
        Case{"no_affinity_fits_every_node", {{.name = "any"}}, {}, "any", true, "n2"},
        Case{"prebound_on_another_node", {{.name = "mine", .claim = "ns/claim", .node = "n1"}, kLarge},
             {}, "", true, "n2"}),
    [](const auto& info) { return info.param.name; });

TEST(VolumeIndexTest, UpdatesMoveVolumesInAndOutOfTheFreeSet) {
  VolumeIndex index;
  auto claim = MakeClaim({});
  index.Upsert(MakeVolume({.name = "v", .phase = "Pending"}));
  EXPECT_EQ(*index.FindBestMatch(claim, {}), nullptr);
  index.Upsert(MakeVolume({.name = "v"}));
  EXPECT_EQ((*index.FindBestMatch(claim, {}))->metadata.name, "v");
  index.Upsert(MakeVolume({.name = "v", .phase = "Bound", .claim = "ns/other/x"}));
  EXPECT_EQ(*index.FindBestMatch(claim, {}), nullptr);
  index.Upsert(MakeVolume({.name = "v", .phase = "Bound", .claim = "ns/claim/uid-1"}));
  EXPECT_EQ((*index.FindBestMatch(claim, {}))->metadata.name, "v");
  index.Remove("v");
  EXPECT_EQ(*index.FindBestMatch(claim, {}), nullptr);
  EXPECT_EQ(index.size(), 0u);
}

// As Kubernetes' index does: volumes are grouped by their access modes and the groups tried
// fewest modes first, so a claim for RWO takes a big RWO volume before a small RWO+ROX one.
TEST(VolumeIndexTest, FewestAccessModesFirst) {
  VolumeIndex index;
  index.Upsert(MakeVolume({.name = "rwo-big", .size = "10Gi"}));
  index.Upsert(MakeVolume({.name = "both-small", .modes = {"ReadWriteOnce", "ReadOnlyMany"}}));
  EXPECT_EQ((*index.FindBestMatch(MakeClaim({}), {}))->metadata.name, "rwo-big");
  EXPECT_EQ((*index.FindBestMatch(MakeClaim({.modes = {"ReadOnlyMany"}}), {}))->metadata.name,
            "both-small");
}

TEST(VolumeIndexTest, ReservationsKeepConcurrentClaimsApart) {
  VolumeIndex index;
  index.Upsert(MakeVolume({.name = "a"}));
  index.Upsert(MakeVolume({.name = "b", .size = "2Gi"}));
  auto claim = MakeClaim({});
  auto first = index.ReserveBestMatch(claim, {});
  auto second = index.ReserveBestMatch(claim, {});
  ASSERT_TRUE(*first && *second);
  EXPECT_EQ((*first)->metadata.name, "a");
  EXPECT_EQ((*second)->metadata.name, "b");
  EXPECT_EQ(*index.ReserveBestMatch(claim, {}), nullptr);
  // Looking without reserving still sees the best volume.
  EXPECT_EQ((*index.FindBestMatch(claim, {}))->metadata.name, "a");
  index.Unreserve("a");
  EXPECT_EQ((*index.ReserveBestMatch(claim, {}))->metadata.name, "a");
  // A pre-bound volume is its claim's alone: no reservation needed or checked.
  index.Upsert(MakeVolume({.name = "mine", .claim = "ns/claim"}));
  EXPECT_EQ((*index.ReserveBestMatch(claim, {}))->metadata.name, "mine");
  EXPECT_EQ((*index.ReserveBestMatch(claim, {}))->metadata.name, "mine");
}

TEST(VolumeIndexTest, AReservedVolumeStaysReservedAcrossUpdates) {
  VolumeIndex index;
  index.Upsert(MakeVolume({.name = "a"}));
  index.Upsert(MakeVolume({.name = "b", .size = "2Gi"}));
  auto claim = MakeClaim({});
  ASSERT_EQ((*index.ReserveBestMatch(claim, {}))->metadata.name, "a");
  // A new version of a reserved volume is not offered to the next claim.
  index.Upsert(MakeVolume({.name = "a", .labels = {{"new", "yes"}}}));
  EXPECT_EQ((*index.FindBestMatch(claim, {.skip_reserved = true}))->metadata.name, "b");
  EXPECT_EQ((*index.FindBestMatch(claim, {}))->metadata.name, "a");
  // Released, its newest version is free again.
  index.Unreserve("a");
  auto again = index.ReserveBestMatch(claim, {});
  ASSERT_TRUE(*again);
  EXPECT_EQ((*again)->metadata.labels.at("new"), "yes");
  // A volume bound while reserved does not come back when released.
  index.Upsert(MakeVolume({.name = "a", .phase = "Bound", .claim = "ns/other/x"}));
  index.Unreserve("a");
  EXPECT_EQ((*index.FindBestMatch(claim, {}))->metadata.name, "b");
  EXPECT_TRUE(index.Reserve("b"));
  EXPECT_FALSE(index.Reserve("b"));
  EXPECT_EQ(*index.FindBestMatch(claim, {.skip_reserved = true}), nullptr);
  EXPECT_EQ((*index.FindBestMatch(claim, {}))->metadata.name, "b");
  // The smallest of several reserved volumes is the one a non-skipping caller sees.
  index.Upsert(MakeVolume({.name = "c", .size = "3Gi"}));
  EXPECT_TRUE(index.Reserve("c"));
  index.Upsert(MakeVolume({.name = "d", .size = "4Gi"}));
  EXPECT_EQ((*index.FindBestMatch(claim, {}))->metadata.name, "b");
  index.Remove("b");
  EXPECT_EQ((*index.FindBestMatch(claim, {}))->metadata.name, "c");
  EXPECT_EQ((*index.FindBestMatch(claim, {.skip_reserved = true}))->metadata.name, "d");
}

TEST(VolumeIndexTest, ManyVolumesStillFindTheSmallest) {
  VolumeIndex index;
  for (int i = 0; i < 10000; ++i) {
    index.Upsert(MakeVolume({.name = "v" + std::to_string(i), .size = std::to_string(i + 1) + "Mi"}));
  }
  auto claim = MakeClaim({.size = "5000Mi"});
  EXPECT_EQ((*index.FindBestMatch(claim, {}))->metadata.name, "v4999");
}

TEST(CheckVolumeSatisfiesClaimTest, KubernetesWords) {
  auto claim = MakeClaim({.size = "2Gi", .cls = "gold"});
  EXPECT_EQ(CheckVolumeSatisfiesClaim(*MakeVolume({.name = "v", .size = "1Gi", .cls = "gold"}), claim),
            "requested PV is too small");
  EXPECT_EQ(CheckVolumeSatisfiesClaim(*MakeVolume({.name = "v", .size = "2Gi"}), claim),
            "storageClassName does not match");
  EXPECT_EQ(CheckVolumeSatisfiesClaim(
                *MakeVolume({.name = "v", .size = "2Gi", .cls = "gold", .mode = "Block"}), claim),
            "incompatible volumeMode");
  EXPECT_EQ(CheckVolumeSatisfiesClaim(
                *MakeVolume({.name = "v", .size = "2Gi", .modes = {"ReadOnlyMany"}, .cls = "gold"}),
                claim),
            "incompatible accessMode");
  EXPECT_EQ(CheckVolumeSatisfiesClaim(*MakeVolume({.name = "v", .size = "3Gi", .cls = "gold"}), claim),
            std::nullopt);
}

TEST(ClassTest, BetaAnnotation) {
  auto claim = MakeClaim({.cls = std::nullopt});
  claim.metadata.annotations[std::string(api::kAnnBetaStorageClass)] = "old";
  EXPECT_EQ(ClaimClass(claim), "old");
  // As Kubernetes reads it: the annotation before the field, for claims and volumes alike.
  claim.spec.storage_class_name = "";
  EXPECT_EQ(ClaimClass(claim), "old");
  claim.metadata.annotations.clear();
  EXPECT_EQ(ClaimClass(claim), "");
  auto v = MakeVolume({.name = "v", .cls = "new"});
  EXPECT_EQ(VolumeClass(*v), "new");
  auto annotated = std::make_shared<api::PersistentVolume>(*v);
  annotated->metadata.annotations[std::string(api::kAnnBetaStorageClass)] = "old";
  EXPECT_EQ(VolumeClass(*annotated), "old");
}

}  // namespace
}  // namespace kvol::volume::binding
