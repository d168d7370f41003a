// Volume operations' metrics.
#include "metrics/storage_operations.h"

#include "metrics/metrics.h"

namespace kvol::metrics {
namespace {

prometheus::Family<prometheus::Histogram>& Durations() {
  static auto& f = prometheus::BuildHistogram()
                       .Name("storage_operation_duration_seconds")
                       .Help("Storage operation duration")
                       .Register(Registry());
  return f;
}

prometheus::Family<prometheus::Counter>& Errors() {
  static auto& f = prometheus::BuildCounter()
                       .Name("volume_operation_total_errors")
                       .Help("Total volume operation errors")
                       .Register(Registry());
  return f;
}

// Kubernetes' buckets.
const prometheus::Histogram::BucketBoundaries& Buckets() {
  static const prometheus::Histogram::BucketBoundaries b = {0.1, 0.25, 0.5, 1,   2.5, 5,  10,
                                                            15,  25,   50,  120, 300, 600};
  return b;
}

}  // namespace

std::string CsiPluginName(std::string_view driver) {
  return "kubernetes.io/csi:" + std::string(driver);
}

void RecordStorageOperation(std::string_view plugin, std::string_view operation, bool ok,
                            std::chrono::duration<double> took) {
  std::string p(plugin), op(operation);
  Durations()
      .Add({{"volume_plugin", p},
            {"operation_name", op},
            {"status", ok ? "success" : "fail-unknown"},
            {"migrated", "false"}},
           Buckets())
      .Observe(took.count());
  if (!ok)
    Errors().Add({{"plugin_name", std::move(p)}, {"operation_name", std::move(op)}}).Increment();
}

}  // namespace kvol::metrics
