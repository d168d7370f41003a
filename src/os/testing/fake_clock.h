// A clock for tests: time moves only when the test advances it.
#pragma once

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
  void Advance(std::chrono::nanoseconds d) {
    std::lock_guard lock(mu_);
    wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
    mono_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
  }

 private:
  mutable std::mutex mu_;
  WallTime wall_;
  MonoTime mono_;
};

}  // namespace kvol::os::testing
