// The real clock.
#include "os/clock.h"

namespace kvol::os {
namespace {
class SystemClock final : public Clock {
 public:
  WallTime Now() const override { return std::chrono::system_clock::now(); }
  MonoTime Monotonic() const override { return std::chrono::steady_clock::now(); }
};
}  // namespace

Clock& RealClock() {
  static SystemClock clock;
  return clock;
}

}  // namespace kvol::os
