// Timing the node's volume operations.
#include "node/volumemanager/operation_metrics.h"

#include <chrono>

#include "metrics/metrics.h"

namespace kvol::node::volumemanager {
namespace {

prometheus::Family<prometheus::Histogram>& Durations() {
  static auto& f = prometheus::BuildHistogram()
                       .Name("storage_operation_duration_seconds")
                       .Help("Storage operation duration")
                       .Register(metrics::Registry());
  return f;
}

// kubelet's buckets.
const prometheus::Histogram::BucketBoundaries& Buckets() {
  static const prometheus::Histogram::BucketBoundaries b = {0.1, 0.25, 0.5, 1,   2.5, 5,  10,
                                                            15,  25,   50,  120, 300, 600};
  return b;
}

}  // namespace

std::function<Status()> Timed(std::string plugin, std::string_view operation,
                              std::function<Status()> op) {
  return [plugin = std::move(plugin), operation = std::string(operation),
          op = std::move(op)]() -> Status {
    const auto start = std::chrono::steady_clock::now();
    Status s = op();
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    Durations()
        .Add({{"volume_plugin", plugin},
              {"operation_name", operation},
              {"status", s.ok() ? "success" : "fail-unknown"},
              {"migrated", "false"}},
             Buckets())
        .Observe(took.count());
    return s;
  };
}

}  // namespace kvol::node::volumemanager
