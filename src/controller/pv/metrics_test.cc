// The PV controller's collector, counted from volumes and claims.
#include "controller/pv/metrics.h"

#include <gtest/gtest.h>

#include "metrics/testing/text_format.h"

namespace kvol::controller::pv {
namespace {

std::shared_ptr<const api::PersistentVolume> Volume(std::string cls, std::string phase,
                                                    bool block = false) {
  auto v = std::make_shared<api::PersistentVolume>();
  v->spec.storage_class_name = std::move(cls);
  v->spec.local = api::LocalVolumeSource{.path = "/data"};
  if (block) v->spec.volume_mode = "Block";
  v->status.phase = std::move(phase);
  return v;
}

std::shared_ptr<const api::PersistentVolumeClaim> Claim(std::string ns, std::string cls,
                                                        std::string phase) {
  auto c = std::make_shared<api::PersistentVolumeClaim>();
  c->metadata.namespace_ = std::move(ns);
  c->spec.storage_class_name = std::move(cls);
  c->status.phase = std::move(phase);
  return c;
}

TEST(PvMetrics, CountsBoundAndUnboundByClassAndNamespace) {
  const VolumeList volumes = {Volume("fast", "Bound"), Volume("fast", "Bound"),
                              Volume("fast", "Available"), Volume("slow", "Released", true)};
  const ClaimList claims = {Claim("a", "fast", "Bound"), Claim("a", "fast", "Pending"),
                            Claim("b", "fast", "Bound"), Claim("b", "fast", "Bound")};
  metrics::Collector collector([&] { return CollectPvMetrics(volumes, claims); });
  auto text = metrics::testing::ParseText(metrics::ExposeOnly({&collector}));
  ASSERT_TRUE(text.ok()) << text.status().message();
  struct Want {
    std::string name;
    std::map<std::string, std::string> labels;
    double value;
  };
  const Want wants[] = {
      {"pv_collector_bound_pv_count", {{"storage_class", "fast"}}, 2},
      {"pv_collector_unbound_pv_count", {{"storage_class", "fast"}}, 1},
      {"pv_collector_unbound_pv_count", {{"storage_class", "slow"}}, 1},
      {"pv_collector_bound_pvc_count", {{"namespace", "a"}, {"storage_class", "fast"}}, 1},
      {"pv_collector_bound_pvc_count", {{"namespace", "b"}}, 2},
      {"pv_collector_unbound_pvc_count", {{"namespace", "a"}}, 1},
      {"pv_collector_total_pv_count",
       {{"plugin_name", "kubernetes.io/local-volume"}, {"volume_mode", "Filesystem"}},
       3},
      {"pv_collector_total_pv_count", {{"volume_mode", "Block"}}, 1},
  };
  for (const auto& w : wants) {
    auto got = text->Value(w.name, w.labels);
    ASSERT_TRUE(got.ok()) << w.name << ": " << got.status().message();
    EXPECT_EQ(*got, w.value) << w.name;
  }
  EXPECT_EQ(text->Value("pv_collector_bound_pv_count", {{"storage_class", "slow"}}).status().code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace kvol::controller::pv
