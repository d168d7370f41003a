// Runs volume operations (SetUp, TearDown, MountDevice, ...) with at most one operation in
// flight per key (per pod volume, per device) and exponential backoff per key after a failure,
// as kubelet's nestedpendingoperations does: 500ms doubling to 2m2s, reset by a success.
// Operations run on up to `max_threads` threads, started when work arrives and gone when there
// is none, so that a mount that hangs (an NFS server that does not answer) holds up one thread
// and its own volume, not the node.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/status.h"
#include "os/clock.h"

namespace kvol::volume::util {

struct ExecutorOptions {
  int max_threads = 64;
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{122'000};
  // Runs on the worker thread after each operation, once its key is free again (the volume
  // manager wakes its reconciler here).
  std::function<void()> on_finished;
};

class OperationExecutor {
 public:
  OperationExecutor(const os::Clock& clock, ExecutorOptions options = {});
  ~OperationExecutor();  // waits for running operations
  OperationExecutor(const OperationExecutor&) = delete;
  OperationExecutor& operator=(const OperationExecutor&) = delete;

  // Queues `op` for `key` unless an operation for it is pending or its backoff has not passed:
  // false then, and nothing is queued. `done` runs on the operation's thread with op's result,
  // after the key's backoff is updated and before the key is free again (so what it records
  // is in place before another operation for the key can start). Thread-safe.
  // Backoff is kept per key and `operation`, so that a failing mount does not hold up the
  // unmount of the same volume.
  bool Run(const std::string& key, std::function<Status()> op, std::function<void(Status)> done,
           std::string_view operation = "");
  bool IsPending(const std::string& key) const;
  // Whether an operation is pending for a key that starts with `prefix`.
  bool AnyPending(std::string_view prefix) const;
  // The earliest time a key in backoff may run again; nullopt when none is waiting.
  std::optional<os::MonoTime> NextRetry() const;
  // Drops the backoff of every key not in `keep` and not running, so that keys of volumes that
  // went away do not accumulate.
  void ForgetAllExcept(const std::set<std::string>& keep);

 private:
  struct Backoff {
    os::MonoTime not_before;
    std::chrono::milliseconds delay{0};
  };
  struct Job {
    std::string key;
    std::string operation;
    std::function<Status()> op;
    std::function<void(Status)> done;
  };
  void Work(uint64_t id);
  void Execute(Job& job);
  void JoinFinished();  // mu_ not held

  const os::Clock& clock_;
  const ExecutorOptions options_;
  mutable std::mutex mu_;
  std::deque<Job> queue_;                // guarded by mu_
  std::map<std::string, bool> pending_;  // guarded by mu_: queued or running
  // guarded by mu_, by (key, operation)
  std::map<std::pair<std::string, std::string>, Backoff> backoff_;
  bool stopping_ = false;                    // guarded by mu_
  uint64_t next_id_ = 0;                     // guarded by mu_
  std::map<uint64_t, std::thread> threads_;  // guarded by mu_: workers, until joined
  int active_ = 0;                           // guarded by mu_: workers not yet exiting
  std::vector<uint64_t> finished_;           // guarded by mu_: workers that may be joined
};

}  // namespace kvol::volume::util
