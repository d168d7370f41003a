// The binder's table, in the style of Kubernetes' binder tests: each row starts from some
// volumes, claims, classes and pods, runs one sync (of a claim or of a volume) against an
// in-memory API with optional injected errors, repeating it while it fails if asked to, and
// compares the stored volumes and claims and the events with what Kubernetes' controller ends
// with.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "api/well_known.h"
#include "client/testing/fake_client.h"
#include "controller/pv/controller.h"

namespace kvol::controller::pv {
namespace {

using api::PersistentVolume;
using api::PersistentVolumeClaim;

constexpr std::string_view kByController = api::kAnnBoundByController;
constexpr std::string_view kCompleted = api::kAnnBindCompleted;
constexpr std::string_view kProvisionedBy = api::kAnnDynamicallyProvisioned;
constexpr std::string_view kSelectedNode = api::kAnnSelectedNode;
constexpr std::string_view kProvisioner = api::kAnnStorageProvisioner;
const std::string kFinalizer(api::kPVControllerFinalizer);

using Anns = std::vector<std::string_view>;  // annotations set to "yes" (or key=value)

void SetAnnotations(api::ObjectMeta& m, const Anns& anns) {
  for (auto a : anns) {
    auto eq = a.find('=');
    if (eq == std::string_view::npos) {
      m.annotations[std::string(a)] = "yes";
    } else {
      m.annotations[std::string(a.substr(0, eq))] = std::string(a.substr(eq + 1));
    }
  }
}

// A volume: name, size, claim it is bound to ("" none; "name" pre-bound without uid;
// "name/uid"), phase, reclaim policy, class, annotations.
struct V {
  std::string name;
  std::string size = "1Gi";
  std::string claim;
  std::string phase = "Available";
  std::string policy = "Retain";
  std::string cls;
  Anns anns;
  std::vector<std::string> modes = {"ReadWriteOnce"};
  std::optional<std::string> mode;
  bool deleting = false;
  std::map<std::string, std::string> labels = {};
  bool csi = false;  // a CSI volume (driver csi.example.com) instead of a hostPath one
  std::vector<std::string> finalizers = {};
};

// A claim: name, size, uid, volumeName, phase, class (nullopt: absent), annotations.
struct C {
  std::string name;
  std::string size = "1Gi";
  std::string uid;
  std::string volume;
  std::string phase = "Pending";
  std::optional<std::string> cls = "";
  Anns anns;
  std::vector<std::string> modes = {"ReadWriteOnce"};
  std::optional<std::string> mode;
  std::map<std::string, std::string> selector;
  bool bound_status = false;  // status.capacity and accessModes as a Bound claim has them
};

struct Class {
  std::string name;
  std::string provisioner = "example.com/external";
  bool wait_for_consumer = false;
  bool is_default = false;
  std::optional<std::string> reclaim = {};  // absent: Delete
};

struct Pod {
  std::string name;
  std::string claim;
  std::string node;
  std::string phase;
};

struct Injected {
  std::string verb;
  std::string resource;
  int code = 500;
};

struct Row {
  std::string name;
  std::vector<V> volumes;
  std::vector<V> want_volumes;
  std::vector<C> claims;
  std::vector<C> want_claims;
  std::vector<std::string> want_events;  // "Type Reason message"
  std::string sync;                      // "claim:NAME" or "volume:NAME"
  std::vector<Class> classes = {};
  std::vector<Pod> pods = {};
  std::vector<Injected> errors = {};
  bool want_error = false;  // the (last) sync fails
  int runs = 1;             // syncs, each after the previous one failed
  std::vector<std::string> want_queued = {};
  // The in-process provisioner "example.com/inproc": errors it returns, calls it should see.
  std::string provision_error = {};
  std::string delete_error = {};
  std::vector<std::string> want_provisioner_calls = {};
  std::vector<std::string> nodes = {};
};

// Records what it is asked and answers as the row says.
class FakeProvisioner final : public volume::Provisioner {
 public:
  std::string provision_error, delete_error;
  std::vector<std::string> calls;
  std::string_view name() const override { return "example.com/inproc"; }
  StatusOr<api::PersistentVolumeSpec> Provision(const volume::ProvisionRequest& r) override {
    calls.push_back("provision " + r.pv_name +
                    (r.selected_node ? " on " + r.selected_node->metadata.name : ""));
    if (!provision_error.empty()) return UnavailableError(provision_error);
    api::PersistentVolumeSpec spec;
    spec.capacity = r.claim->spec.resources.requests;
    spec.access_modes = r.claim->spec.access_modes;
    spec.host_path.emplace().path = "/nonexistent/kvol-binder-test/" + r.pv_name;
    return spec;
  }
  Status Delete(const api::PersistentVolume& v, const api::StorageClass*) override {
    calls.push_back("delete " + v.metadata.name);
    if (!delete_error.empty()) return UnavailableError(delete_error);
    return OkStatus();
  }
};

void PrintTo(const Row& r, std::ostream* os) { *os << r.name; }

PersistentVolume MakeVolume(const V& v) {
  PersistentVolume pv;
  pv.metadata.name = v.name;
  pv.metadata.labels = v.labels;
  SetAnnotations(pv.metadata, v.anns);
  pv.spec.capacity["storage"] = api::Quantity::MustParse(v.size);
  pv.spec.access_modes = v.modes;
  pv.spec.persistent_volume_reclaim_policy = v.policy;
  pv.spec.storage_class_name = v.cls;
  pv.spec.volume_mode = v.mode;
  if (v.csi) {
    auto& csi = pv.spec.csi.emplace();
    csi.driver = "csi.example.com";
    csi.volume_handle = v.name;
  } else {
    pv.spec.host_path.emplace().path = "/nonexistent/kvol-binder-test/" + v.name;
  }
  pv.status.phase = v.phase;
  if (v.deleting) pv.metadata.deletion_timestamp = api::Time::FromUnixSeconds(1);
  pv.metadata.finalizers = v.finalizers;
  if (!v.claim.empty()) {
    auto& ref = pv.spec.claim_ref.emplace();
    ref.kind = "PersistentVolumeClaim";
    ref.api_version = "v1";
    ref.namespace_ = "default";
    auto slash = v.claim.find('/');
    ref.name = v.claim.substr(0, slash);
    if (slash != std::string::npos) ref.uid = v.claim.substr(slash + 1);
  }
  return pv;
}

PersistentVolumeClaim MakeClaim(const C& c) {
  PersistentVolumeClaim pvc;
  pvc.metadata.namespace_ = "default";
  pvc.metadata.name = c.name;
  pvc.metadata.uid = c.uid.empty() ? "uid-" + c.name : c.uid;
  SetAnnotations(pvc.metadata, c.anns);
  pvc.spec.access_modes = c.modes;
  pvc.spec.resources.requests["storage"] = api::Quantity::MustParse(c.size);
  pvc.spec.volume_name = c.volume;
  pvc.spec.storage_class_name = c.cls;
  pvc.spec.volume_mode = c.mode;
  if (!c.selector.empty()) pvc.spec.selector.emplace().match_labels = c.selector;
  pvc.status.phase = c.phase;
  if (c.bound_status) {
    pvc.status.access_modes = c.modes;
    pvc.status.capacity["storage"] = api::Quantity::MustParse(c.size);
  }
  return pvc;
}

std::string Joined(const api::StringMap& anns) {
  std::string out;
  for (const auto& [k, v] : anns) out += " " + k + "=" + v;
  return out;
}

// What the table compares: the fields the binder owns.
std::string Describe(const PersistentVolume& v) {
  std::string claim = "-";
  if (v.spec.claim_ref) claim = v.spec.claim_ref->name + "/" + v.spec.claim_ref->uid;
  std::string finalizers;
  for (const auto& f : v.metadata.finalizers) finalizers += " finalizer=" + f;
  return v.metadata.name + " phase=" + v.status.phase + " claim=" + claim +
         Joined(v.metadata.annotations) + finalizers +
         (v.metadata.deletion_timestamp ? " deleting" : "");
}

std::string Describe(const PersistentVolumeClaim& c) {
  std::string cap = "-";
  auto it = c.status.capacity.find("storage");
  if (it != c.status.capacity.end()) cap = it->second.ToString();
  std::string modes;
  for (const auto& m : c.status.access_modes) modes += m;
  return c.metadata.name + " phase=" + c.status.phase + " volume=" + c.spec.volume_name +
         " class=" + c.spec.storage_class_name.value_or("<nil>") + " capacity=" + cap +
         " modes=" + modes + Joined(c.metadata.annotations);
}

class BinderTest : public ::testing::TestWithParam<Row> {};

// Runs the row; with `batched`, a sync runs as a worker runs it, through SyncClaims or
// SyncVolumes (a batch of one), whose binding or phase is written at the end of the batch;
// without, through SyncClaim or SyncVolume. The fake client writes an object and its status
// in one write, and a binding's volume and claim updates together, as the in-process client
// does.
void CheckRow(const Row& row, bool batched) {
  client::testing::FakeClient api;
  std::vector<std::string> events;
  volume::PluginManager plugins;
  auto owned = std::make_unique<FakeProvisioner>();
  FakeProvisioner& provisioner = *owned;
  provisioner.provision_error = row.provision_error;
  provisioner.delete_error = row.delete_error;
  ASSERT_TRUE(plugins.RegisterProvisioner(std::move(owned)).ok());
  ControllerOptions options;
  options.plugins = &plugins;
  Controller ctrl(
      api,
      [&](const api::ObjectReference&, std::string_view type, std::string_view reason,
          std::string message) {
        events.push_back(std::string(type) + " " + std::string(reason) + " " + message);
      },
      options);
  for (const auto& n : row.nodes) {
    api::Node node;
    node.metadata.name = n;
    api.fake<api::Node>().Seed(node);
  }
  for (const auto& c : row.classes) {
    api::StorageClass sc;
    sc.metadata.name = c.name;
    sc.provisioner = c.provisioner;
    if (c.wait_for_consumer) sc.volume_binding_mode = "WaitForFirstConsumer";
    if (c.is_default) sc.metadata.annotations[std::string(api::kDefaultClassAnnotation)] = "true";
    sc.reclaim_policy = c.reclaim;
    ctrl.StoreClassForTest(api.fake<api::StorageClass>().Seed(sc));
  }
  for (const auto& p : row.pods) {
    api::Pod pod;
    pod.metadata.namespace_ = "default";
    pod.metadata.name = p.name;
    pod.spec.node_name = p.node;
    pod.status.phase = p.phase;
    auto& vol = pod.spec.volumes.emplace_back();
    vol.name = "data";
    vol.persistent_volume_claim.emplace().claim_name = p.claim;
    ctrl.StorePodForTest(pod);
  }
  for (const auto& v : row.volumes) ctrl.StoreVolumeForTest(api.fake<PersistentVolume>().Seed(MakeVolume(v)));
  for (const auto& c : row.claims) ctrl.StoreClaimForTest(api.fake<PersistentVolumeClaim>().Seed(MakeClaim(c)));
  for (const auto& e : row.errors) {
    api.state().InjectError(e.verb, e.resource,
                            api::ApiError{e.code, e.code == 409 ? "Conflict" : "InternalError",
                                          "injected " + e.verb + " error"});
  }

  Status last;
  for (int run = 0; run < row.runs; ++run) {
    const std::string what = row.sync.substr(row.sync.find(':') + 1);
    if (row.sync.rfind("claim:", 0) == 0) {
      auto objects = api.fake<PersistentVolumeClaim>().Objects();
      auto it = objects.find("default/" + what);
      ASSERT_NE(it, objects.end()) << "no claim " << what;
      ctrl.StoreClaimForTest(it->second);
      if (batched) {
        auto results = ctrl.SyncClaims({std::make_shared<const PersistentVolumeClaim>(it->second)});
        ASSERT_EQ(results.size(), 1u);
        last = results[0];
      } else {
        last = ctrl.SyncClaim(it->second);
      }
    } else {
      auto objects = api.fake<PersistentVolume>().Objects();
      auto it = objects.find(what);
      ASSERT_NE(it, objects.end()) << "no volume " << what;
      ctrl.StoreVolumeForTest(it->second);
      if (batched) {
        auto results = ctrl.SyncVolumes({std::make_shared<const PersistentVolume>(it->second)});
        ASSERT_EQ(results.size(), 1u);
        last = results[0];
      } else {
        last = ctrl.SyncVolume(it->second);
      }
    }
    if (last.ok()) break;
  }
  EXPECT_EQ(!last.ok(), row.want_error) << last.ToString();

  std::vector<std::string> got, want;
  for (const auto& [k, v] : api.fake<PersistentVolume>().Objects()) got.push_back(Describe(v));
  for (const auto& v : row.want_volumes) want.push_back(Describe(MakeVolume(v)));
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want) << "volumes";

