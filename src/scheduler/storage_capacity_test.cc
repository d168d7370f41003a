// The storage capacity check's table: a driver, the CSIStorageCapacity objects of class "fast",
// a claim's request and a node's labels -> whether the node has room.
#include "scheduler/storage_capacity.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace kvol::scheduler {
namespace {

struct Capacity {
  std::string class_name = "fast";
  std::optional<std::map<std::string, std::string>> topology = {{}};  // none: nodeTopology nil
  std::string capacity = "";                                        // none when empty
  std::string maximum = "";
};

struct Row {
  std::string name;
  bool tracked = true;  // the CSIDriver says storageCapacity: true
  std::vector<Capacity> capacities;
  std::string request = "10Gi";  // none when empty
  std::map<std::string, std::string> node_labels = {{"zone", "a"}};
  bool want;
};

TEST(StorageCapacities, Table) {
  const Row rows[] = {
      {.name = "enough", .capacities = {{.capacity = "20Gi"}}, .want = true},
      {.name = "exactly enough", .capacities = {{.capacity = "10Gi"}}, .want = true},
      {.name = "too little", .capacities = {{.capacity = "9Gi"}}, .want = false},
      {.name = "none reported", .capacities = {}, .want = false},
      {.name = "the maximum volume size is preferred",
       .capacities = {{.capacity = "100Gi", .maximum = "5Gi"}},
       .want = false},
      {.name = "a maximum that holds it", .capacities = {{.capacity = "1Gi", .maximum = "10Gi"}},
       .want = true},
      {.name = "no capacity given", .capacities = {{}}, .want = false},
      {.name = "another class's room", .capacities = {{.class_name = "slow", .capacity = "1Ti"}},
       .want = false},
      {.name = "the node's segment",
       .capacities = {{.topology = std::map<std::string, std::string>{{"zone", "a"}},
                       .capacity = "20Gi"}},
       .want = true},
      {.name = "another segment",
       .capacities = {{.topology = std::map<std::string, std::string>{{"zone", "b"}},
                       .capacity = "20Gi"}},
       .want = false},
      {.name = "no nodeTopology: no node has access",
       .capacities = {{.topology = std::nullopt, .capacity = "20Gi"}},
       .want = false},
      {.name = "one of several is enough",
       .capacities = {{.topology = std::map<std::string, std::string>{{"zone", "b"}},
                       .capacity = "20Gi"},
                      {.capacity = "1Gi"},
                      {.capacity = "11Gi"}},
       .want = true},
      {.name = "a driver that does not track capacity", .tracked = false, .capacities = {},
       .want = true},
      {.name = "no storage requested", .capacities = {}, .request = "", .want = true},
      {.name = "zero requested", .capacities = {}, .request = "0", .want = true},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    StorageCapacities caps;
    api::CSIDriver driver;
    driver.metadata.name = "d";
    driver.spec.storage_capacity = row.tracked;
    caps.UpsertDriver(driver);
    int i = 0;
    for (const auto& c : row.capacities) {
      api::CSIStorageCapacity obj;
      obj.metadata.namespace_ = "kube-system";
      obj.metadata.name = "csisc-" + std::to_string(i++);
      obj.storage_class_name = c.class_name;
      if (c.topology) obj.node_topology.emplace().match_labels = *c.topology;
      if (!c.capacity.empty()) obj.capacity = api::Quantity::MustParse(c.capacity);
      if (!c.maximum.empty()) obj.maximum_volume_size = api::Quantity::MustParse(c.maximum);
      caps.Upsert(obj);
    }
    api::StorageClass cls;
    cls.metadata.name = "fast";
    cls.provisioner = "d";
    api::PersistentVolumeClaim claim;
    if (!row.request.empty()) {
      claim.spec.resources.requests["storage"] = api::Quantity::MustParse(row.request);
    }
    api::Node node;
    node.metadata.name = "n1";
    node.metadata.labels = row.node_labels;
    EXPECT_EQ(caps.HasEnoughCapacity(claim, cls, node), row.want);
  }
}

TEST(StorageCapacities, RemovedObjectsAndDriversCountNoMore) {
  StorageCapacities caps;
  api::CSIDriver driver;
  driver.metadata.name = "d";
  driver.spec.storage_capacity = true;
  caps.UpsertDriver(driver);
  api::CSIStorageCapacity obj;
  obj.metadata.namespace_ = "kube-system";
  obj.metadata.name = "csisc-1";
  obj.storage_class_name = "fast";
  obj.node_topology.emplace();
  obj.capacity = api::Quantity::MustParse("20Gi");
  caps.Upsert(obj);
  api::StorageClass cls;
  cls.metadata.name = "fast";
  cls.provisioner = "d";
  api::PersistentVolumeClaim claim;
  claim.spec.resources.requests["storage"] = api::Quantity::MustParse("10Gi");
  api::Node node;
  EXPECT_TRUE(caps.HasEnoughCapacity(claim, cls, node));
  obj.capacity = api::Quantity::MustParse("1Gi");
  caps.Upsert(obj);
  EXPECT_FALSE(caps.HasEnoughCapacity(claim, cls, node)) << "updated in place";
  caps.Remove("kube-system/csisc-1");
  EXPECT_FALSE(caps.HasEnoughCapacity(claim, cls, node));
  caps.RemoveDriver("d");
  EXPECT_TRUE(caps.HasEnoughCapacity(claim, cls, node)) << "no longer tracked";
}

}  // namespace
}  // namespace kvol::scheduler
