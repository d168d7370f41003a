// Time, behind an interface so tests control it. Wall time (timestamps written into objects)
// and monotonic time (deadlines, durations) are different types, as they should be.
#pragma once

#include <chrono>
#include <memory>

namespace kvol::os {

using WallTime = std::chrono::system_clock::time_point;
using MonoTime = std::chrono::steady_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual WallTime Now() const = 0;
  virtual MonoTime Monotonic() const = 0;
};

// The real clock. Thread-safe; one shared instance.
Clock& RealClock();

}  // namespace kvol::os