  got.clear();
  want.clear();
  for (const auto& [k, c] : api.fake<PersistentVolumeClaim>().Objects()) got.push_back(Describe(c));
  for (const auto& c : row.want_claims) want.push_back(Describe(MakeClaim(c)));
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want) << "claims";
  EXPECT_EQ(events, row.want_events) << "events";
  std::vector<std::string> queued;
  for (const auto& k : ctrl.TakeQueuedClaimsForTest()) queued.push_back(k);
  EXPECT_EQ(queued, row.want_queued) << "claims queued";
  EXPECT_EQ(provisioner.calls, row.want_provisioner_calls) << "provisioner calls";
}

// Each row once, as the controller's workers sync: in batches.
TEST_P(BinderTest, Sync) { CheckRow(GetParam(), /*batched=*/true); }

// Shorthands for the common shapes.
const Anns kBoth = {kByController, kCompleted};
// A volume the in-process provisioner made.
const Anns kMadeHere = {kByController, "pv.kubernetes.io/provisioned-by=example.com/inproc"};
const std::string kPVProtection(api::kPVProtectionFinalizer);
const std::vector<C> kBoundC1 = {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth}};

// A volume sync of v1 beside claim c1, Bound to it and left as it is, with no events: the
// volume ends as `want`, or as it was.
Row BesideBoundClaim(std::string name, V volume, V want) {
  return Row{std::move(name), {std::move(volume)}, {std::move(want)}, kBoundC1, kBoundC1, {},
             "volume:v1"};
}
Row BesideBoundClaim(std::string name, V volume) {
  return BesideBoundClaim(std::move(name), volume, volume);
}

// clang-format off
// A WaitForFirstConsumer claim the scheduler has given node n1 is provisioned there; `others`
// are volumes beside it that stay as they are.
Row ProvisionedForSelectedNode(std::string name, std::vector<V> others = {}) {
  Row r{std::move(name),
        others,
        {{.name = "pvc-uid-c1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Delete", .cls = "local",
          .anns = {kByController, "pv.kubernetes.io/provisioned-by=example.com/inproc"},
          .finalizers = {kFinalizer}}},
        {{.name = "c1", .cls = "local", .anns = {"volume.kubernetes.io/selected-node=n1"}}},
        {{.name = "c1", .volume = "pvc-uid-c1", .phase = "Bound", .cls = "local",
          .anns = {kByController, kCompleted, "volume.kubernetes.io/selected-node=n1",
                   "volume.kubernetes.io/storage-provisioner=example.com/inproc",
                   "volume.beta.kubernetes.io/storage-provisioner=example.com/inproc"}, .bound_status = true}},
        {"Normal ProvisioningSucceeded Successfully provisioned volume pvc-uid-c1 using example.com/inproc"},
        "claim:c1", {{.name = "local", .provisioner = "example.com/inproc", .wait_for_consumer = true}},
        {}, {}, false, 1, {}, "", "", {"provision pvc-uid-c1 on n1"}, {"n1"}};
  r.want_volumes.insert(r.want_volumes.end(), others.begin(), others.end());
  return r;
}

