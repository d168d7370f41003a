// The work queue's metrics.
#include "client/workqueue_metrics.h"

namespace kvol::client {
namespace {

struct Families {
  prometheus::Family<prometheus::Gauge>& depth = prometheus::BuildGauge()
                                                     .Name("workqueue_depth")
                                                     .Help("Current depth of workqueue")
                                                     .Register(metrics::Registry());
  prometheus::Family<prometheus::Counter>& adds =
      prometheus::BuildCounter()
          .Name("workqueue_adds_total")
          .Help("Total number of adds handled by workqueue")
          .Register(metrics::Registry());
  prometheus::Family<prometheus::Counter>& retries =
      prometheus::BuildCounter()
          .Name("workqueue_retries_total")
          .Help("Total number of retries handled by workqueue")
          .Register(metrics::Registry());
  prometheus::Family<prometheus::Histogram>& queue_duration =
      prometheus::BuildHistogram()
          .Name("workqueue_queue_duration_seconds")
          .Help("How long in seconds an item stays in workqueue before being requested.")
          .Register(metrics::Registry());
  prometheus::Family<prometheus::Histogram>& work_duration =
      prometheus::BuildHistogram()
          .Name("workqueue_work_duration_seconds")
          .Help("How long in seconds processing an item from workqueue takes.")
          .Register(metrics::Registry());
};

Families& TheFamilies() {
  static Families f;
  return f;
}

// client-go's buckets: 10ns to 10s, by tens.
const prometheus::Histogram::BucketBoundaries& Buckets() {
  static const prometheus::Histogram::BucketBoundaries b = {1e-8, 1e-7, 1e-6, 1e-5, 1e-4,
                                                            1e-3, 1e-2, 1e-1, 1,    10};
  return b;
}

}  // namespace

WorkQueueMetrics::WorkQueueMetrics(const std::string& name)
    : depth_(TheFamilies().depth.Add({{"name", name}})),
      adds_(TheFamilies().adds.Add({{"name", name}})),
      retries_(TheFamilies().retries.Add({{"name", name}})),
      queue_duration_(TheFamilies().queue_duration.Add({{"name", name}}, Buckets())),
      work_duration_(TheFamilies().work_duration.Add({{"name", name}}, Buckets())) {}

void WorkQueueMetrics::Added() {
  adds_.Increment();
  depth_.Increment();
}

void WorkQueueMetrics::Retried() { retries_.Increment(); }

void WorkQueueMetrics::Taken(std::chrono::duration<double> queued) {
  depth_.Decrement();
  queue_duration_.Observe(queued.count());
}

void WorkQueueMetrics::Finished(std::chrono::duration<double> worked) {
  work_duration_.Observe(worked.count());
}

}  // namespace kvol::client
