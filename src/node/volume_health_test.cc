// The volume health monitor against a plugin that reports what the test says.
#include "node/volume_health.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "metrics/testing/text_format.h"
#include "node/volume_stats_metrics.h"
#include "os/testing/fake_clock.h"

namespace kvol::node {
namespace {

class ReportingPlugin final : public volume::VolumePlugin, public volume::StatsVolumePlugin {
 public:
  StatusOr<volume::VolumeStats> answer = volume::VolumeStats{};
  std::vector<std::string> asked;
  std::atomic<int> calls{0};

  std::string_view Name() const override { return "example.com/reporting"; }
  bool CanSupport(const volume::Spec&) const override { return false; }
  StatusOr<std::unique_ptr<volume::Mounter>> NewMounter(const volume::Spec&,
                                                        const api::Pod&) override {
    return UnimplementedError("no mounter");
  }
  StatusOr<std::unique_ptr<volume::Unmounter>> NewUnmounter(std::string_view,
                                                            std::string_view) override {
    return UnimplementedError("no unmounter");
  }
  volume::StatsVolumePlugin* AsStats() override { return this; }
  StatusOr<volume::VolumeStats> GetVolumeStats(std::string_view name, std::string_view uid,
                                               bool block) override {
    asked.push_back(std::string(uid) + "/" + std::string(name) + (block ? " block" : ""));
    ++calls;
    return answer;
  }
};

struct Event {
  std::string object, type, reason, message;
  bool operator==(const Event&) const = default;
};

class VolumeHealthTest : public ::testing::Test {
 protected:
  VolumeHealthTest() {
    auto p = std::make_unique<ReportingPlugin>();
    plugin_ = p.get();
    EXPECT_TRUE(plugins_.Register(std::move(p)).ok());
    auto pod = std::make_shared<api::Pod>();
    pod->metadata.name = "db";
    pod->metadata.namespace_ = "default";
    pod->metadata.uid = "uid-1";
    volumes_ = {{pod, "data", "example.com/reporting", "pv-1", false},
                {pod, "cache", "kubernetes.io/empty-dir", "cache", false}};
  }
  VolumeHealthMonitor Monitor() {
    return VolumeHealthMonitor(
        plugins_, [this] { return volumes_; },
        [this](const api::ObjectReference& ref, std::string_view type, std::string_view reason,
               std::string message) {
          events_.push_back({ref.name, std::string(type), std::string(reason), message});
        },
        clock_, std::chrono::seconds(60));
  }