const std::vector<Row>& Rows() {
  static const std::vector<Row> rows = {
  // ---- 1: unbound claims, any volume -----------------------------------------------------
  Row{"1_1_binds_to_an_unbound_volume",
      {{.name = "v1"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "c1"}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {}, "claim:c1"},
  Row{"1_2_no_volume_and_no_class",
      {}, {},
      {{.name = "c1"}}, {{.name = "c1"}},
      {"Normal FailedBinding no persistent volumes available for this claim and no storage class is set"},
      "claim:c1"},
  Row{"1_3_new_claim_becomes_pending",
      {}, {},
      {{.name = "c1", .phase = ""}}, {{.name = "c1"}},
      {"Normal FailedBinding no persistent volumes available for this claim and no storage class is set"},
      "claim:c1"},
  Row{"1_4_smallest_that_fits",
      {{.name = "big", .size = "10Gi"}, {.name = "mid", .size = "5Gi"}, {.name = "small"}},
      {{.name = "big", .size = "10Gi"},
       {.name = "mid", .size = "5Gi", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}},
       {.name = "small"}},
      {{.name = "c1", .size = "2Gi"}},
      {{.name = "c1", .size = "5Gi", .volume = "mid", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {}, "claim:c1"},
  Row{"1_5_volume_pre_bound_by_name",
      {{.name = "v1", .claim = "c1"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound"}},
      {{.name = "c1"}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {}, "claim:c1"},
  Row{"1_6_volume_pre_bound_to_another_claim",
      {{.name = "v1", .claim = "other"}}, {{.name = "v1", .claim = "other"}},
      {{.name = "c1"}}, {{.name = "c1"}},
      {"Normal FailedBinding no persistent volumes available for this claim and no storage class is set"},
      "claim:c1"},
  Row{"1_7_volume_bound_to_the_claim_finishes",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "c1"}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {}, "claim:c1"},
  Row{"1_8_selector_picks_the_labelled_volume",
      {{.name = "plain"}}, {{.name = "plain"}},
      {{.name = "c1", .selector = {{"tier", "gold"}}}}, {{.name = "c1", .selector = {{"tier", "gold"}}}},
      {"Normal FailedBinding no persistent volumes available for this claim and no storage class is set"},
      "claim:c1"},
  Row{"1_8b_selector_matches",
      {{.name = "plain", .size = "1Gi"}, {.name = "gold", .size = "5Gi", .labels = {{"tier", "gold"}}}},
      {{.name = "plain", .size = "1Gi"},
       {.name = "gold", .size = "5Gi", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}, .labels = {{"tier", "gold"}}}},
      {{.name = "c1", .selector = {{"tier", "gold"}}}},
      {{.name = "c1", .size = "5Gi", .volume = "gold", .phase = "Bound", .anns = kBoth, .selector = {{"tier", "gold"}}, .bound_status = true}},
      {}, "claim:c1"},
  Row{"1_9_class_mismatch",
      {{.name = "gold", .cls = "gold"}}, {{.name = "gold", .cls = "gold"}},
      {{.name = "c1"}}, {{.name = "c1"}},
      {"Normal FailedBinding no persistent volumes available for this claim and no storage class is set"},
      "claim:c1"},
  Row{"1_10_class_match",
      {{.name = "plain"}, {.name = "gold", .cls = "gold"}},
      {{.name = "plain"}, {.name = "gold", .claim = "c1/uid-c1", .phase = "Bound", .cls = "gold", .anns = {kByController}}},
      {{.name = "c1", .cls = "gold"}},
      {{.name = "c1", .volume = "gold", .phase = "Bound", .cls = "gold", .anns = kBoth, .bound_status = true}},
      {}, "claim:c1", {{.name = "gold"}}},
  Row{"1_10b_beta_class_annotation_before_the_field",
      // As Kubernetes reads a claim's class: the beta annotation, when present, wins.
      {{.name = "plain"}, {.name = "gold", .cls = "gold"}},
      {{.name = "plain"}, {.name = "gold", .claim = "c1/uid-c1", .phase = "Bound", .cls = "gold", .anns = {kByController}}},
      {{.name = "c1", .anns = {"volume.beta.kubernetes.io/storage-class=gold"}}},
      {{.name = "c1", .volume = "gold", .phase = "Bound",
        .anns = {"volume.beta.kubernetes.io/storage-class=gold", kByController, kCompleted}, .bound_status = true}},
      {}, "claim:c1", {{.name = "gold"}}},
  Row{"1_11_access_modes_must_be_a_superset",
      {{.name = "rwo"}}, {{.name = "rwo"}},
      {{.name = "c1", .modes = {"ReadWriteMany"}}}, {{.name = "c1", .modes = {"ReadWriteMany"}}},
      {"Normal FailedBinding no persistent volumes available for this claim and no storage class is set"},
      "claim:c1"},
  Row{"1_12_access_modes_superset_binds",
      {{.name = "both", .modes = {"ReadWriteOnce", "ReadOnlyMany"}}},
      {{.name = "both", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}, .modes = {"ReadWriteOnce", "ReadOnlyMany"}}},
      {{.name = "c1", .modes = {"ReadOnlyMany"}}},
      {{.name = "c1", .volume = "both", .phase = "Bound", .anns = kBoth, .modes = {"ReadWriteOnce", "ReadOnlyMany"}, .bound_status = true}},
      {}, "claim:c1"},
  Row{"1_13_volume_mode_mismatch",
      {{.name = "blk", .mode = "Block"}}, {{.name = "blk", .mode = "Block"}},
      {{.name = "c1"}}, {{.name = "c1"}},
      {"Normal FailedBinding no persistent volumes available for this claim and no storage class is set"},
      "claim:c1"},
  Row{"1_14_volume_being_deleted",
      {{.name = "v1", .deleting = true}}, {{.name = "v1", .deleting = true}},
      {{.name = "c1"}}, {{.name = "c1"}},
      {"Normal FailedBinding no persistent volumes available for this claim and no storage class is set"},
      "claim:c1"},
  Row{"1_15_released_volume_is_not_reused",
      {{.name = "v1", .claim = "gone/uid-gone", .phase = "Released"}},
      {{.name = "v1", .claim = "gone/uid-gone", .phase = "Released"}},
      {{.name = "c1"}}, {{.name = "c1"}},
      {"Normal FailedBinding no persistent volumes available for this claim and no storage class is set"},
      "claim:c1"},
  Row{"1_16_too_small",
      {{.name = "v1", .size = "1Gi"}}, {{.name = "v1", .size = "1Gi"}},
      {{.name = "c1", .size = "2Gi"}}, {{.name = "c1", .size = "2Gi"}},
      {"Normal FailedBinding no persistent volumes available for this claim and no storage class is set"},
      "claim:c1"},

  // ---- 1: delayed binding and provisioning ----------------------------------------------
  Row{"1_20_wait_for_first_consumer",
      {{.name = "v1", .cls = "local"}}, {{.name = "v1", .cls = "local"}},
      {{.name = "c1", .cls = "local"}}, {{.name = "c1", .cls = "local"}},
      {"Normal WaitForFirstConsumer waiting for first consumer to be created before binding"},
      "claim:c1", {{.name = "local", .provisioner = "kubernetes.io/no-provisioner", .wait_for_consumer = true}}},
  Row{"1_21_wait_for_pod_scheduled",
      {}, {},
      {{.name = "c1", .cls = "local"}}, {{.name = "c1", .cls = "local"}},
      {"Normal WaitForPodScheduled waiting for pod web-0 to be scheduled"},
      "claim:c1", {{.name = "local", .wait_for_consumer = true}}, {{.name = "web-0", .claim = "c1"}}},
  Row{"1_22_wait_for_pods_scheduled",
      {}, {},
      {{.name = "c1", .cls = "local"}}, {{.name = "c1", .cls = "local"}},
      {"Normal WaitForPodScheduled waiting for pods a,b to be scheduled"},
      "claim:c1", {{.name = "local", .wait_for_consumer = true}},
      {{.name = "b", .claim = "c1"}, {.name = "a", .claim = "c1"}, {.name = "placed", .claim = "c1", .node = "n1"}}},
  Row{"1_23_delayed_binding_takes_a_pre_bound_volume",
      {{.name = "v1", .claim = "c1", .cls = "local"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .cls = "local"}},
      {{.name = "c1", .cls = "local"}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .cls = "local", .anns = kBoth, .bound_status = true}},
      {}, "claim:c1", {{.name = "local", .wait_for_consumer = true}}},
  Row{"1_24_selected_node_ends_the_wait",
      {}, {},
      {{.name = "c1", .cls = "local", .anns = {"volume.kubernetes.io/selected-node=n1"}}},
      {{.name = "c1", .cls = "local", .anns = {"volume.kubernetes.io/selected-node=n1",
          "volume.kubernetes.io/storage-provisioner=example.com/external",
          "volume.beta.kubernetes.io/storage-provisioner=example.com/external"}}},
      {"Normal ExternalProvisioning Waiting for a volume to be created either by the external provisioner 'example.com/external' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered."},
      "claim:c1", {{.name = "local", .wait_for_consumer = true}}},
  Row{"1_25_external_provisioner",
      {}, {},
      {{.name = "c1", .cls = "fast"}},
      {{.name = "c1", .cls = "fast", .anns = {"volume.kubernetes.io/storage-provisioner=example.com/external",
          "volume.beta.kubernetes.io/storage-provisioner=example.com/external"}}},
      {"Normal ExternalProvisioning Waiting for a volume to be created either by the external provisioner 'example.com/external' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered."},
      "claim:c1", {{.name = "fast"}}},
  Row{"1_26_external_provisioner_already_named",
      {}, {},
      {{.name = "c1", .cls = "fast", .anns = {"volume.kubernetes.io/storage-provisioner=example.com/external"}}},
      {{.name = "c1", .cls = "fast", .anns = {"volume.kubernetes.io/storage-provisioner=example.com/external"}}},
      {"Normal ExternalProvisioning Waiting for a volume to be created either by the external provisioner 'example.com/external' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered."},
      "claim:c1", {{.name = "fast"}}},
  Row{"1_27_class_not_found",
      {}, {},
      {{.name = "c1", .cls = "missing"}}, {{.name = "c1", .cls = "missing"}},
      {"Warning ProvisioningFailed storageclass.storage.k8s.io \"missing\" not found"},
      "claim:c1"},
  Row{"1_28_no_provisioner",
      {}, {},
      {{.name = "c1", .cls = "local"}}, {{.name = "c1", .cls = "local"}},
      {"Warning ProvisioningFailed no volume plugin matched name: kubernetes.io/no-provisioner"},
      "claim:c1", {{.name = "local", .provisioner = "kubernetes.io/no-provisioner"}}},
  Row{"1_29_default_class_assigned_retroactively",
      {}, {},
      {{.name = "c1", .cls = std::nullopt}}, {{.name = "c1", .cls = "standard"}},
      {}, "claim:c1", {{.name = "standard", .is_default = true}}},
  Row{"1_30_absent_class_without_default_binds_classless",
      {{.name = "v1"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "c1", .cls = std::nullopt}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .cls = std::nullopt, .anns = kBoth, .bound_status = true}},
      {}, "claim:c1"},

  // ---- 2: claims that name a volume ------------------------------------------------------
  Row{"2_1_named_volume_missing",
      {}, {},
      {{.name = "c1", .volume = "v1", .phase = ""}}, {{.name = "c1", .volume = "v1"}},
      {}, "claim:c1"},
  Row{"2_2_named_volume_unbound",
      {{.name = "v1"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "c1", .volume = "v1"}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = {kCompleted}, .bound_status = true}},
      {}, "claim:c1"},
  Row{"2_3_named_volume_too_small",
      {{.name = "v1"}}, {{.name = "v1"}},
      {{.name = "c1", .size = "2Gi", .volume = "v1"}}, {{.name = "c1", .size = "2Gi", .volume = "v1"}},
      {"Warning VolumeMismatch Cannot bind to requested volume \"v1\": requested PV is too small"},
      "claim:c1"},
  Row{"2_4_named_volume_other_class",
      {{.name = "v1", .cls = "gold"}}, {{.name = "v1", .cls = "gold"}},
      {{.name = "c1", .volume = "v1"}}, {{.name = "c1", .volume = "v1"}},
      {"Warning VolumeMismatch Cannot bind to requested volume \"v1\": storageClassName does not match"},
      "claim:c1"},
  Row{"2_5_named_volume_other_mode",
      {{.name = "v1", .mode = "Block"}}, {{.name = "v1", .mode = "Block"}},
      {{.name = "c1", .volume = "v1"}}, {{.name = "c1", .volume = "v1"}},
      {"Warning VolumeMismatch Cannot bind to requested volume \"v1\": incompatible volumeMode"},
      "claim:c1"},
  Row{"2_6_named_volume_other_access_modes",
      {{.name = "v1", .modes = {"ReadOnlyMany"}}}, {{.name = "v1", .modes = {"ReadOnlyMany"}}},
      {{.name = "c1", .volume = "v1"}}, {{.name = "c1", .volume = "v1"}},
      {"Warning VolumeMismatch Cannot bind to requested volume \"v1\": incompatible accessMode"},
      "claim:c1"},
  Row{"2_7_named_volume_bound_to_the_claim",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound"}},
      {{.name = "c1", .volume = "v1"}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = {kCompleted}, .bound_status = true}},
      {}, "claim:c1"},
  Row{"2_8_named_volume_bound_elsewhere",
      {{.name = "v1", .claim = "other/uid-other", .phase = "Bound"}},
      {{.name = "v1", .claim = "other/uid-other", .phase = "Bound"}},
      {{.name = "c1", .volume = "v1"}}, {{.name = "c1", .volume = "v1"}},
      {"Warning FailedBinding volume \"v1\" already bound to a different claim."},
      "claim:c1"},
  Row{"2_9_named_by_controller_but_bound_elsewhere",
      {{.name = "v1", .claim = "other/uid-other", .phase = "Bound"}},
      {{.name = "v1", .claim = "other/uid-other", .phase = "Bound"}},
      {{.name = "c1", .volume = "v1", .anns = {kByController}}},
      {{.name = "c1", .volume = "v1", .anns = {kByController}}},
      {"Warning FailedBinding volume \"v1\" already bound to a different claim."},
      "claim:c1", {}, {}, {}, true},
  Row{"2_10_named_volume_pre_bound_to_it",
      {{.name = "v1", .claim = "c1"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound"}},
      {{.name = "c1", .volume = "v1"}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = {kCompleted}, .bound_status = true}},
      {}, "claim:c1"},

  // ---- 3: bound claims -------------------------------------------------------------------
  Row{"3_1_bound_claim_lost_its_volume_name",
      {}, {},
      {{.name = "c1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {{.name = "c1", .phase = "Lost", .anns = kBoth}},
      {"Warning ClaimLost Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"},
      "claim:c1"},
  Row{"3_2_bound_claim_volume_gone",
      {}, {},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {{.name = "c1", .volume = "v1", .phase = "Lost", .anns = kBoth}},
      {"Warning ClaimLost Bound claim has lost its PersistentVolume. Data on the volume is lost!"},
      "claim:c1"},
  Row{"3_3_lost_claim_says_it_once",
      {}, {},
      {{.name = "c1", .volume = "v1", .phase = "Lost", .anns = kBoth}},
      {{.name = "c1", .volume = "v1", .phase = "Lost", .anns = kBoth}},
      {}, "claim:c1"},
  Row{"3_4_bound_claim_volume_unbound_rebinds",
      {{.name = "v1", .phase = "Available"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {}, "claim:c1"},
  Row{"3_5_all_bound_writes_nothing",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {}, "claim:c1"},
  Row{"3_6_misbound",
      {{.name = "v1", .claim = "c1/uid-old", .phase = "Bound"}},
      {{.name = "v1", .claim = "c1/uid-old", .phase = "Bound"}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {{.name = "c1", .volume = "v1", .phase = "Lost", .anns = kBoth}},
      {"Warning ClaimMisbound Two claims are bound to the same volume, this one is bound incorrectly"},
      "claim:c1"},

  // ---- 4: volumes ------------------------------------------------------------------------
  Row{"4_1_new_volume_becomes_available",
      {{.name = "v1", .phase = "Pending"}}, {{.name = "v1"}}, {}, {}, {}, "volume:v1"},
  Row{"4_2_pre_bound_volume_is_available",
      {{.name = "v1", .claim = "c1", .phase = "Pending"}}, {{.name = "v1", .claim = "c1"}},
      {}, {}, {}, "volume:v1"},
  Row{"4_3_claim_gone_retain_releases",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Released"}},
      {}, {}, {}, "volume:v1"},
  Row{"4_4_released_stays_released",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Released"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Released"}},
      {}, {}, {}, "volume:v1"},
  Row{"4_5_claim_recreated_with_the_same_name",
      {{.name = "v1", .claim = "c1/uid-old", .phase = "Bound"}},
      {{.name = "v1", .claim = "c1/uid-old", .phase = "Released"}},
      {{.name = "c1"}}, {{.name = "c1"}}, {}, "volume:v1"},
  Row{"4_6_claim_not_bound_yet_is_queued",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "c1"}}, {{.name = "c1"}}, {}, "volume:v1",
      {}, {}, {}, false, 1, {"default/c1"}},
  Row{"4_7_bound_both_ways",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Available", .anns = {kByController}}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {}, "volume:v1"},
  Row{"4_8_claim_went_elsewhere_controller_unbinds",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "v1"}},
      {{.name = "c1", .volume = "v2", .phase = "Bound", .anns = kBoth}},
      {{.name = "c1", .volume = "v2", .phase = "Bound", .anns = kBoth}},
      {}, "volume:v1"},
  Row{"4_9_claim_went_elsewhere_user_binding_kept",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound"}},
      {{.name = "v1", .claim = "c1"}},
      {{.name = "c1", .volume = "v2", .phase = "Bound", .anns = kBoth}},
      {{.name = "c1", .volume = "v2", .phase = "Bound", .anns = kBoth}},
      {}, "volume:v1"},
  Row{"4_10_provisioned_for_a_claim_that_went_elsewhere",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Delete", .anns = {kByController, "pv.kubernetes.io/provisioned-by=example.com/external"}}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Released", .policy = "Delete", .anns = {kByController, "pv.kubernetes.io/provisioned-by=example.com/external"}}},
      {{.name = "c1", .volume = "v2", .phase = "Bound", .anns = kBoth}},
      {{.name = "c1", .volume = "v2", .phase = "Bound", .anns = kBoth}},
      {}, "volume:v1"},
  Row{"4_11_delete_without_a_deleter_fails",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Delete"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Failed", .policy = "Delete"}},
      {}, {},
      {"Warning VolumeFailedDelete error getting deleter volume plugin for volume \"v1\": no deletable volume plugin matched"},
      "volume:v1"},
  Row{"4_11b_a_csi_volume_is_left_to_its_driver",
      // Made by hand, not by a provisioner kvol runs: an external provisioner deletes it.
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Delete", .csi = true}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Released", .policy = "Delete", .csi = true}},
      {}, {}, {}, "volume:v1"},
  Row{"4_12_recycle_without_a_recycler_fails",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Recycle"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Failed", .policy = "Recycle"}},
      {}, {},
      {"Warning VolumeFailedRecycle Recycle failed: /nonexistent/kvol-binder-test/v1 is not a directory"},
      "volume:v1"},
  Row{"4_12b_recycle_waits_for_the_pods_using_it",
      // Its claim is gone, but a pod that has not finished still names it.
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Recycle"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Released", .policy = "Recycle"}},
      {}, {},
      {"Normal VolumeFailedRecycle Volume is used by pods: default/b,default/web-0"},
      "volume:v1", {}, {{.name = "web-0", .claim = "c1", .node = "n1"}, {.name = "b", .claim = "c1"},
                        {.name = "done", .claim = "c1", .node = "n1", .phase = "Succeeded"}}},
  Row{"4_12c_recycle_past_finished_pods",
      // Pods that have finished do not hold it up.
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Recycle"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Failed", .policy = "Recycle"}},
      {}, {},
      {"Warning VolumeFailedRecycle Recycle failed: /nonexistent/kvol-binder-test/v1 is not a directory"},
      "volume:v1", {}, {{.name = "done", .claim = "c1", .node = "n1", .phase = "Succeeded"},
                        {.name = "failed", .claim = "c1", .node = "n1", .phase = "Failed"}}},
  Row{"4_13_unknown_reclaim_policy",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Shred"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Failed", .policy = "Shred"}},
      {}, {},
      {"Warning VolumeUnknownReclaimPolicy Volume has unrecognized PersistentVolumeReclaimPolicy"},
      "volume:v1"},
  Row{"4_14_failed_stays_failed",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Failed", .policy = "Shred"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Failed", .policy = "Shred"}},
      {}, {}, {}, "volume:v1"},
  Row{"4_15_pre_bound_claim_with_other_volume_mode",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .mode = "Block"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .mode = "Block"}},
      {{.name = "c1"}}, {{.name = "c1"}},
      {"Warning VolumeMismatch Cannot bind PersistentVolume to requested PersistentVolumeClaim \"c1\" due to incompatible volumeMode.",
       "Warning VolumeMismatch Cannot bind PersistentVolume \"v1\" to requested PersistentVolumeClaim due to incompatible volumeMode."},
      "volume:v1"},

  // ---- 5: a binding cut short, finished by the next sync ---------------------------------
  Row{"5_1_after_the_claim_ref",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Available", .anns = {kByController}}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "c1"}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {}, "claim:c1"},
  Row{"5_2_after_the_volume_status",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "c1"}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {}, "claim:c1"},
  Row{"5_3_after_the_claim_volume_name",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "c1", .volume = "v1", .anns = kBoth}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {}, "claim:c1"},
  Row{"5_4_volume_side_of_a_cut_binding",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Available", .anns = {kByController}}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Available", .anns = {kByController}}},
      {{.name = "c1"}}, {{.name = "c1"}}, {}, "volume:v1",
      {}, {}, {}, false, 1, {"default/c1"}},

  // ---- 6: API errors ---------------------------------------------------------------------
  Row{"6_1_volume_update_fails",
      {{.name = "v1"}}, {{.name = "v1"}},
      {{.name = "c1"}}, {{.name = "c1"}},
      {}, "claim:c1", {}, {}, {{"update", "persistentvolumes"}}, true},
  Row{"6_2_volume_update_fails_then_works",
      {{.name = "v1"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "c1"}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {}, "claim:c1", {}, {}, {{"update", "persistentvolumes"}}, false, 2},
  [] {
    Row r{"6_3_volume_status_fails",
          {{.name = "v1"}},
          // The volume and its status are one write: none of it is made.
          {{.name = "v1"}},
          {{.name = "c1"}}, {{.name = "c1"}},
          {}, "claim:c1", {}, {}, {{"update-status", "persistentvolumes"}}, true};
    return r;
  }(),
  Row{"6_4_volume_status_fails_then_works",
      {{.name = "v1"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "c1"}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {}, "claim:c1", {}, {}, {{"update-status", "persistentvolumes"}}, false, 2},
  Row{"6_4b_a_phase_is_announced_once_written",
      // The Failed phase's first write fails: its event comes with the retry that writes it.
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Released", .policy = "Shred"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Failed", .policy = "Shred"}},
      {}, {},
      {"Warning VolumeUnknownReclaimPolicy Volume has unrecognized PersistentVolumeReclaimPolicy"},
      "volume:v1", {}, {}, {{"update-status", "persistentvolumes"}}, false, 2},
  Row{"6_5_claim_update_fails",
      {{.name = "v1"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "c1"}}, {{.name = "c1"}},
      {}, "claim:c1", {}, {}, {{"update", "persistentvolumeclaims"}}, true},
  Row{"6_6_claim_update_fails_then_works",
      {{.name = "v1"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "c1"}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {}, "claim:c1", {}, {}, {{"update", "persistentvolumeclaims"}}, false, 2},
  [] {
    Row r{"6_7_claim_status_fails",
          {{.name = "v1"}},
          {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
          // The claim and its status are one write: none of it is made.
          {{.name = "c1"}}, {{.name = "c1"}},
          {}, "claim:c1", {}, {}, {{"update-status", "persistentvolumeclaims"}}, true};
    return r;
  }(),
  Row{"6_8_claim_status_fails_then_works",
      {{.name = "v1"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}},
      {{.name = "c1"}},
      {{.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth, .bound_status = true}},
      {}, "claim:c1", {}, {}, {{"update-status", "persistentvolumeclaims"}}, false, 2},
  Row{"6_9_volume_conflict",
      {{.name = "v1"}}, {{.name = "v1"}},
      {{.name = "c1"}}, {{.name = "c1"}},
      {}, "claim:c1", {}, {}, {{"update", "persistentvolumes", 409}}, true},
  Row{"6_10_release_fails_then_works",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Released"}},
      {}, {}, {}, "volume:v1", {}, {}, {{"update-status", "persistentvolumes"}}, false, 2},
  Row{"6_11_claim_lookup_fails",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound"}},
      {}, {}, {}, "volume:v1", {}, {}, {{"get", "persistentvolumeclaims"}}, true},
  Row{"6_12_default_class_update_fails",
      {}, {},
      {{.name = "c1", .cls = std::nullopt}}, {{.name = "c1", .cls = std::nullopt}},
      {}, "claim:c1", {{.name = "standard", .is_default = true}}, {},
      {{"update", "persistentvolumeclaims"}}, true},
  // ---- 7: provisioning in process and deleting ------------------------------------------
  Row{"7_1_provisioned_and_bound",
      {},
      {{.name = "pvc-uid-c1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Delete", .cls = "inproc",
        .anns = {kByController, "pv.kubernetes.io/provisioned-by=example.com/inproc"},
        .finalizers = {kFinalizer}}},
      {{.name = "c1", .cls = "inproc"}},
      {{.name = "c1", .volume = "pvc-uid-c1", .phase = "Bound", .cls = "inproc",
        .anns = {kByController, kCompleted, "volume.kubernetes.io/storage-provisioner=example.com/inproc",
                 "volume.beta.kubernetes.io/storage-provisioner=example.com/inproc"}, .bound_status = true}},
      {"Normal ProvisioningSucceeded Successfully provisioned volume pvc-uid-c1 using example.com/inproc"},
      "claim:c1", {{.name = "inproc", .provisioner = "example.com/inproc"}}, {}, {}, false, 1, {}, "", "",
      {"provision pvc-uid-c1"}},
  Row{"7_2_provisioning_fails",
      {}, {},
      {{.name = "c1", .cls = "inproc"}},
      {{.name = "c1", .cls = "inproc",
        .anns = {"volume.kubernetes.io/storage-provisioner=example.com/inproc",
                 "volume.beta.kubernetes.io/storage-provisioner=example.com/inproc"}}},
      {"Warning ProvisioningFailed Failed to provision volume with StorageClass \"inproc\": disk full"},
      "claim:c1", {{.name = "inproc", .provisioner = "example.com/inproc"}}, {}, {}, true, 1, {},
      "disk full", "", {"provision pvc-uid-c1"}},
  // A volume stored while no controller ran is not Available until its own sync: a claim it
  // would fit waits for it (the sync fails, to be retried) instead of getting a new volume.
  Row{.name = "7_2a_a_claim_waits_for_a_new_volume_rather_than_provisioning",
      .volumes = {{.name = "v1", .phase = "Pending", .cls = "inproc"}},
      .want_volumes = {{.name = "v1", .phase = "Pending", .cls = "inproc"}},
      .claims = {{.name = "c1", .cls = "inproc"}},
      .want_claims = {{.name = "c1", .cls = "inproc"}},
      .want_events = {},
      .sync = "claim:c1",
      .classes = {{.name = "inproc", .provisioner = "example.com/inproc"}},
      .want_error = true,
      .want_provisioner_calls = {}},
  Row{"7_3_a_volume_made_before_a_crash_is_not_made_again",
      {{.name = "pvc-uid-c1", .claim = "c1/uid-c1", .phase = "Pending", .policy = "Delete", .cls = "inproc",
        .anns = {kByController, "pv.kubernetes.io/provisioned-by=example.com/inproc"}}},
      {{.name = "pvc-uid-c1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Delete", .cls = "inproc",
        .anns = {kByController, "pv.kubernetes.io/provisioned-by=example.com/inproc"}}},
      {{.name = "c1", .cls = "inproc", .anns = {"volume.kubernetes.io/storage-provisioner=example.com/inproc"}}},
      {{.name = "c1", .volume = "pvc-uid-c1", .phase = "Bound", .cls = "inproc",
        .anns = {kByController, kCompleted, "volume.kubernetes.io/storage-provisioner=example.com/inproc"},
        .bound_status = true}},
      {}, "claim:c1", {{.name = "inproc", .provisioner = "example.com/inproc"}}},
  Row{"7_4_creating_the_volume_object_fails",
      {}, {},
      {{.name = "c1", .cls = "inproc", .anns = {"volume.kubernetes.io/storage-provisioner=example.com/inproc"}}},
      {{.name = "c1", .cls = "inproc", .anns = {"volume.kubernetes.io/storage-provisioner=example.com/inproc"}}},
      {"Warning ProvisioningFailed Error creating provisioned PV object for claim default/c1: injected create error. Deleting the volume."},
      "claim:c1", {{.name = "inproc", .provisioner = "example.com/inproc"}}, {},
      {{"create", "persistentvolumes"}}, true, 1, {}, "", "",
      {"provision pvc-uid-c1", "delete pvc-uid-c1"}},
  ProvisionedForSelectedNode("7_5_provisioned_for_the_selected_node"),
  // A free volume of the class elsewhere is not taken (only one pre-bound to the claim would be).
  ProvisionedForSelectedNode("7_5b_selected_node_provisions_though_a_free_volume_fits",
                             {{.name = "v1", .cls = "local"}}),
  Row{"7_6_selected_node_missing",
      {}, {},
      {{.name = "c1", .cls = "local", .anns = {"volume.kubernetes.io/selected-node=gone",
          "volume.kubernetes.io/storage-provisioner=example.com/inproc"}}},
      {{.name = "c1", .cls = "local", .anns = {"volume.kubernetes.io/selected-node=gone",
          "volume.kubernetes.io/storage-provisioner=example.com/inproc"}}},
      {"Warning ProvisioningFailed Failed to get target node: nodes \"gone\" not found"},
      "claim:c1", {{.name = "local", .provisioner = "example.com/inproc", .wait_for_consumer = true}}},
  Row{"7_7_delete_policy_deletes_storage_then_the_volume",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Delete",
        .anns = {kByController, "pv.kubernetes.io/provisioned-by=example.com/inproc"}}},
      {}, {}, {}, {}, "volume:v1", {}, {}, {}, false, 1, {}, "", "", {"delete v1"}},
  Row{"7_8_deleting_the_storage_fails",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Delete",
        .anns = {kByController, "pv.kubernetes.io/provisioned-by=example.com/inproc"}}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Failed", .policy = "Delete",
        .anns = {kByController, "pv.kubernetes.io/provisioned-by=example.com/inproc"},
        .finalizers = {kFinalizer}}},
      {}, {}, {"Warning VolumeFailedDelete device busy"},
      "volume:v1", {}, {}, {}, true, 1, {}, "", "device busy", {"delete v1"}},
  Row{"7_9_released_provisioned_volume_is_deleted",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Released", .policy = "Delete",
        .anns = {kByController, "pv.kubernetes.io/provisioned-by=example.com/inproc"}}},
      {}, {}, {}, {}, "volume:v1", {}, {}, {}, false, 1, {}, "", "", {"delete v1"}},
  Row{"7_10_failed_provisioning_gives_the_claim_back_to_the_scheduler",
      {}, {},
      {{.name = "c1", .cls = "local", .anns = {"volume.kubernetes.io/selected-node=n1",
          "volume.kubernetes.io/storage-provisioner=example.com/inproc"}}},
      {{.name = "c1", .cls = "local", .anns = {"volume.kubernetes.io/storage-provisioner=example.com/inproc"}}},
      {"Warning ProvisioningFailed Failed to provision volume with StorageClass \"local\": disk full"},
      "claim:c1", {{.name = "local", .provisioner = "example.com/inproc", .wait_for_consumer = true}},
      {}, {}, true, 1, {}, "disk full", "", {"provision pvc-uid-c1 on n1"}, {"n1"}},
  // ---- 8: the controller's deletion finalizer (kubernetes.io/pv-controller) --------------
  Row{"8_1_provisioned_with_retain_has_no_finalizer",
      {},
      {{.name = "pvc-uid-c1", .claim = "c1/uid-c1", .phase = "Bound", .cls = "inproc",
        .anns = {kByController, "pv.kubernetes.io/provisioned-by=example.com/inproc"}}},
      {{.name = "c1", .cls = "inproc"}},
      {{.name = "c1", .volume = "pvc-uid-c1", .phase = "Bound", .cls = "inproc",
        .anns = {kByController, kCompleted, "volume.kubernetes.io/storage-provisioner=example.com/inproc",
                 "volume.beta.kubernetes.io/storage-provisioner=example.com/inproc"}, .bound_status = true}},
      {"Normal ProvisioningSucceeded Successfully provisioned volume pvc-uid-c1 using example.com/inproc"},
      "claim:c1", {{.name = "inproc", .provisioner = "example.com/inproc", .reclaim = "Retain"}},
      {}, {}, false, 1, {}, "", "", {"provision pvc-uid-c1"}},
  BesideBoundClaim("8_2_a_provisioned_volume_without_it_gets_it",
      {.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Delete", .anns = kMadeHere,
       .finalizers = {kPVProtection}},
      {.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Delete", .anns = kMadeHere,
       .finalizers = {kPVProtection, kFinalizer}}),
  BesideBoundClaim("8_3_retain_takes_it_away",
      {.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Retain", .anns = kMadeHere,
       .finalizers = {kPVProtection, kFinalizer}},
      {.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Retain", .anns = kMadeHere,
       .finalizers = {kPVProtection}}),
  Row{"8_4_not_on_volumes_made_elsewhere",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Delete",
        .anns = {kByController, "pv.kubernetes.io/provisioned-by=example.com/external"}},
       {.name = "v2", .claim = "c2/uid-c2", .phase = "Bound", .policy = "Delete"}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Delete",
        .anns = {kByController, "pv.kubernetes.io/provisioned-by=example.com/external"}},
       {.name = "v2", .claim = "c2/uid-c2", .phase = "Bound", .policy = "Delete"}},
      kBoundC1, kBoundC1, {}, "volume:v1"},
  BesideBoundClaim("8_5_not_added_to_a_volume_being_deleted",
      {.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Delete", .anns = kMadeHere,
       .deleting = true, .finalizers = {kPVProtection}}),
  BesideBoundClaim("8_6_volume_deleted_first_stays_while_its_claim_is_bound",
      {.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Delete", .anns = kMadeHere,
       .deleting = true, .finalizers = {kPVProtection, kFinalizer}}),
  Row{"8_7_volume_deleted_first_has_its_storage_deleted_when_the_claim_goes",
      // The protection controller has already let go (the volume is no longer Bound once
      // Released; here the object holds only the controller's finalizer): it is gone.
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Released", .policy = "Delete", .anns = kMadeHere,
        .deleting = true, .finalizers = {kFinalizer}}},
      {}, {}, {}, {}, "volume:v1", {}, {}, {}, false, 1, {}, "", "", {"delete v1"}},
  Row{"8_8_the_claim_goes_first_storage_then_the_object",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .policy = "Delete", .anns = kMadeHere,
        .finalizers = {kFinalizer}}},
      {}, {}, {}, {}, "volume:v1", {}, {}, {}, false, 1, {}, "", "", {"delete v1"}},
  Row{"8_9_failed_delete_keeps_the_finalizer",
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Released", .policy = "Delete", .anns = kMadeHere,
        .deleting = true, .finalizers = {kFinalizer}}},
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Failed", .policy = "Delete", .anns = kMadeHere,
        .deleting = true, .finalizers = {kFinalizer}}},
      {}, {}, {"Warning VolumeFailedDelete device busy"},
      "volume:v1", {}, {}, {}, true, 1, {}, "", "device busy", {"delete v1"}},
  Row{"8_10_finalizer_removal_fails_then_storage_is_deleted_again_and_it_goes",
      // Deleting the storage again finds it gone (provisioners' Delete is idempotent).
      {{.name = "v1", .claim = "c1/uid-c1", .phase = "Released", .policy = "Delete", .anns = kMadeHere,
        .deleting = true, .finalizers = {kFinalizer}}},
      {}, {}, {}, {}, "volume:v1", {}, {}, {{"update", "persistentvolumes"}}, false, 2, {}, "", "",
      {"delete v1", "delete v1"}}
  };
  return rows;
}
// clang-format on

