// The worker pool.
#include "base/worker_pool.h"

#include "base/thread.h"

namespace kvol {

WorkerPool::WorkerPool(Options opts) : opts_(std::move(opts)) {}

WorkerPool::~WorkerPool() { Stop(); }

// Joins workers that have exited (each is past its last use of the pool's state but for the
// return, which join waits for). Called with mu_ held.
void WorkerPool::ReapLocked() {
  for (auto it : exited_) {
    it->join();
    threads_.erase(it);
  }
  exited_.clear();
}

bool WorkerPool::Submit(std::function<void()> task) {
  std::lock_guard lock(mu_);
  if (stopping_) return false;
  ReapLocked();
  tasks_.push_back(std::move(task));
  // Idle workers take queued tasks first; start one only for what they cannot take.
  if (idle_ >= tasks_.size() || threads_.size() - exited_.size() >= opts_.max_threads) {
    cv_.notify_one();
    return true;
  }
  threads_.emplace_back();
  auto self = std::prev(threads_.end());
  *self = std::thread([this, self] { Run(self); });
  return true;
}

void WorkerPool::Run(std::list<std::thread>::iterator self) {
  SetThreadName(opts_.thread_name);
  if (opts_.on_start) opts_.on_start();
  std::unique_lock lock(mu_);
  while (true) {
    if (tasks_.empty()) {
      if (stopping_) break;
      ++idle_;
      const bool woken =
          cv_.wait_for(lock, opts_.idle_exit, [this] { return stopping_ || !tasks_.empty(); });
      --idle_;
      if (!woken) break;  // idle for long enough: go
      continue;
    }
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    task = nullptr;  // what it holds goes before the next wait
    lock.lock();
  }
  if (!stopping_) exited_.push_back(self);
}

void WorkerPool::Stop() {
  std::list<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  // Workers finish what is queued; none starts after stopping_. Threads that exited before are
  // joined along with the rest.
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  std::lock_guard lock(mu_);
  threads_.clear();
  exited_.clear();
}

size_t WorkerPool::threads() const {
  std::lock_guard lock(mu_);
  return threads_.size() - exited_.size();
}

size_t WorkerPool::queued() const {
  std::lock_guard lock(mu_);
  return tasks_.size();
}

}  // namespace kvol
