// How fast this machine gives a process memory it has not touched yet: the cost under every
// figure that grows a process's heap (bind_bench's large runs above all). Prints one figure per
// line.
//
//   memory_bench [--mib M] [--idle-seconds S]
//
// For 2 MiB pages (madvise MADV_HUGEPAGE, as kvol's heaps ask for them) and then 4 KiB pages
// (MADV_NOHUGEPAGE), each after S seconds with nothing running here (default 10): M MiB
// (default 512) of a fresh anonymous mapping touched once ("new"), then unmapped, mapped again
// and touched again at once ("again"), and finally written whole ("written", memory already
// backed). On a machine whose kernel gives free memory back to its hypervisor (free page
// reporting; its settings are printed when present), "new" memory has to be backed by the host
// again and costs far more than memory the kernel is handed back at once; memory another
// process freed a moment before is "again" memory too, hence the pause. Where the kernel reports,
// also how much of what was freed it reported and within how many seconds.
#include <sys/mman.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>

#include "page_reporting.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kHugePage = 2 * kMiB;
// Reporting is over once the count of reported memory has stood still this long.
constexpr std::chrono::seconds kStill{6};

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "memory_bench: %s\n", msg.c_str());
  std::exit(1);
}

// A mapping of `len` bytes aligned to 2 MiB (so that it can be made of huge pages).
class Mapping {
 public:
  Mapping(size_t len, bool huge) : len_(len) {
    raw_len_ = len + kHugePage;
    raw_ = mmap(nullptr, raw_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw_ == MAP_FAILED) Die(std::string("mmap: ") + std::strerror(errno));
    auto addr = reinterpret_cast<uintptr_t>(raw_);
    data_ = reinterpret_cast<char*>((addr + kHugePage - 1) & ~(kHugePage - 1));
    if (madvise(data_, len_, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0) {
      Die(std::string("madvise: ") + std::strerror(errno));
    }
  }
  ~Mapping() { munmap(raw_, raw_len_); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  // Writes one byte per 4 KiB page: what it costs to have the memory backed. Seconds.
  double Touch() {
    auto start = Clock::now();
    for (size_t i = 0; i < len_; i += 4096) data_[i] = 1;
    return Seconds(start);
  }
  // Writes every byte. Seconds.
  double Write() {
    auto start = Clock::now();
    std::memset(data_, 2, len_);
    return Seconds(start);
  }

 private:
  static double Seconds(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  }
  size_t len_;
  size_t raw_len_;
  void* raw_;
  char* data_;
};

void PrintRate(const char* pages, const char* what, size_t bytes, double secs) {
  double gb_per_s = static_cast<double>(bytes) / 1e9 / secs;
  double us_per_2mib = secs * 1e6 / (static_cast<double>(bytes) / kHugePage);
  std::printf("pages=%s %s_gb_per_second=%.2f\n", pages, what, gb_per_s);
  std::printf("pages=%s %s_us_per_2mib=%.0f\n", pages, what, us_per_2mib);
}

void PrintPageReporting() {
  constexpr std::string_view kDir = "/sys/module/page_reporting/parameters/";
  for (const char* p : {"page_reporting_order", "min_free_ms", "reported_kib"}) {
    std::ifstream in(std::string(kDir) + p);
    std::string v;
    if (in >> v) std::printf("page_reporting.%s=%s\n", p, v.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 512;
  int idle_seconds = 10;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--mib" && i + 1 < argc) {
      mib = std::strtoul(argv[++i], nullptr, 10);
    } else if (a == "--idle-seconds" && i + 1 < argc) {
      idle_seconds = std::atoi(argv[++i]);
    } else {
      Die("usage: memory_bench [--mib M] [--idle-seconds S]");
    }
  }
  if (mib < 2 || idle_seconds < 0) Die("--mib must be at least 2, --idle-seconds not negative");
  const size_t len = (mib * kMiB) & ~(kHugePage - 1);

  PrintPageReporting();
  for (bool huge : {true, false}) {
    const char* pages = huge ? "2MiB" : "4KiB";
    std::this_thread::sleep_for(std::chrono::seconds(idle_seconds));
    double fresh, again, written;
    {
      Mapping m(len, huge);
      fresh = m.Touch();
    }
    {
      Mapping m(len, huge);
      again = m.Touch();
      written = m.Write();
    }
    // How long the kernel takes to report what was just freed, where it reports.
    const auto reported_before = kvol::bench::ReportedKib();
    const double report_seconds = kvol::bench::WaitForFreeMemoryReported(kStill);
    const auto reported_after = kvol::bench::ReportedKib();
    PrintRate(pages, "new", len, fresh);
    PrintRate(pages, "again", len, again);
    PrintRate(pages, "written", len, written);
    if (reported_before && reported_after) {
      std::printf("pages=%s freed_reported_mib=%lld\n", pages,
                  (*reported_after - *reported_before) / 1024);
      std::printf("pages=%s freed_reported_within_seconds=%.1f\n", pages,
                  report_seconds - static_cast<double>(kStill.count()));
    }
  }
  return 0;
}