INSTANTIATE_TEST_SUITE_P(Binder, BinderTest, ::testing::ValuesIn(Rows()),
                         [](const auto& info) { return info.param.name; });

// The one-at-a-time syncs (SyncClaim, SyncVolume) are a batch of one, written at once: the
// same as the workers' for rows that bind, provision, release, fail a write and retry.
TEST(BinderOneAtATimeTest, SyncClaimAndSyncVolumeDecideAsTheBatchesDo) {
  for (const char* name :
       {"1_1_binds_to_an_unbound_volume", "1_25_external_provisioner", "3_6_misbound",
        "4_3_claim_gone_retain_releases", "6_2_volume_update_fails_then_works",
        "6_7_claim_status_fails", "7_1_provisioned_and_bound",
        "7_7_delete_policy_deletes_storage_then_the_volume"}) {
    SCOPED_TRACE(name);
    auto row = std::find_if(Rows().begin(), Rows().end(),
                            [&](const Row& r) { return r.name == name; });
    ASSERT_NE(row, Rows().end());
    CheckRow(*row, /*batched=*/false);
  }
}

// Several claims in one batch: each gets its own volume (one reserved by a claim of the batch
// is not offered to the next), every volume is written before any claim, and a failed write
// fails only the claim it was for, whose volume is offered again afterwards.
TEST(BinderBatchTest, ClaimsOfABatchBindOnceEachAndFailAlone) {
  client::testing::FakeClient api;
  std::vector<std::string> events;
  Controller ctrl(api, [&](const api::ObjectReference&, std::string_view type,
                           std::string_view reason, std::string message) {
    events.push_back(std::string(type) + " " + std::string(reason) + " " + message);
  });
  for (const V& v :
       {V{.name = "v1"}, V{.name = "v2", .size = "2Gi"}, V{.name = "v3", .size = "3Gi"}}) {
    ctrl.StoreVolumeForTest(api.fake<PersistentVolume>().Seed(MakeVolume(v)));
  }
  std::vector<Controller::ClaimPtr> claims;
  for (const std::string name : {"c1", "c2", "c3", "c4"}) {
    auto stored = api.fake<PersistentVolumeClaim>().Seed(MakeClaim(C{.name = name}));
    ctrl.StoreClaimForTest(stored);
    claims.push_back(std::make_shared<const PersistentVolumeClaim>(stored));
  }
  claims.push_back(nullptr);  // a key whose claim is gone
  // The first volume written (c1's) fails.
  api.state().InjectError("update", "persistentvolumes",
                          api::ApiError{500, "InternalError", "injected update error"});
  api.state().ClearActions();

  auto results = ctrl.SyncClaims(claims);
  ASSERT_EQ(results.size(), 5u);
  EXPECT_FALSE(results[0].ok());
  EXPECT_EQ(results[0].code(), StatusCode::kUnavailable) << results[0].ToString();
  for (size_t i = 1; i < results.size(); ++i) {
    EXPECT_TRUE(results[i].ok()) << i << ": " << results[i].ToString();
  }

  auto volumes = api.fake<PersistentVolume>().Objects();
  auto stored_claims = api.fake<PersistentVolumeClaim>().Objects();
  EXPECT_EQ(Describe(volumes["v1"]), Describe(MakeVolume({.name = "v1"})));
  for (auto [name, size, claim] : {std::tuple{"v2", "2Gi", "c2/uid-c2"},
                                    std::tuple{"v3", "3Gi", "c3/uid-c3"}}) {
    EXPECT_EQ(Describe(volumes[name]),
              Describe(MakeVolume({.name = name, .size = size, .claim = claim, .phase = "Bound",
                                   .anns = {kByController}})));
  }
  EXPECT_EQ(Describe(stored_claims["default/c1"]), Describe(MakeClaim({.name = "c1"})));
  for (auto [name, volume] : {std::pair{"c2", "v2"}, std::pair{"c3", "v3"}}) {
    PersistentVolumeClaim want = MakeClaim({.name = name, .volume = volume, .phase = "Bound",
                                            .anns = {kByController, kCompleted},
                                            .bound_status = true});
    // Bound claims report their volume's capacity.
    want.status.capacity = volumes[volume].spec.capacity;
    EXPECT_EQ(Describe(stored_claims["default/" + std::string(name)]), Describe(want));
  }
  // Nothing left for c4 while c1 held v1.
  EXPECT_EQ(Describe(stored_claims["default/c4"]), Describe(MakeClaim({.name = "c4"})));
  EXPECT_EQ(events, (std::vector<std::string>{
                        "Normal FailedBinding no persistent volumes available for this claim and "
                        "no storage class is set"}));
  // Volumes first, then the claims they were bound to.
  int last_volume = -1, first_claim = -1;
  const auto actions = api.state().actions();
  for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
    const auto& a = actions[i];
    if (a.verb.rfind("update", 0) != 0) continue;
    if (a.resource == "persistentvolumes") last_volume = i;
    if (a.resource == "persistentvolumeclaims" && a.key != "default/c4" && first_claim < 0) {
      first_claim = i;
    }
  }
  EXPECT_GE(last_volume, 0);
  EXPECT_GT(first_claim, last_volume);

  // v1 is free again: c1's next sync takes it.
  auto c1 = std::make_shared<const PersistentVolumeClaim>(
      api.fake<PersistentVolumeClaim>().Objects()["default/c1"]);
  auto again = ctrl.SyncClaims({c1});
  ASSERT_TRUE(again[0].ok()) << again[0].ToString();
  EXPECT_EQ(api.fake<PersistentVolume>().Objects()["v1"].spec.claim_ref->name, "c1");
}

