// The CSIStorageCapacity publisher's tables: classes, the drivers registered here and the
// drivers that track capacity -> the segments kept; a class and segment -> the GetCapacity
// request; a driver's answer -> the object.
#include "controller/provisioner/capacity.h"

#include <gtest/gtest.h>

namespace kvol::controller::provisioner {
namespace {

namespace pb = ::csi::v1;

std::shared_ptr<const api::StorageClass> Class(const std::string& name,
                                               const std::string& provisioner,
                                               std::map<std::string, std::string> params = {}) {
  auto c = std::make_shared<api::StorageClass>();
  c->metadata.name = name;
  c->provisioner = provisioner;
  for (auto& [k, v] : params) c->parameters[k] = v;
  return c;
}

std::string Summary(const std::vector<CapacitySegment>& segments) {
  std::string s;
  for (const auto& seg : segments) {
    s += (s.empty() ? "" : " ") + seg.class_name + ":" + seg.driver;
    for (const auto& [k, v] : seg.topology) s += "," + k + "=" + v;
  }
  return s;
}

struct Row {
  std::string name;
  std::vector<std::shared_ptr<const api::StorageClass>> classes;
  std::map<std::string, std::map<std::string, std::string>> here = {
      {"loop.csi.kvol.io", {{"topology.csi.kvol.io/node", "n1"}}}};
  std::set<std::string> tracked = {"loop.csi.kvol.io"};
  std::string want;
};

TEST(WantedSegments, Table) {
  const Row rows[] = {
      {.name = "a class of a tracked driver here",
       .classes = {Class("loop", "loop.csi.kvol.io")},
       .want = "loop:loop.csi.kvol.io,topology.csi.kvol.io/node=n1"},
      {.name = "one per class, by name",
       .classes = {Class("z", "loop.csi.kvol.io"), Class("a", "loop.csi.kvol.io")},
       .want = "a:loop.csi.kvol.io,topology.csi.kvol.io/node=n1 "
               "z:loop.csi.kvol.io,topology.csi.kvol.io/node=n1"},
      {.name = "a driver that does not track capacity",
       .classes = {Class("loop", "loop.csi.kvol.io")},
       .tracked = {},
       .want = ""},
      {.name = "a driver not registered here",
       .classes = {Class("ebs", "ebs.csi.aws.com")},
       .tracked = {"loop.csi.kvol.io", "ebs.csi.aws.com"},
       .want = ""},
      {.name = "an in-tree provisioner", .classes = {Class("local", "kvol.io/local-path")},
       .want = ""},
      {.name = "a driver without topology",
       .classes = {Class("flat", "flat.csi.example.com")},
       .here = {{"flat.csi.example.com", {}}},
       .tracked = {"flat.csi.example.com"},
       .want = "flat:flat.csi.example.com"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(Summary(WantedSegments(row.classes, row.here, row.tracked)), row.want);
  }
}

TEST(MakeGetCapacityRequest, TheClassParametersInTheSegment) {
  auto cls = Class("loop", "loop.csi.kvol.io",
                   {{"type", "fast"}, {"csi.storage.k8s.io/fstype", "xfs"},
                    {"csi.storage.k8s.io/provisioner-secret-name", "s"}});
  CapacitySegment seg{.class_name = "loop", .driver = "loop.csi.kvol.io",
                      .topology = {{"topology.csi.kvol.io/node", "n1"}}};
  pb::GetCapacityRequest req = MakeGetCapacityRequest(*cls, seg);
  EXPECT_EQ(req.parameters().size(), 1);
  EXPECT_EQ(req.parameters().at("type"), "fast");
  EXPECT_EQ(req.accessible_topology().segments().at("topology.csi.kvol.io/node"), "n1");
  seg.topology.clear();
  EXPECT_FALSE(MakeGetCapacityRequest(*cls, seg).has_accessible_topology());
}

TEST(MakeCapacityObject, TheAnswerInTheSegment) {
  CapacitySegment seg{.class_name = "loop", .driver = "loop.csi.kvol.io",
                      .topology = {{"topology.csi.kvol.io/node", "n1"}}};
  pb::GetCapacityResponse resp;
  resp.set_available_capacity(10LL << 30);
  resp.mutable_maximum_volume_size()->set_value(4LL << 30);
  api::CSIStorageCapacity o = MakeCapacityObject(seg, "n1", "kube-system", resp);
  EXPECT_EQ(o.metadata.namespace_, "kube-system");
  EXPECT_EQ(o.metadata.generate_name, "csisc-");
  EXPECT_EQ(o.metadata.labels.at("csi.storage.k8s.io/drivername"), "loop.csi.kvol.io");
  EXPECT_EQ(o.metadata.labels.at("csi.storage.k8s.io/managed-by"), "kvol-provisioner-n1");
  EXPECT_EQ(o.storage_class_name, "loop");
  EXPECT_EQ(o.node_topology->match_labels.at("topology.csi.kvol.io/node"), "n1");
  EXPECT_EQ(o.capacity->ToString(), "10Gi");
  EXPECT_EQ(o.maximum_volume_size->ToString(), "4Gi");
  EXPECT_TRUE(IsObjectOf(o, seg));
  CapacitySegment other = seg;
  other.topology["topology.csi.kvol.io/node"] = "n2";
  EXPECT_FALSE(IsObjectOf(o, other)) << "another segment";
  other = seg;
  other.class_name = "loop-xfs";
  EXPECT_FALSE(IsObjectOf(o, other)) << "another class";
  resp.clear_maximum_volume_size();
  EXPECT_FALSE(MakeCapacityObject(seg, "n1", "kube-system", resp).maximum_volume_size)
      << "a driver that does not say";
}

TEST(ManagedBy, ALabelValue) {
  EXPECT_EQ(ManagedBy("node-1"), "kvol-provisioner-node-1");
  const std::string long_name(80, 'a');
  EXPECT_EQ(ManagedBy(long_name).size(), 63u);
  EXPECT_EQ(ManagedBy(std::string(45, 'b') + "-c"), "kvol-provisioner-" + std::string(45, 'b'))
      << "no trailing dash";
}

}  // namespace
}  // namespace kvol::controller::provisioner
