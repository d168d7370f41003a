// The operation executor: workers on demand, one operation per key, per-key backoff.
#include "volume/util/operation_executor.h"

#include "base/thread.h"

namespace kvol::volume::util {

OperationExecutor::OperationExecutor(const os::Clock& clock, ExecutorOptions options)
    : clock_(clock), options_(std::move(options)) {}

OperationExecutor::~OperationExecutor() {
  std::map<uint64_t, std::thread> threads;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    queue_.clear();
    threads.swap(threads_);
    finished_.clear();
  }
  for (auto& [id, t] : threads) t.join();
}

bool OperationExecutor::Run(const std::string& key, std::function<Status()> op,
                            std::function<void(Status)> done, std::string_view operation) {
  JoinFinished();
  std::lock_guard lock(mu_);
  if (stopping_ || pending_.count(key)) return false;
  if (auto b = backoff_.find({key, std::string(operation)});
      b != backoff_.end() && clock_.Monotonic() < b->second.not_before) {
    return false;
  }
  pending_[key] = true;
  queue_.push_back(Job{key, std::string(operation), std::move(op), std::move(done)});
  // Each queued operation gets a worker, up to the limit; beyond it, workers take the queue's
  // operations in turn as they finish theirs.
  if (active_ < options_.max_threads) {
    ++active_;
    const uint64_t id = next_id_++;
    threads_.emplace(id, std::thread([this, id] {
      SetThreadName("volume-op");
      Work(id);
    }));
  }
  return true;
}

void OperationExecutor::Work(uint64_t id) {
  std::unique_lock lock(mu_);
  while (!stopping_ && !queue_.empty()) {
    Job job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    Execute(job);
    lock.lock();
  }
  // Decided under the lock that saw the queue empty: a Run after this starts a new worker.
  --active_;
  finished_.push_back(id);  // joined by the next Run or the destructor
}

void OperationExecutor::JoinFinished() {
  std::vector<std::thread> joinable;
  {
    std::lock_guard lock(mu_);
    for (uint64_t id : finished_) {
      auto it = threads_.find(id);
      if (it == threads_.end()) continue;
      joinable.push_back(std::move(it->second));
      threads_.erase(it);
    }
    finished_.clear();
  }
  for (auto& t : joinable) t.join();
}

bool OperationExecutor::IsPending(const std::string& key) const {
  std::lock_guard lock(mu_);
  return pending_.count(key) > 0;
}

bool OperationExecutor::AnyPending(std::string_view prefix) const {
  std::lock_guard lock(mu_);
  for (auto it = pending_.lower_bound(std::string(prefix)); it != pending_.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    return true;
  }
  return false;
}

std::optional<os::MonoTime> OperationExecutor::NextRetry() const {
  std::lock_guard lock(mu_);
  std::optional<os::MonoTime> next;
  const auto now = clock_.Monotonic();
  for (const auto& [key, b] : backoff_) {
    if (b.not_before <= now || pending_.count(key.first)) continue;
    if (!next || b.not_before < *next) next = b.not_before;
  }
  return next;
}

void OperationExecutor::ForgetAllExcept(const std::set<std::string>& keep) {
  std::lock_guard lock(mu_);
  for (auto it = backoff_.begin(); it != backoff_.end();) {
    const bool drop = !keep.count(it->first.first) && !pending_.count(it->first.first);
    it = drop ? backoff_.erase(it) : std::next(it);
  }
}

void OperationExecutor::Execute(Job& job) {
  Status s = job.op();
  {
    std::lock_guard lock(mu_);
    if (s.ok()) {
      backoff_.erase({job.key, job.operation});
    } else {
      auto& b = backoff_[{job.key, job.operation}];
      b.delay = b.delay.count() == 0 ? options_.initial_backoff
                                     : std::min(b.delay * 2, options_.max_backoff);
      b.not_before = clock_.Monotonic() + b.delay;
    }
  }
  if (job.done) job.done(s);
  {
    std::lock_guard lock(mu_);
    pending_.erase(job.key);
  }
  if (options_.on_finished) options_.on_finished();
}

}  // namespace kvol::volume::util