// A claim deleted while the controller's write of its binding is in flight: the write's late
// answer must not put it back in the view, or its volume would stay Bound to a claim that is
// gone, for good (pv-protection then holds the volume once it is deleted).
TEST(BinderViewTest, AWriteAnsweredAfterTheClaimsDeletionDoesNotBringItBack) {
  client::testing::FakeClient api;
  Controller ctrl(api, nullptr);
  const auto claim = MakeClaim({.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth});
  auto volume = api.fake<PersistentVolume>().Seed(
      MakeVolume({.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}}));
  ctrl.StoreVolumeForTest(volume);
  ctrl.ForgetClaimForTest(claim);  // the informer's delete, before the write's answer
  ctrl.RememberForTest(std::make_shared<const PersistentVolumeClaim>(claim));
  ASSERT_TRUE(ctrl.SyncVolume(volume).ok());
  EXPECT_EQ(api.fake<PersistentVolume>().Objects()["v1"].status.phase, "Released");

  // A claim made again under the same name is another object: its answers are remembered.
  auto again = MakeClaim({.name = "c1", .volume = "v1", .phase = "Bound", .anns = kBoth});
  again.metadata.uid = "uid-c1-again";
  api.fake<PersistentVolumeClaim>().Seed(again);
  ctrl.RememberForTest(std::make_shared<const PersistentVolumeClaim>(again));
  auto v2 = api.fake<PersistentVolume>().Seed(MakeVolume(
      {.name = "v2", .claim = "c1/uid-c1-again", .phase = "Bound", .anns = {kByController}}));
  ctrl.StoreVolumeForTest(v2);
  ASSERT_TRUE(ctrl.SyncVolume(v2).ok());
  EXPECT_NE(api.fake<PersistentVolume>().Objects()["v2"].status.phase, "Released");
}

