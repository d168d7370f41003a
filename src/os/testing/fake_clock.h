// A clock for tests: time moves only when the test advances it. Timed waits (WaitUntil) end
// when an Advance reaches their deadline; meanwhile they return every millisecond of real time
// so that the waiter re-checks its own condition (a notify on the waiter's condition variable
// is seen that late, never lost).
#pragma once

#include <condition_variable>
#include <mutex>

#include "os/clock.h"

namespace kvol::os::testing {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(WallTime start = WallTime(std::chrono::seconds(1'645'192'285)))
      : wall_(start), mono_(MonoTime(std::chrono::hours(1))) {}

  WallTime Now() const override {
    std::lock_guard lock(mu_);
    return wall_;
  }
  MonoTime Monotonic() const override {
    std::lock_guard lock(mu_);
    return mono_;
  }
  std::cv_status WaitUntil(std::condition_variable&, std::unique_lock<std::mutex>& lock,
                           MonoTime deadline) const override {
    if (Monotonic() >= deadline) return std::cv_status::timeout;
    lock.unlock();
    {
      std::unique_lock l(mu_);
      advanced_.wait_for(l, std::chrono::milliseconds(1), [&] { return mono_ >= deadline; });
    }
    lock.lock();
    return Monotonic() >= deadline ? std::cv_status::timeout : std::cv_status::no_timeout;
  }
  void Advance(std::chrono::nanoseconds d) {
    {
      std::lock_guard lock(mu_);
      wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
      mono_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
    }
    advanced_.notify_all();
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable advanced_;
  WallTime wall_;
  MonoTime mono_;
};

}  // namespace kvol::os::testing
