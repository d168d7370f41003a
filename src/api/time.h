// Timestamps as Kubernetes writes them: Time is RFC 3339 to the second ("2022-02-18T13:51:25Z"),
// MicroTime to the microsecond ("2022-02-18T13:51:25.433545Z"). Both are read from any RFC 3339
// form (fractions, offsets) and written in UTC.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace kvol::api {

class Time {
 public:
  Time() = default;
  static Time FromUnixSeconds(int64_t s, int32_t nanos = 0) { return Time(s, nanos); }
  static Time FromTimePoint(std::chrono::system_clock::time_point t) {
    const int64_t ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    return Time(ns / 1'000'000'000, static_cast<int32_t>(ns % 1'000'000'000));
  }
  // Parses RFC 3339 ("2006-01-02T15:04:05Z", "2006-01-02T15:04:05.123+08:00").
  static StatusOr<Time> Parse(std::string_view s);

  int64_t unix_seconds() const { return seconds_; }
  int32_t nanos() const { return nanos_; }  // 0..999999999 past unix_seconds()
  // "2006-01-02T15:04:05Z": whole seconds, as metav1.Time marshals.
  std::string ToString() const;
  // "2006-01-02T15:04:05.000000Z": microseconds, as metav1.MicroTime marshals.
  std::string ToMicroString() const;
  // ToString (or ToMicroString) appended to `out`, which may then need no allocation.
  void AppendTo(std::string& out, bool micro = false) const;

  friend auto operator<=>(const Time&, const Time&) = default;

 private:
  Time(int64_t s, int32_t n) : seconds_(s), nanos_(n) {}
  int64_t seconds_ = 0;
  int32_t nanos_ = 0;
};

// A Time that encodes with microseconds (Lease renewTime, Event eventTime).
class MicroTime {
 public:
  MicroTime() = default;
  MicroTime(Time t) : t_(t) {}  // NOLINT: implicit, they are the same instant
  const Time& time() const { return t_; }
  std::string ToString() const { return t_.ToMicroString(); }
  friend auto operator<=>(const MicroTime&, const MicroTime&) = default;

 private:
  Time t_;
};

}  // namespace kvol::api
