// kvol's metrics, served as Kubernetes serves its own: the Prometheus text format (0.0.4),
// with Kubernetes' metric names, labels and types, so that existing dashboards and alerts work.
//
// Metrics with labels that grow as requests and operations come (counters, gauges, histograms)
// are families in the process's registry, Registry(), as Kubernetes' components keep theirs in
// one legacy registry. Metrics read when scraped (how many objects are stored, the process's own)
// are collectors, added with AddCollector for as long as their owner lives. Expose() writes them
// all. prometheus-cpp's core library keeps the families and writes the text.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace kvol::metrics {

inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

// The process's registry of metric families.
prometheus::Registry& Registry();

// A collector that asks `source` at each scrape until Detach. Its owner detaches it before what
// `source` reads goes (a controller's Stop): a scrape that still holds the collector then gets
// nothing, and Detach waits for one under way.
class Collector final : public prometheus::Collectable {
 public:
  using Source = std::function<std::vector<prometheus::MetricFamily>()>;
  explicit Collector(Source source) : source_(std::move(source)) {}
  std::vector<prometheus::MetricFamily> Collect() const override;
  void Detach();

 private:
  mutable std::mutex mu_;
  Source source_;  // guarded by mu_
};

using Labels = std::vector<prometheus::ClientMetric::Label>;

// A gauge family, for a collector: one series per entry of `values`.
prometheus::MetricFamily GaugeFamily(std::string name, std::string help,
                                     const std::map<Labels, double>& values);

// Adds a collector, asked at each Expose while `collector` lives.
void AddCollector(const std::shared_ptr<prometheus::Collectable>& collector);

// The process's metrics in the text format: the registry's families, each live collector's,
// and the process's own (process_cpu_seconds_total, process_resident_memory_bytes, ...).
std::string Expose();

// The text format of what `collectables` hold (no process metrics): for tests.
std::string ExposeOnly(const std::vector<const prometheus::Collectable*>& collectables);

}  // namespace kvol::metrics
