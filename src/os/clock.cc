// The real clock.
#include "os/clock.h"

namespace kvol::os {
namespace {
class SystemClock final : public Clock {
 public:
  WallTime Now() const override { return std::chrono::system_clock::now(); }
  MonoTime Monotonic() const override { return std::chrono::steady_clock::now(); }
  std::cv_status WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                           MonoTime deadline) const override {
    return cv.wait_until(lock, deadline);
  }
};
}  // namespace

Clock& RealClock() {
  static SystemClock clock;
  return clock;
}

}  // namespace kvol::os
