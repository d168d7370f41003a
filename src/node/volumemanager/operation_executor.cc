// The operation executor: a key-exclusive thread pool with per-key backoff.
#include "node/volumemanager/operation_executor.h"

namespace kvol::node::volumemanager {

OperationExecutor::OperationExecutor(const os::Clock& clock, ExecutorOptions options)
    : clock_(clock), options_(options) {
  for (int i = 0; i < options_.threads; ++i) threads_.emplace_back([this] { Work(); });
}

OperationExecutor::~OperationExecutor() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

bool OperationExecutor::Run(const std::string& key, std::function<Status()> op,
                            std::function<void(Status)> done) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || pending_.count(key)) return false;
    if (auto b = backoff_.find(key);
        b != backoff_.end() && clock_.Monotonic() < b->second.not_before) {
      return false;
    }
    pending_[key] = true;
    queue_.push_back(Job{key, std::move(op), std::move(done)});
  }
  cv_.notify_one();
  return true;
}

bool OperationExecutor::IsPending(const std::string& key) const {
  std::lock_guard lock(mu_);
  return pending_.count(key) > 0;
}

std::optional<os::MonoTime> OperationExecutor::NextRetry() const {
  std::lock_guard lock(mu_);
  std::optional<os::MonoTime> next;
  const auto now = clock_.Monotonic();
  for (const auto& [key, b] : backoff_) {
    if (b.not_before <= now || pending_.count(key)) continue;
    if (!next || b.not_before < *next) next = b.not_before;
  }
  return next;
}

void OperationExecutor::Forget(const std::string& key) {
  std::lock_guard lock(mu_);
  if (!pending_.count(key)) backoff_.erase(key);
}

void OperationExecutor::Work() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    Status s = job.op();
    {
      std::lock_guard lock(mu_);
      if (s.ok()) {
        backoff_.erase(job.key);
      } else {
        auto& b = backoff_[job.key];
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
}

}  // namespace kvol::node::volumemanager
