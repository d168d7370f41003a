#include "client/worker.h"

#include "base/log.h"
#include "base/thread.h"

namespace kvol::client {

Status ApiStatus(const api::ApiError& e) {
  StatusCode code = StatusCode::kUnknown;
  if (e.code == 404) code = StatusCode::kNotFound;
  if (e.code == 409) code = api::IsConflict(e) ? StatusCode::kAborted : StatusCode::kAlreadyExists;
  if (e.code >= 500) code = StatusCode::kUnavailable;
  return Status(code, e.message);
}

namespace {

// Success forgets the key's failures; an error queues it again after its backoff.
void Settle(client::WorkQueue& queue, const std::string& key, const Status& s,
            std::string_view who) {
  if (s.ok()) {
    queue.Forget(key);
    return;
  }
  if (s.code() != StatusCode::kAborted) {
    log::Warn(std::string(who) + ": " + key + ": " + s.message());
  }
  queue.AddRateLimited(key);
}

}  // namespace

void RunWorker(client::WorkQueue& queue, const std::function<Status(const std::string&)>& sync,
               std::string_view who) {
  while (auto key = queue.Get()) {
    Settle(queue, *key, sync(*key), who);
    queue.Done(*key);
  }
}

void RunBatchWorker(
    client::WorkQueue& queue, size_t max,
    const std::function<std::vector<Status>(const std::vector<std::string>&)>& sync,
    std::string_view who) {
  while (true) {
    std::vector<std::string> keys = queue.GetBatch(max);
    if (keys.empty()) return;
    std::vector<Status> results = sync(keys);
    for (size_t i = 0; i < keys.size(); ++i) {
      Settle(queue, keys[i],
             i < results.size() ? results[i] : InternalError("the sync gave no answer"), who);
    }
    queue.Done(keys);
  }
}

void Workers::Start(WorkQueue& queue, int n, std::string thread_name,
                    std::function<Status(const std::string&)> sync, std::string who) {
  queue_ = &queue;
  for (int i = 0; i < n; ++i) {
    threads_.emplace_back([&queue, thread_name, sync, who] {
      SetThreadName(thread_name);
      RunWorker(queue, sync, who);
    });
  }
}

void Workers::Stop() {
  if (queue_) queue_->ShutDown();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

}  // namespace kvol::client
