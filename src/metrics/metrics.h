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

#include <memory>
#include <string>
#include <string_view>

namespace kvol::metrics {

inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

// The process's registry of metric families.
prometheus::Registry& Registry();

// Adds a collector, asked at each Expose while `collector` lives.
void AddCollector(const std::shared_ptr<prometheus::Collectable>& collector);

// The process's metrics in the text format: the registry's families, each live collector's,
// and the process's own (process_cpu_seconds_total, process_resident_memory_bytes, ...).
std::string Expose();

// The text format of what `collectables` hold (no process metrics): for tests.
std::string ExposeOnly(const std::vector<const prometheus::Collectable*>& collectables);

}  // namespace kvol::metrics
