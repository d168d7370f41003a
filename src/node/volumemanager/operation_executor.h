// Runs volume operations (SetUp, TearDown) on a pool of threads with at most one operation in
// flight per key (per pod volume) and exponential backoff per key after a failure, as kubelet's
// nestedpendingoperations does: 500ms doubling to 2m2s, reset by a success.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "os/clock.h"

namespace kvol::node::volumemanager {

struct ExecutorOptions {
  int threads = 4;
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{122'000};
  // Runs on the worker thread after each operation, once its key is free again (the volume
  // manager wakes its reconciler here).
  std::function<void()> on_finished;
};

class OperationExecutor {
 public:
  OperationExecutor(const os::Clock& clock, ExecutorOptions options = {});
  ~OperationExecutor();  // waits for running operations; queued ones are dropped
  OperationExecutor(const OperationExecutor&) = delete;
  OperationExecutor& operator=(const OperationExecutor&) = delete;

  // Queues `op` for `key` unless an operation for it is pending or its backoff has not passed:
  // false then, and nothing is queued. `done` runs on the worker thread with op's result,
  // after the key's backoff is updated and before the key is free again (so what it records
  // is in place before another operation for the key can start). Thread-safe.
  bool Run(const std::string& key, std::function<Status()> op, std::function<void(Status)> done);
  bool IsPending(const std::string& key) const;
  // The earliest time a key in backoff may run again; nullopt when none is waiting.
  std::optional<os::MonoTime> NextRetry() const;
  // Drops backoff entries of keys no longer wanted, so the map does not grow without bound.
  void Forget(const std::string& key);

 private:
  struct Job {
    std::string key;
    std::function<Status()> op;
    std::function<void(Status)> done;
  };
  struct Backoff {
    os::MonoTime not_before;
    std::chrono::milliseconds delay{0};
  };
  void Work();

  const os::Clock& clock_;
  const ExecutorOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;                   // guarded by mu_
  std::map<std::string, bool> pending_;     // guarded by mu_: queued or running
  std::map<std::string, Backoff> backoff_;  // guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace kvol::node::volumemanager
