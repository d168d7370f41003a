// The loop every controller worker runs.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "api/api_error.h"
#include "base/status.h"
#include "client/workqueue.h"

namespace kvol::client {

// An API error as the Status a sync returns: a conflict is Aborted (retried quietly), 404
// NotFound, 409 AlreadyExists, 5xx Unavailable, anything else Unknown.
Status ApiStatus(const api::ApiError& e);

// Hands `queue`'s keys to `sync` until the queue shuts down. Success forgets the key's past
// failures; an error puts the key back with per-key backoff, logged as "`who`: key: message"
// unless it is a conflict (Aborted), which the next attempt resolves.
void RunWorker(client::WorkQueue& queue, const std::function<Status(const std::string&)>& sync,
               std::string_view who);

// RunWorker for a sync that takes up to `max` keys at once (whatever the queue holds) and
// answers each in order.
void RunBatchWorker(
    client::WorkQueue& queue, size_t max,
    const std::function<std::vector<Status>(const std::vector<std::string>&)>& sync,
    std::string_view who);

// A controller's worker threads, each running RunWorker on one queue.
//
//   workers_.Start(*queue_, options_.workers, "namespace", [this](auto& key) { return Sync(key); },
//                  "namespace-controller");
//   ...
//   workers_.Stop();  // shuts the queue down and joins the threads
class Workers {
 public:
  Workers() = default;
  ~Workers() { Stop(); }
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  // Starts `n` threads named `thread_name` running RunWorker(queue, sync, who). `queue` must
  // outlive Stop.
  void Start(WorkQueue& queue, int n, std::string thread_name,
             std::function<Status(const std::string&)> sync, std::string who);
  // Shuts the queue down and waits for the threads; nothing if not started. Idempotent.
  void Stop();

 private:
  WorkQueue* queue_ = nullptr;
  std::vector<std::thread> threads_;
};

}  // namespace kvol::client
