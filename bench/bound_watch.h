// BoundWatch: the claims a benchmark waits to see Bound, counted from a watch, so that the wait
// costs little next to the work it measures.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

#include "api/core.h"
#include "client/client.h"
#include "client/informer.h"

namespace kvol::bench {

class BoundWatch {
 public:
  using Clock = std::chrono::steady_clock;

  explicit BoundWatch(kvol::client::Client& c)
      : informer_(c.resource<api::PersistentVolumeClaim>()) {
    informer_.AddHandlers({.on_add = [this](const auto& p) { See(*p); },
                           .on_update = [this](const auto&, const auto& p) { See(*p); }});
    informer_.Start();
    if (!informer_.WaitForSync(std::chrono::seconds(60))) {
      std::fprintf(stderr, "claim informer did not sync\n");
      std::exit(1);
    }
  }
  // The informer's thread calls See: it stops before the members See uses go.
  ~BoundWatch() { informer_.Stop(); }
  BoundWatch(const BoundWatch&) = delete;
  BoundWatch& operator=(const BoundWatch&) = delete;

  bool WaitFor(size_t n, std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    want_count_ = n;
    return cv_.wait_for(lock, timeout, [&] { return bound_.size() >= n; });
  }
  bool WaitForName(const std::string& name, std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    want_name_ = name;
    return cv_.wait_for(lock, timeout, [&] { return bound_.count(name) > 0; });
  }
  size_t Count() {
    std::lock_guard lock(mu_);
    return bound_.size();
  }
  // When the last claim became Bound.
  Clock::time_point last() {
    std::lock_guard lock(mu_);
    return last_;
  }

 private:
  void See(const api::PersistentVolumeClaim& c) {
    if (c.status.phase != "Bound") return;
    std::lock_guard lock(mu_);
    if (!bound_.insert(c.metadata.name).second) return;
    last_ = Clock::now();
    // Only what the waiter waits for wakes it: the measurement should not add a context
    // switch per claim to what it measures.
    if (bound_.size() >= want_count_ || c.metadata.name == want_name_) cv_.notify_all();
  }
  kvol::client::Informer<api::PersistentVolumeClaim> informer_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> bound_;
  size_t want_count_ = SIZE_MAX;
  std::string want_name_;
  Clock::time_point last_;
};

}  // namespace kvol::bench