// A batch of volume syncs: the phases set without an event are written at the end, each
// answered alone; a sync that does more (a volume whose claim is gone is Released) writes as it
// goes, and a failed write fails only its own volume.
TEST(BinderBatchTest, VolumePhasesOfABatchAreWrittenTogetherAndFailAlone) {
  client::testing::FakeClient api;
  Controller ctrl(api, nullptr);
  auto bound_claim = api.fake<PersistentVolumeClaim>().Seed(
      MakeClaim({.name = "c1", .volume = "bound", .phase = "Bound", .anns = {kCompleted}}));
  ctrl.StoreClaimForTest(bound_claim);
  std::vector<VolumePtr> volumes;
  for (const V& v : {V{.name = "new1", .phase = "Pending"}, V{.name = "new2", .phase = "Pending"},
                     V{.name = "bound", .claim = "c1/uid-c1", .phase = "Pending"},
                     V{.name = "orphan", .claim = "gone/uid-gone", .phase = "Bound"},
                     V{.name = "new3", .phase = "Pending"},
                     V{.name = "free", .phase = "Available"}}) {
    auto stored = api.fake<PersistentVolume>().Seed(MakeVolume(v));
    ctrl.StoreVolumeForTest(stored);
    volumes.push_back(std::make_shared<const PersistentVolume>(stored));
  }
  volumes.insert(volumes.begin() + 1, nullptr);  // a key whose volume is gone
  // The first status write fails: orphan's Released, written during its sync.
  api.state().InjectError("update-status", "persistentvolumes",
                          api::ApiError{500, "InternalError", "injected update error"});
  auto results = ctrl.SyncVolumes(volumes);
  ASSERT_EQ(results.size(), 7u);
  for (size_t i : {0, 1, 2, 3, 5, 6}) EXPECT_TRUE(results[i].ok()) << i << ": " << results[i].ToString();
  EXPECT_EQ(results[4].code(), StatusCode::kUnavailable) << results[4].ToString();

  auto stored = api.fake<PersistentVolume>().Objects();
  for (const char* name : {"new1", "new2", "new3", "free"}) {
    EXPECT_EQ(stored[name].status.phase, "Available") << name;
  }
  EXPECT_EQ(stored["bound"].status.phase, "Bound");
  EXPECT_EQ(stored["orphan"].status.phase, "Bound");  // its write failed; the retry releases it

  // Now a batched write fails: only its volume's result says so.
  auto again = std::make_shared<const PersistentVolume>(
      api.fake<PersistentVolume>().Seed(MakeVolume({.name = "new4", .phase = "Pending"})));
  auto other = std::make_shared<const PersistentVolume>(
      api.fake<PersistentVolume>().Seed(MakeVolume({.name = "new5", .phase = "Pending"})));
  api.state().InjectError("update-status", "persistentvolumes",
                          api::ApiError{409, "Conflict", "injected update error"});
  results = ctrl.SyncVolumes({again, other});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].code(), StatusCode::kAborted) << results[0].ToString();
  EXPECT_TRUE(results[1].ok()) << results[1].ToString();
  stored = api.fake<PersistentVolume>().Objects();
  EXPECT_EQ(stored["new4"].status.phase, "Pending");
  EXPECT_EQ(stored["new5"].status.phase, "Available");
}

