// Free page reporting, as the benchmarks meet it: a kernel that hands free memory back to its
// host (a virtual machine's guest with page_reporting) reports memory some seconds after it is
// freed, and until then hands that memory out first, still backed; memory it has reported must
// be backed by the host again on first touch, many times slower (bench/memory_bench.cc).
#pragma once

#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

namespace kvol::bench {

// The memory the kernel has reported to its host since it started, in KiB; nullopt where it
// does not report.
inline std::optional<long long> ReportedKib() {
  FILE* f = std::fopen("/sys/module/page_reporting/parameters/reported_kib", "r");
  if (f == nullptr) return std::nullopt;
  long long v = -1;
  const int got = std::fscanf(f, "%lld", &v);
  std::fclose(f);
  if (got != 1) return std::nullopt;
  return v;
}

// Waits until the kernel has reported all the free memory it will: until the count of reported
// memory has stood still for `still` (its passes come every 2-3 s while there is memory to
// report), `limit` at most. The seconds waited; 0 where the kernel does not report.
inline double WaitForFreeMemoryReported(std::chrono::seconds still = std::chrono::seconds(6),
                                        std::chrono::seconds limit = std::chrono::seconds(180)) {
  using Clock = std::chrono::steady_clock;
  auto last = ReportedKib();
  if (!last) return 0;
  const auto start = Clock::now();
  auto still_since = start;
  while (Clock::now() - still_since < still) {
    if (Clock::now() - start > limit) {
      std::fprintf(stderr, "free memory still being reported after %lld s; going on\n",
                   static_cast<long long>(limit.count()));
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    auto now = ReportedKib();
    if (now != last) {
      last = now;
      still_since = Clock::now();
    }
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace kvol::bench