  volume::PluginManager plugins_;
  ReportingPlugin* plugin_;
  std::vector<volumemanager::MountedPodVolume> volumes_;
  std::vector<Event> events_;
  os::testing::FakeClock clock_;
};

TEST_F(VolumeHealthTest, AnEventWhenAVolumeTurnsAbnormal) {
  VolumeHealthMonitor m = Monitor();
  const volume::VolumeStats healthy{.capacity_bytes = 100, .used_bytes = 10, .abnormal = false};
  volume::VolumeStats sick = healthy;
  sick.abnormal = true;
  sick.message = "the volume's file is missing";
  struct Step {
    StatusOr<volume::VolumeStats> answer;
    size_t events;  // events so far
  };
  const Step steps[] = {
      {healthy, 0},
      {sick, 1},
      {sick, 1},  // still abnormal, same words: no new event
      {healthy, 1},
      {sick, 2},  // abnormal again
      {UnavailableError("driver restarting"), 2},
      {sick, 3},  // nothing known in between
  };
  for (const auto& step : steps) {
    plugin_->answer = step.answer;
    m.CollectOnce();
    EXPECT_EQ(events_.size(), step.events);
  }
  const Event want{"db", "Warning", "VolumeConditionAbnormal",
                   "Volume data: the volume's file is missing"};
  EXPECT_EQ(events_.back(), want);
  EXPECT_EQ(plugin_->asked.back(), "uid-1/pv-1") << "only plugins that report stats are asked";
  auto latest = m.Latest();
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest.at("uid-1/data").capacity_bytes, 100);
}

// A volume whose plugin reports nothing is measured at its path; a claim's figures become
// kubelet's metrics, labelled with its namespace and name.
TEST_F(VolumeHealthTest, MeasuresTheRestAtTheirPathsAndReportsClaims) {
  auto pod = std::make_shared<api::Pod>(*volumes_[0].pod);
  api::Volume data;
  data.name = "data";
  data.persistent_volume_claim = api::PersistentVolumeClaimVolumeSource{.claim_name = "claim-a"};
  api::Volume local;
  local.name = "local";
  local.persistent_volume_claim = api::PersistentVolumeClaimVolumeSource{.claim_name = "claim-b"};
  pod->spec.volumes = {data, local};
  volumes_ = {{pod, "data", "example.com/reporting", "pv-1", false, "/pods/uid-1/pv-1"},
              {pod, "cache", "kubernetes.io/empty-dir", "cache", false, "/pods/uid-1/cache"},
              {pod, "local", "kubernetes.io/local-volume", "pv-2", false, "/pods/uid-1/pv-2"},
              {pod, "raw", "kubernetes.io/local-volume", "pv-3", true, "/pods/uid-1/pv-3"}};
  std::vector<std::string> measured;
  VolumeHealthMonitor m(
      plugins_, [this] { return volumes_; }, {}, clock_, std::chrono::seconds(60),
      [&](const std::string& path) -> StatusOr<volume::VolumeStats> {
        measured.push_back(path);
        return volume::VolumeStats{.capacity_bytes = 1000,
                                   .available_bytes = 700,
                                   .used_bytes = 20,
                                   .inodes = 50,
                                   .inodes_free = 40,
                                   .inodes_used = 3};
      });
  plugin_->answer = volume::VolumeStats{.capacity_bytes = 100, .used_bytes = 10, .abnormal = false};
  m.CollectOnce();
  EXPECT_EQ(measured, (std::vector<std::string>{"/pods/uid-1/cache", "/pods/uid-1/pv-2"}))
      << "the plugin's volume through the plugin; a block volume not at all";
  EXPECT_EQ(m.Latest().size(), 3u);
  auto claims = m.LatestByClaim();
  ASSERT_EQ(claims.size(), 2u) << "the emptyDir is no claim";
  EXPECT_EQ(claims.at({"default", "claim-b"}).used_bytes, 20);

  metrics::Collector collector([&] { return VolumeStatsFamilies(m.LatestByClaim()); });
  auto text = metrics::testing::ParseText(metrics::ExposeOnly({&collector}));
  ASSERT_TRUE(text.ok()) << text.status().message();
  const std::map<std::string, std::string> a = {{"namespace", "default"},
                                                {"persistentvolumeclaim", "claim-a"}};
  const std::map<std::string, std::string> b = {{"namespace", "default"},
                                                {"persistentvolumeclaim", "claim-b"}};
  EXPECT_EQ(*text->Value("kubelet_volume_stats_used_bytes", a), 10);
  EXPECT_EQ(*text->Value("kubelet_volume_stats_capacity_bytes", a), 100);
  EXPECT_EQ(*text->Value("kubelet_volume_stats_health_status_abnormal", a), 0);
  EXPECT_EQ(text->Value("kubelet_volume_stats_inodes", a).status().code(), StatusCode::kNotFound)
      << "a figure the driver does not report is left out";
  EXPECT_EQ(*text->Value("kubelet_volume_stats_available_bytes", b), 700);
  EXPECT_EQ(*text->Value("kubelet_volume_stats_inodes_used", b), 3);
  EXPECT_EQ(text->families.at("kubelet_volume_stats_used_bytes").type, "gauge");
}

TEST(VolumeManagerMetrics, TotalVolumesByPluginAndState) {
  metrics::Collector m([] {
    return VolumeManagerFamilies({{{"kubernetes.io/empty-dir", "desired_state_of_world"}, 3},
                                  {{"kubernetes.io/empty-dir", "actual_state_of_world"}, 2}});
  });
  auto text = metrics::testing::ParseText(metrics::ExposeOnly({&m}));
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(
      *text->Value("volume_manager_total_volumes", {{"plugin_name", "kubernetes.io/empty-dir"},
                                                    {"state", "desired_state_of_world"}}),
      3);
  EXPECT_EQ(*text->Value("volume_manager_total_volumes", {{"state", "actual_state_of_world"}}), 2);
}

TEST_F(VolumeHealthTest, GathersEachPeriodUntilStopped) {
  VolumeHealthMonitor m = Monitor();
  m.Start();
  for (int i = 0; i < 2000 && plugin_->calls == 0; ++i) {
    clock_.Advance(std::chrono::seconds(61));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  m.Stop();
  EXPECT_GT(plugin_->calls, 0);
}

}  // namespace
}  // namespace kvol::node
