#include "client/testing/proc_stats.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace kvol::client::testing {
namespace {

std::string ProcDir(pid_t pid) { return "/proc/" + (pid ? std::to_string(pid) : "self"); }

// A /proc stat file's contents: the name between its parentheses, and utime + stime in
// seconds. False if it cannot be read.
bool ReadStat(const std::filesystem::path& path, std::string* name, double* seconds) {
  std::ifstream in(path);
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t open = stat.find('('), close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
  }
  *name = stat.substr(open + 1, close - open - 1);
  *seconds = ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
  return true;
}

}  // namespace

long RssKiB(pid_t pid) {
  std::ifstream in(ProcDir(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

double CpuSecondsOf(pid_t pid) {
  std::string name;
  double seconds = 0;
  return ReadStat(ProcDir(pid) + "/stat", &name, &seconds) ? seconds : 0;
}

std::map<std::string, ThreadCpu> CpuByThread(pid_t pid) {
  std::map<std::string, ThreadCpu> out;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(ProcDir(pid) + "/task", ec)) {
    ThreadCpu t;
    if (ReadStat(task.path() / "stat", &t.name, &t.seconds)) {
      out[task.path().filename()] = std::move(t);
    }
  }
  return out;
}

}  // namespace kvol::client::testing
