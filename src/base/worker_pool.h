// Threads for work that blocks (an API request's handler waits for the store): a task runs on
// an idle worker, or on a new one while there are fewer than the limit, or else waits its turn.
// A worker idle for a while exits, so the threads follow the work in flight.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kvol {

class WorkerPool {
 public:
  struct Options {
    size_t max_threads = 1024;
    std::chrono::milliseconds idle_exit = std::chrono::seconds(30);
    std::string thread_name = "worker";  // base/thread.h
    // Called first on each new thread (e.g. to block signals).
    std::function<void()> on_start;
  };

  explicit WorkerPool(Options opts);
  ~WorkerPool();  // Stop()

  // Runs `task` as soon as a worker is free. False (and `task` is dropped) after Stop.
  bool Submit(std::function<void()> task);
  // Runs what is queued, then joins every worker.
  void Stop();

  size_t threads() const;
  size_t queued() const;

 private:
  void Run(std::list<std::thread>::iterator self);
  void ReapLocked();

  const Options opts_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::list<std::thread> threads_;
  std::vector<std::list<std::thread>::iterator> exited_;
  size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace kvol
