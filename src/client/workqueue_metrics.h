// A work queue's metrics, with client-go's names, labelled `name`:
//   workqueue_depth                  gauge: keys waiting to be handed out
//   workqueue_adds_total             counter: adds that queued a key (not those that found it
//                                    queued already)
//   workqueue_retries_total          counter: AddRateLimited calls
//   workqueue_queue_duration_seconds histogram: from a key's add to a worker taking it
//   workqueue_work_duration_seconds  histogram: from a worker taking a key to its Done
// Queues that share a name share the series.
#pragma once

#include <chrono>
#include <string>

#include "metrics/metrics.h"

namespace kvol::client {

class WorkQueueMetrics {
 public:
  explicit WorkQueueMetrics(const std::string& name);

  void Added();
  void Retried();
  void Taken(std::chrono::duration<double> queued);
  void Finished(std::chrono::duration<double> worked);

 private:
  prometheus::Gauge& depth_;
  prometheus::Counter& adds_;
  prometheus::Counter& retries_;
  prometheus::Histogram& queue_duration_;
  prometheus::Histogram& work_duration_;
};

}  // namespace kvol::client
