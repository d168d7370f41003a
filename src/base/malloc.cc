#include "base/malloc.h"

#include <limits.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace kvol {
namespace {

constexpr char kTunables[] = "GLIBC_TUNABLES";
constexpr char kHugePages[] = "glibc.malloc.hugetlb=1";
// Set only between the two executions: the caller's GLIBC_TUNABLES after "=", or "-" if unset.
constexpr char kCallerTunables[] = "KVOL_CALLER_GLIBC_TUNABLES";

void RestoreCallerTunables(const char* saved) {
  if (saved[0] == '=') {
    setenv(kTunables, saved + 1, 1);
  } else {
    unsetenv(kTunables);
  }
  unsetenv(kCallerTunables);
}

}  // namespace

bool ConfigureAllocator() {
  const bool no_fast_bins = mallopt(M_MXFAST, 0) == 1;
  const bool top_pad = mallopt(M_TOP_PAD, 64 << 20) == 1;
  return no_fast_bins && top_pad;
}

std::optional<std::string> HugePageTunables(const char* tunables, std::string_view thp_enabled) {
  if (thp_enabled.find("[madvise]") == std::string_view::npos) return std::nullopt;
  const std::string_view now = tunables ? tunables : "";
  if (now.find("glibc.malloc.hugetlb=") != std::string_view::npos) return std::nullopt;
  if (now.empty()) return kHugePages;
  return std::string(now) + ":" + kHugePages;
}

void ReexecWithHugePages(char** argv) {
  if (const char* saved = getenv(kCallerTunables)) {
    // Executed again: glibc has read the setting.
    const std::string caller = saved;
    RestoreCallerTunables(caller.c_str());
    return;
  }
  std::string thp;
  {
    // Closed before execv: the stream's descriptor is not close-on-exec.
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
    thp.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const char* now = getenv(kTunables);
  const auto next = HugePageTunables(now, thp);
  if (!next) return;
  const std::string caller = now ? std::string("=") + now : "-";
  // The program's own path rather than /proc/self/exe, which would become the process's
  // name (what ps, top and pgrep show).
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return;
  self[n] = '\0';
  setenv(kCallerTunables, caller.c_str(), 1);
  setenv(kTunables, next->c_str(), 1);
  execv(self, argv);
  RestoreCallerTunables(caller.c_str());  // not executed again: carry on as started
}

}  // namespace kvol
