// The built-in CSI provisioner's table: a claim and its class -> the CreateVolume request (or
// the error naming what is wrong), and a driver's answer -> the PersistentVolume.
#include "controller/provisioner/create_volume.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace kvol::controller::provisioner {
namespace {

namespace pb = ::csi::v1;

// The request, in a line: what the rows compare.
std::string Summary(const pb::CreateVolumeRequest& r) {
  std::string s =
      "name=" + r.name() + " required=" + std::to_string(r.capacity_range().required_bytes());
  if (r.capacity_range().limit_bytes()) {
    s += " limit=" + std::to_string(r.capacity_range().limit_bytes());
  }
  for (const auto& c : r.volume_capabilities()) {
    s += c.has_block() ? " block:" : " mount(" + c.mount().fs_type() + "):";
    s += pb::VolumeCapability::AccessMode::Mode_Name(c.access_mode().mode());
  }
  std::map<std::string, std::string> params(r.parameters().begin(), r.parameters().end());
  for (const auto& [k, v] : params) s += " param:" + k + "=" + v;
  std::map<std::string, std::string> secrets(r.secrets().begin(), r.secrets().end());
  for (const auto& [k, v] : secrets) s += " secret:" + k + "=" + v;
  auto topo = [&](const char* what, const auto& list) {
    for (const auto& t : list) {
      std::map<std::string, std::string> seg(t.segments().begin(), t.segments().end());
      s += std::string(" ") + what + ":";
      for (const auto& [k, v] : seg) s += k + "=" + v + ";";
    }
  };
  topo("requisite", r.accessibility_requirements().requisite());
  topo("preferred", r.accessibility_requirements().preferred());
  return s;
}

struct Row {
  std::string name;
  std::map<std::string, std::string> params = {};
  std::string request = "1Gi";
  std::string limit = "";
  std::vector<std::string> modes = {"ReadWriteOnce"};
  std::string volume_mode = "";
  std::vector<std::string> topology_keys = {};
  std::map<std::string, std::string> node_labels = {};  // a selected node when not empty
  std::vector<std::vector<std::string>> allowed = {};   // terms of "key=v1|v2"
  bool multi_writer = false;
  std::string want;  // the Summary, or "error: <message>"
};

api::PersistentVolumeClaim Claim(const Row& row) {
  api::PersistentVolumeClaim c;
  c.metadata.namespace_ = "team-a";
  c.metadata.name = "data";
  c.metadata.uid = "1234";
  c.metadata.annotations["team"] = "blue";
  c.spec.access_modes = row.modes;
  if (!row.request.empty())
    c.spec.resources.requests["storage"] = api::Quantity::MustParse(row.request);
  if (!row.limit.empty()) c.spec.resources.limits["storage"] = api::Quantity::MustParse(row.limit);
  if (!row.volume_mode.empty()) c.spec.volume_mode = row.volume_mode;
  return c;
}

api::StorageClass Class(const Row& row) {
  api::StorageClass cls;
  cls.metadata.name = "fast";
  cls.provisioner = "d.example.com";
  cls.parameters = row.params;
  cls.reclaim_policy = "Retain";
  cls.mount_options = {"noatime"};
  for (const auto& term : row.allowed) {
    api::TopologySelectorTerm t;
    for (const auto& expr : term) {
      api::TopologySelectorLabelRequirement r;
      r.key = expr.substr(0, expr.find('='));
      std::string values = expr.substr(expr.find('=') + 1);
      for (size_t start = 0;;) {
        size_t bar = values.find('|', start);
        r.values.push_back(values.substr(start, bar - start));
        if (bar == std::string::npos) break;
        start = bar + 1;
      }
      t.match_label_expressions.push_back(r);
    }
    cls.allowed_topologies.push_back(t);
  }
  return cls;
}

const Row kRows[] = {
    {.name = "claim and class to a request: parameters without csi.storage.k8s.io/ keys",
     .params = {{"type", "fast"}, {"csi.storage.k8s.io/fstype", "xfs"}},
     .want = "name=pvc-1234 required=1073741824 mount(xfs):SINGLE_NODE_WRITER param:type=fast"},
    {.name = "limits are the capacity range's limit",
     .limit = "2Gi",
     .want = "name=pvc-1234 required=1073741824 limit=2147483648 mount():SINGLE_NODE_WRITER"},
    {.name = "one capability per access mode",
     .modes = {"ReadWriteOnce", "ReadOnlyMany"},
     .multi_writer = true,
     .want = "name=pvc-1234 required=1073741824 mount():SINGLE_NODE_MULTI_WRITER "
             "mount():MULTI_NODE_READER_ONLY"},
    {.name = "a block volume",
     .params = {{"csi.storage.k8s.io/fstype", "xfs"}},
     .modes = {"ReadWriteOncePod"},
     .volume_mode = "Block",
     .want = "name=pvc-1234 required=1073741824 block:SINGLE_NODE_WRITER"},
    {.name = "a claim asking for no storage",
     .request = "",
     .want = "error: spec.resources.requests.storage: the claim asks for no storage"},
    {.name = "the selected node's segment is required and preferred",
     .topology_keys = {"topology.example.com/zone", "topology.example.com/node"},
     .node_labels = {{"topology.example.com/zone", "z1"}, {"topology.example.com/node", "n1"}},
     .want = "name=pvc-1234 required=1073741824 mount():SINGLE_NODE_WRITER "
             "requisite:topology.example.com/node=n1;topology.example.com/zone=z1; "
             "preferred:topology.example.com/node=n1;topology.example.com/zone=z1;"},
    {.name = "a selected node without the driver's topology label",
     .topology_keys = {"topology.example.com/zone"},
     .node_labels = {{"kubernetes.io/hostname", "n1"}},
     .want = "error: topology key topology.example.com/zone not found in node n1's labels"},
    {.name = "without a selected node, the class's allowedTopologies",
     .topology_keys = {"zone"},
     .allowed = {{"zone=a|b"}},
     .want = "name=pvc-1234 required=1073741824 mount():SINGLE_NODE_WRITER requisite:zone=a; "
             "requisite:zone=b; preferred:zone=a; preferred:zone=b;"},
    {.name = "a driver without topology gets none",
     .allowed = {{"zone=a"}},
     .want = "name=pvc-1234 required=1073741824 mount():SINGLE_NODE_WRITER"},
};

class CreateVolumeTable : public ::testing::TestWithParam<Row> {};

TEST_P(CreateVolumeTable, Request) {
  const Row& row = GetParam();
  const api::PersistentVolumeClaim claim = Claim(row);
  const api::StorageClass cls = Class(row);
  api::Node node;
  node.metadata.name = "n1";
  node.metadata.labels = row.node_labels;
  CreateVolumeInput in{.pv_name = "pvc-1234",
                       .claim = &claim,
                       .storage_class = &cls,
                       .topology_keys = row.topology_keys,
                       .selected_node = row.node_labels.empty() ? nullptr : &node,
                       .single_node_multi_writer = row.multi_writer,
                       .secrets = {}};
  auto req = MakeCreateVolumeRequest(in);
  EXPECT_EQ(req.ok() ? Summary(*req) : "error: " + req.status().message(), row.want) << row.name;
}

INSTANTIATE_TEST_SUITE_P(Rows, CreateVolumeTable, ::testing::ValuesIn(kRows),
                         [](const auto& info) { return "row" + std::to_string(info.index + 1); });

struct SecretRow {
  std::string name;
  std::map<std::string, std::string> params;
  std::string want;  // "kind=namespace/name ..." or "error: ..."
};

const SecretRow kSecretRows[] = {
    {.name = "no secrets", .params = {}, .want = ""},
    {.name = "templates of the claim and the volume",
     .params = {{"csi.storage.k8s.io/provisioner-secret-name", "${pvc.name}-key"},
                {"csi.storage.k8s.io/provisioner-secret-namespace", "${pvc.namespace}"},
                {"csi.storage.k8s.io/node-publish-secret-name", "${pvc.annotations['team']}"},
                {"csi.storage.k8s.io/node-publish-secret-namespace", "vault"},
                {"csi.storage.k8s.io/controller-expand-secret-name", "${pv.name}"},
                {"csi.storage.k8s.io/controller-expand-secret-namespace", "kube-system"}},
     .want = "provisioner=team-a/data-key node-publish=vault/blue "
             "controller-expand=kube-system/pvc-1234"},
    {.name = "a name without its namespace",
     .params = {{"csi.storage.k8s.io/node-stage-secret-name", "s"}},
     .want = "error: StorageClass parameters csi.storage.k8s.io/node-stage-secret-name and "
             "csi.storage.k8s.io/node-stage-secret-namespace: both must be given, or neither"},
    {.name = "a template a namespace does not take",
     .params = {{"csi.storage.k8s.io/provisioner-secret-name", "s"},
                {"csi.storage.k8s.io/provisioner-secret-namespace", "${pvc.name}"}},
     .want = "error: StorageClass parameter csi.storage.k8s.io/provisioner-secret-namespace: "
             "\"${pvc.name}\" is not a template this parameter takes"},
    {.name = "an annotation the claim does not have",
     .params = {{"csi.storage.k8s.io/provisioner-secret-name", "${pvc.annotations['nope']}"},
                {"csi.storage.k8s.io/provisioner-secret-namespace", "x"}},
     .want = "error: StorageClass parameter csi.storage.k8s.io/provisioner-secret-name: the "
             "claim has no annotation \"nope\""},
};

class SecretTable : public ::testing::TestWithParam<SecretRow> {};

TEST_P(SecretTable, Resolve) {
  const SecretRow& row = GetParam();
  Row base{.name = row.name, .params = row.params};
  auto got = ResolveSecrets(Class(base), Claim(base), "pvc-1234");
  std::string s;
  if (!got.ok()) {
    s = "error: " + got.status().message();
  } else {
    auto add = [&](const char* what, const std::optional<api::SecretReference>& r) {
      if (r) s += std::string(s.empty() ? "" : " ") + what + "=" + r->namespace_ + "/" + r->name;
    };
    add("provisioner", got->provisioner);
    add("controller-publish", got->controller_publish);
    add("node-stage", got->node_stage);
    add("node-publish", got->node_publish);
    add("controller-expand", got->controller_expand);
    add("node-expand", got->node_expand);
  }
  EXPECT_EQ(s, row.want) << row.name;
}

INSTANTIATE_TEST_SUITE_P(Rows, SecretTable, ::testing::ValuesIn(kSecretRows),
                         [](const auto& info) { return "row" + std::to_string(info.index + 1); });

TEST(MakePersistentVolume, FromTheDriversAnswer) {
  Row row{.name = "pv", .params = {{"csi.storage.k8s.io/fstype", "ext4"}}};
  const api::PersistentVolumeClaim claim = Claim(row);
  const api::StorageClass cls = Class(row);
  CreateVolumeInput in{.pv_name = "pvc-1234", .claim = &claim, .storage_class = &cls};
  SecretRefs secrets;
  secrets.provisioner = api::SecretReference{.name = "p", .namespace_ = "ns"};
  secrets.node_stage = api::SecretReference{.name = "s", .namespace_ = "ns"};
  pb::Volume v;
  v.set_volume_id("vol-7");
  v.set_capacity_bytes(2LL << 30);
  (*v.mutable_volume_context())["pool"] = "a";
  (*v.add_accessible_topology()->mutable_segments())["topology.example.com/node"] = "n1";
  const api::PersistentVolume pv = MakePersistentVolume(in, secrets, v);
  EXPECT_EQ(pv.metadata.name, "pvc-1234");
  EXPECT_EQ(pv.metadata.annotations.at("pv.kubernetes.io/provisioned-by"), "d.example.com");
  EXPECT_EQ(pv.metadata.annotations.at(std::string(kAnnDeletionSecretName)), "p");
  EXPECT_EQ(pv.metadata.annotations.at(std::string(kAnnDeletionSecretNamespace)), "ns");
  EXPECT_EQ(pv.spec.capacity.at("storage").ToString(), "2Gi");
  EXPECT_EQ(pv.spec.persistent_volume_reclaim_policy, "Retain");
  EXPECT_EQ(pv.spec.mount_options, std::vector<std::string>{"noatime"});
  EXPECT_EQ(pv.spec.storage_class_name, "fast");
  ASSERT_TRUE(pv.spec.claim_ref);
  EXPECT_EQ(pv.spec.claim_ref->uid, "1234");
  ASSERT_TRUE(pv.spec.csi);
  EXPECT_EQ(pv.spec.csi->driver, "d.example.com");
  EXPECT_EQ(pv.spec.csi->volume_handle, "vol-7");
  EXPECT_EQ(pv.spec.csi->fs_type, "ext4");
  EXPECT_EQ(pv.spec.csi->volume_attributes.at("pool"), "a");
  ASSERT_TRUE(pv.spec.csi->node_stage_secret_ref);
  EXPECT_EQ(pv.spec.csi->node_stage_secret_ref->name, "s");
  EXPECT_FALSE(pv.spec.csi->node_publish_secret_ref);
  ASSERT_TRUE(pv.spec.node_affinity && pv.spec.node_affinity->required);
  const auto& term = pv.spec.node_affinity->required->node_selector_terms.at(0);
  EXPECT_EQ(term.match_expressions.at(0).key, "topology.example.com/node");
  EXPECT_EQ(term.match_expressions.at(0).operator_, "In");
  EXPECT_EQ(term.match_expressions.at(0).values, std::vector<std::string>{"n1"});
}

}  // namespace
}  // namespace kvol::controller::provisioner
