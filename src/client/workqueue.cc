// The work queue.
#include "client/workqueue.h"

#include <algorithm>

namespace kvol::client {

WorkQueue::WorkQueue(os::Clock& clock, WorkQueueOptions opts) : clock_(clock), opts_(opts) {
  if (!opts_.name.empty()) metrics_ = std::make_unique<WorkQueueMetrics>(opts_.name);
}

WorkQueue::~WorkQueue() { ShutDown(); }

bool WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_) return false;
  KeyState& state = keys_.try_emplace(key).first->second;
  if (state.dirty) return false;  // already waiting: once is enough
  state.dirty = true;
  if (metrics_) {
    state.queued_at = clock_.Monotonic();
    metrics_->Added();
  }
  if (state.processing) return false;  // queued again on Done
  queue_.push_back(key);
  return WakeLocked();
}

bool WorkQueue::WakeLocked() {
  // Every key queued meanwhile waits for the worker already woken: a burst of adds costs one
  // wake-up, not one each, and that worker takes them as one batch (GetBatch).
  if (waiting_ == 0 || waking_ > 0) return false;
  ++waking_;
  return true;
}

void WorkQueue::Add(const std::string& key) {
  bool wake;
  {
    std::lock_guard lock(mu_);
    wake = AddLocked(key);
  }
  // Outside the lock, so that the worker woken does not at once wait for it.
  if (wake) cv_.notify_one();
}

void WorkQueue::AddAfter(const std::string& key, std::chrono::nanoseconds delay) {
  std::lock_guard lock(mu_);
  if (shutting_down_) return;
  if (delay <= std::chrono::nanoseconds::zero()) {
    if (AddLocked(key)) cv_.notify_one();
    return;
  }
  const os::MonoTime at = clock_.Monotonic() + std::chrono::duration_cast<os::MonoTime::duration>(delay);
  auto it = delayed_at_.find(key);
  if (it != delayed_at_.end()) {
    if (it->second <= at) return;  // already due sooner
    auto range = delayed_.equal_range(it->second);
    for (auto d = range.first; d != range.second; ++d) {
      if (d->second == key) {
        delayed_.erase(d);
        break;
      }
    }
  }
  delayed_at_[key] = at;
  delayed_.emplace(at, key);
  cv_.notify_all();  // a waiter may need to wake earlier
}

void WorkQueue::AddRateLimited(const std::string& key) {
  std::chrono::nanoseconds delay;
  {
    std::lock_guard lock(mu_);
    const int n = failures_[key]++;
    if (metrics_) metrics_->Retried();
    failing_.store(failures_.size(), std::memory_order_relaxed);
    delay = opts_.base_delay;
    for (int i = 0; i < n && delay < opts_.max_delay; ++i) delay *= 2;
    if (delay > opts_.max_delay) delay = opts_.max_delay;
  }
  AddAfter(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  // Most keys never failed: no lock for them.
  if (failing_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard lock(mu_);
  failures_.erase(key);
  failing_.store(failures_.size(), std::memory_order_relaxed);
}

int WorkQueue::Failures(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::PromoteDueLocked() {
  if (delayed_.empty()) return;
  const os::MonoTime now = clock_.Monotonic();
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    std::string key = std::move(delayed_.begin()->second);
    delayed_.erase(delayed_.begin());
    delayed_at_.erase(key);
    if (AddLocked(key)) cv_.notify_one();
  }
}

bool WorkQueue::WaitLocked(std::unique_lock<std::mutex>& lock,
                           std::optional<os::MonoTime> deadline) {
  while (true) {
    PromoteDueLocked();
    if (!queue_.empty()) return true;
    if (shutting_down_) return false;
    if (deadline && clock_.Monotonic() >= *deadline) return false;
    std::optional<os::MonoTime> wake = deadline;
    if (!delayed_.empty() && (!wake || delayed_.begin()->first < *wake)) {
      wake = delayed_.begin()->first;
    }
    ++waiting_;
    if (wake) {
      clock_.WaitUntil(cv_, lock, *wake);
    } else {
      cv_.wait(lock);
    }
    --waiting_;
    // Whichever waiter runs first takes the place of the one woken.
    if (waking_ > 0) --waking_;
  }
}

std::string WorkQueue::TakeLocked() {
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  KeyState& state = keys_.find(key)->second;  // a queued key has its entry
  state.dirty = false;
  state.processing = true;
  if (metrics_) {
    state.started_at = clock_.Monotonic();
    metrics_->Taken(state.started_at - state.queued_at);
  }
  return key;
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock lock(mu_);
  if (!WaitLocked(lock, std::nullopt)) return std::nullopt;
  std::string key = TakeLocked();
  const bool wake = !queue_.empty() && WakeLocked();
  lock.unlock();
  if (wake) cv_.notify_one();
  return key;
}

std::optional<std::string> WorkQueue::Get(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  const os::MonoTime deadline =
      clock_.Monotonic() + std::chrono::duration_cast<os::MonoTime::duration>(timeout);
  if (!WaitLocked(lock, deadline)) return std::nullopt;
  std::string key = TakeLocked();
  const bool wake = !queue_.empty() && WakeLocked();
  lock.unlock();
  if (wake) cv_.notify_one();
  return key;
}

std::vector<std::string> WorkQueue::GetBatch(size_t max) {
  std::vector<std::string> keys;
  std::unique_lock lock(mu_);
  if (!WaitLocked(lock, std::nullopt)) return keys;
  while (!queue_.empty() && keys.size() < std::max<size_t>(max, 1)) keys.push_back(TakeLocked());
  const bool wake = !queue_.empty() && WakeLocked();
  lock.unlock();
  if (wake) cv_.notify_one();
  return keys;
}

bool WorkQueue::DoneLocked(const std::string& key) {
  auto it = keys_.find(key);
  if (it == keys_.end() || !it->second.processing) return false;
  it->second.processing = false;
  if (metrics_) metrics_->Finished(clock_.Monotonic() - it->second.started_at);
  if (!it->second.dirty) {
    keys_.erase(it);
    return false;
  }
  if (shutting_down_) return false;
  queue_.push_back(key);
  return WakeLocked();
}

void WorkQueue::Done(const std::string& key) {
  bool wake;
  {
    std::lock_guard lock(mu_);
    wake = DoneLocked(key);
  }
  if (wake) cv_.notify_one();
}

void WorkQueue::Done(const std::vector<std::string>& keys) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    for (const auto& key : keys) {
      if (DoneLocked(key)) wake = true;
    }
  }
  if (wake) cv_.notify_one();
}

void WorkQueue::ShutDown() {
  std::lock_guard lock(mu_);
  shutting_down_ = true;
  cv_.notify_all();
}

bool WorkQueue::shutting_down() const {
  std::lock_guard lock(mu_);
  return shutting_down_;
}

size_t WorkQueue::Len() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

}  // namespace kvol::client