// The view takes a version it has not seen; the echo of a write it remembered already (the very
// object in process, the same resourceVersion over HTTP) and older versions it keeps out. Such
// an echo is synced unless it leaves the object Bound.
TEST(ViewTest, EchoesOfBindingsAreNotSyncedAgain) {
  client::testing::FakeClient api;
  Controller ctrl(api, nullptr);
  auto at = [](PersistentVolume v, std::string rv) {
    v.metadata.resource_version = std::move(rv);
    return std::make_shared<const PersistentVolume>(std::move(v));
  };
  const PersistentVolume bound =
      MakeVolume({.name = "v1", .claim = "c1/uid-c1", .phase = "Bound", .anns = {kByController}});
  auto v5 = at(bound, "5");
  EXPECT_TRUE(ctrl.StoreVolumeForTest(v5));
  EXPECT_FALSE(ctrl.StoreVolumeForTest(v5));            // the same object
  EXPECT_FALSE(ctrl.StoreVolumeForTest(at(bound, "5")));  // the same version, decoded apart
  EXPECT_FALSE(ctrl.StoreVolumeForTest(at(bound, "4")));  // older
  EXPECT_TRUE(ctrl.StoreVolumeForTest(at(bound, "6")));
  // Objects without a version (as tests make them) always replace each other.
  EXPECT_TRUE(ctrl.StoreVolumeForTest(at(MakeVolume({.name = "v2"}), "")));
  EXPECT_TRUE(ctrl.StoreVolumeForTest(at(MakeVolume({.name = "v2", .size = "2Gi"}), "")));

  EXPECT_FALSE(Controller::UpdateNeedsSync(false, bound));
  EXPECT_TRUE(Controller::UpdateNeedsSync(true, bound));
  EXPECT_TRUE(Controller::UpdateNeedsSync(false, MakeVolume({.name = "v1", .claim = "c1/uid-c1",
                                                              .phase = "Available"})));
  EXPECT_TRUE(Controller::UpdateNeedsSync(false, MakeVolume({.name = "v1", .claim = "c1",
                                                              .phase = "Bound"})));
  PersistentVolume deleting = bound;
  deleting.metadata.deletion_timestamp = api::Time{};
  EXPECT_TRUE(Controller::UpdateNeedsSync(false, deleting));

  PersistentVolumeClaim claim = MakeClaim({.name = "c1", .volume = "v1", .phase = "Bound",
                                           .anns = {kByController, kCompleted}});
  claim.metadata.resource_version = "7";
  auto c7 = std::make_shared<const PersistentVolumeClaim>(claim);
  EXPECT_TRUE(ctrl.StoreClaimForTest(c7));
  EXPECT_FALSE(ctrl.StoreClaimForTest(c7));
  EXPECT_FALSE(Controller::UpdateNeedsSync(false, claim));
  EXPECT_TRUE(Controller::UpdateNeedsSync(true, claim));
  // Bound by volumeName but not yet marked complete: the claim sync finishes it.
  EXPECT_TRUE(Controller::UpdateNeedsSync(
      false, MakeClaim({.name = "c1", .volume = "v1", .phase = "Bound", .anns = {kByController}})));
  EXPECT_TRUE(Controller::UpdateNeedsSync(false, MakeClaim({.name = "c1", .phase = "Pending"})));
}

