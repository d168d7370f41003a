// attachdetach_controller_total_volumes: each state counted per plugin, once per node.
#include "controller/attachdetach/metrics.h"

#include <gtest/gtest.h>

#include "controller/attachdetach/attacher.h"
#include "metrics/testing/text_format.h"

namespace kvol::controller::attachdetach {
namespace {

class Named final : public Attacher {
 public:
  explicit Named(std::string name) : name_(std::move(name)) {}
  std::string_view PluginName() const override { return name_; }
  bool NeedsAttach(const volume::Spec&) override { return true; }
  StatusOr<std::string> Attach(const volume::Spec&, const std::string&) override {
    return std::string();
  }
  Status Detach(const std::string&, const std::string&) override { return OkStatus(); }

 private:
  std::string name_;
};

TEST(TotalVolumes, CountsEachStatePerPluginOncePerNode) {
  Named csi("kubernetes.io/csi"), flex("flexvolume-example/lvm");
  DesiredState desired;
  desired["n1"].volumes["kubernetes.io/csi/a"].attacher = &csi;
  desired["n1"].volumes["kubernetes.io/csi/b"].attacher = &csi;
  desired["n2"].volumes["kubernetes.io/csi/a"].attacher = &csi;  // shared: once per node
  desired["n2"].volumes["flexvolume-example/lvm/c"].attacher = &flex;
  std::map<std::string, ActualVolume> actual;
  actual["kubernetes.io/csi/a"] = {.plugin = "kubernetes.io/csi", .volume_name = "a",
                                   .nodes = {{"n1", {}}, {"n2", {}}}};
  actual["kubernetes.io/csi/d"] = {.plugin = "kubernetes.io/csi", .volume_name = "d",
                                   .nodes = {{"n1", {}}}};

  const auto family = TotalVolumes(CountDesired(desired), CountActual(actual));
  metrics::Collector collector([&] { return std::vector{family}; });
  auto text = metrics::testing::ParseText(metrics::ExposeOnly({&collector}));
  ASSERT_TRUE(text.ok()) << text.status().message();
  struct Want {
    const char* plugin;
    const char* state;
    double value;
  } wants[] = {
      {.plugin = "kubernetes.io/csi", .state = "desired_state_of_world", .value = 3},
      {.plugin = "flexvolume-example/lvm", .state = "desired_state_of_world", .value = 1},
      {.plugin = "kubernetes.io/csi", .state = "actual_state_of_world", .value = 3},
  };
  for (const auto& w : wants) {
    auto got = text->Value("attachdetach_controller_total_volumes",
                           {{"plugin_name", w.plugin}, {"state", w.state}});
    ASSERT_TRUE(got.ok()) << w.plugin << " " << w.state << ": " << got.status().message();
    EXPECT_EQ(*got, w.value) << w.plugin << " " << w.state;
  }
  EXPECT_EQ(text->families.at("attachdetach_controller_total_volumes").type, "gauge");
}

}  // namespace
}  // namespace kvol::controller::attachdetach
