// Time, behind an interface so tests control it. Wall time (timestamps written into objects)
// and monotonic time (deadlines, durations) are different types, as they should be.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace kvol::os {

using WallTime = std::chrono::system_clock::time_point;
using MonoTime = std::chrono::steady_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual WallTime Now() const = 0;
  virtual MonoTime Monotonic() const = 0;
  // Waits on `cv` as std::condition_variable::wait_until does (`lock` held on entry and on
  // return), until notified or until this clock's monotonic time reaches `deadline`. May wake
  // spuriously: callers re-check what they wait for. Every timed wait in kvol goes through
  // here, so a fake clock drives timers in tests without real sleeping.
  virtual std::cv_status WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                                   MonoTime deadline) const = 0;
  std::cv_status WaitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                         std::chrono::nanoseconds d) const {
    return WaitUntil(cv, lock,
                     Monotonic() + std::chrono::duration_cast<MonoTime::duration>(d));
  }
};

// The real clock. Thread-safe; one shared instance.
Clock& RealClock();

}  // namespace kvol::os
