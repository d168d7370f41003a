// The queue between informers and a controller's workers, with client-go's guarantees:
// - a key added many times before a worker takes it is processed once;
// - a key is never handed to two workers at once: added again while being processed, it is
//   queued again when the worker calls Done;
// - a key that failed is retried after a per-key exponential backoff (AddRateLimited), reset by
//   Forget once it succeeds;
// - AddAfter queues a key later (requeue after a deadline).
// Delays run on an os::Clock, so tests drive them with a fake clock.
//
//   while (auto key = queue.Get()) {
//     Status s = Sync(*key);
//     if (s.ok()) queue.Forget(*key); else queue.AddRateLimited(*key);
//     queue.Done(*key);
//   }
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/string_map.h"
#include "client/workqueue_metrics.h"
#include "os/clock.h"

namespace kvol::client {

struct WorkQueueOptions {
  // Backoff after the n-th consecutive failure: base_delay * 2^(n-1), at most max_delay.
  std::chrono::nanoseconds base_delay = std::chrono::milliseconds(5);
  std::chrono::nanoseconds max_delay = std::chrono::seconds(1000);
  // When set, the queue's workqueue_* metrics are recorded under this name (workqueue_metrics.h).
  std::string name;
};

class WorkQueue {
 public:
  explicit WorkQueue(os::Clock& clock = os::RealClock(), WorkQueueOptions opts = {});
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Add(const std::string& key);
  void AddAfter(const std::string& key, std::chrono::nanoseconds delay);
  // AddAfter with the key's next backoff delay, counting one more failure.
  void AddRateLimited(const std::string& key);
  // Clears the key's failure count (its next failure waits base_delay again).
  void Forget(const std::string& key);
  int Failures(const std::string& key) const;

  // The next key, waiting for one; nullopt once the queue is shut down.
  std::optional<std::string> Get();
  // As Get, giving up (nullopt) after `timeout`.
  std::optional<std::string> Get(std::chrono::milliseconds timeout);
  // Up to `max` keys at once, waiting for the first; empty once the queue is shut down. Each
  // key is handed out as Get hands it out, and needs its Done.
  std::vector<std::string> GetBatch(size_t max);
  // The worker has finished with `key`.
  void Done(const std::string& key);
  void Done(const std::vector<std::string>& keys);

  // Wakes every Get with nullopt; later Adds are ignored.
  void ShutDown();
  bool shutting_down() const;

  size_t Len() const;  // keys ready to be handed out

 private:
  // Waits until a key is queued (true), or the queue shuts down or `deadline` passes (false).
  bool WaitLocked(std::unique_lock<std::mutex>& lock, std::optional<os::MonoTime> deadline);
  // Hands out the first queued key.
  std::string TakeLocked();
  // `key` is done; true if a waiting worker should be woken for it.
  bool DoneLocked(const std::string& key);
  // Queues `key` unless it waits already; true if a waiting worker should be woken.
  bool AddLocked(const std::string& key);
  // True when a waiting worker should be woken for what is queued: none is on its way yet
  // (one woken takes what it finds, and wakes the next if it leaves some).
  bool WakeLocked();
  void PromoteDueLocked();

  os::Clock& clock_;
  const WorkQueueOptions opts_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Every key queued or handed out, with its state; a key has an entry while either holds.
  struct KeyState {
    bool dirty = false;       // queued, or to be queued when Done
    bool processing = false;  // handed out, not Done yet
    os::MonoTime queued_at{};   // when it went dirty (kept only with metrics)
    os::MonoTime started_at{};  // when it was handed out (kept only with metrics)
  };
  std::unique_ptr<WorkQueueMetrics> metrics_;  // null without a name
  FlatStringMap<KeyState> keys_;
  std::deque<std::string> queue_;  // dirty and not processing, in order
  std::multimap<os::MonoTime, std::string> delayed_;
  std::unordered_map<std::string, os::MonoTime> delayed_at_;  // earliest time per delayed key
  std::unordered_map<std::string, int> failures_;
  std::atomic<size_t> failing_{0};  // failures_.size(), read without the lock by Forget
  int waiting_ = 0;                 // workers blocked in Get
  int waking_ = 0;                  // of those, woken and not yet running
  bool shutting_down_ = false;
};

}  // namespace kvol::client