// The event of a binding write can reach the informer before the write's answer reaches the
// controller (in process it often does). It is then synced only if something newer came too.
TEST(ViewTest, EchoesBeforeTheAnswerAreSyncedOnlyWithNews) {
  for (bool apart : {true, false})
  for (bool news : {false, true}) {
    SCOPED_TRACE(std::string(news ? "someone else wrote too" : "echoes only") +
                 (apart ? ", status written apart" : ", status written with the object"));
    client::testing::FakeClient api;
    api.write_status_apart = apart;
    Controller ctrl(api, nullptr);
    ctrl.StoreVolumeForTest(api.fake<PersistentVolume>().Seed(MakeVolume({.name = "v1"})));
    const PersistentVolumeClaim claim =
        api.fake<PersistentVolumeClaim>().Seed(MakeClaim({.name = "c1", .uid = "uid-c1"}));
    ctrl.StoreClaimForTest(claim);
    std::vector<bool> sync_now;
    api.fake<PersistentVolume>().OnWritten([&](const PersistentVolume& v) {
      sync_now.push_back(ctrl.OnUpdateForTest(std::make_shared<const PersistentVolume>(v)));
      if (!news) return;
      PersistentVolume later = v;  // a label added right after, still Bound
      later.metadata.labels["tier"] = "gold";
      later.metadata.resource_version = std::to_string(std::stoll(v.metadata.resource_version) + 100);
      sync_now.push_back(ctrl.OnUpdateForTest(std::make_shared<const PersistentVolume>(later)));
    });
    api.fake<PersistentVolumeClaim>().OnWritten([&](const PersistentVolumeClaim& c) {
      sync_now.push_back(ctrl.OnUpdateForTest(std::make_shared<const PersistentVolumeClaim>(c)));
    });

    ASSERT_TRUE(ctrl.SyncClaim(claim).ok());
    // Written apart (as over HTTP), the update after the first write is not settled (claimRef
    // or volumeName set, not yet Bound), so it is synced at once, as every such update is; the
    // Bound one waits for the write's answer. Written together (in process), there is only the
    // Bound one.
    const std::vector<bool> want =
        !apart ? (news ? std::vector<bool>{false, false, false} : std::vector<bool>{false, false})
        : news ? std::vector<bool>{true, true, false, false, true, false}  // volume ×4, claim ×2
               : std::vector<bool>{true, false, true, false};
    EXPECT_EQ(sync_now, want);
    EXPECT_EQ(ctrl.TakeQueuedClaimsForTest(), std::vector<std::string>{});
    EXPECT_EQ(ctrl.TakeQueuedVolumesForTest(), news ? std::vector<std::string>{"v1"}
                                             : std::vector<std::string>{});
    auto claims = api.fake<PersistentVolumeClaim>().Objects();
    EXPECT_EQ(claims.at("default/c1").status.phase, "Bound");

    // Outside a write, news is synced at once and an echo is not.
    PersistentVolumeClaim later = claims.at("default/c1");
    later.metadata.labels["tier"] = "gold";
    later.metadata.resource_version = "1000";
    EXPECT_TRUE(ctrl.OnUpdateForTest(std::make_shared<const PersistentVolumeClaim>(later)));
    EXPECT_FALSE(ctrl.OnUpdateForTest(std::make_shared<const PersistentVolumeClaim>(later)));
  }
}

}  // namespace
}  // namespace kvol::controller::pv
