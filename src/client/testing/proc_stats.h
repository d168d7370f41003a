// For benchmarks: what /proc says a process (or each of its threads) has used.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>

namespace kvol::client::testing {

// Resident memory (VmRSS) of process `pid` (0: this one), in KiB; -1 if it cannot be read.
long RssKiB(pid_t pid = 0);

// CPU seconds (user and system) process `pid` (0: this one, all its threads, living or
// ended) has used so far; 0 if it cannot be read.
double CpuSecondsOf(pid_t pid = 0);

// CPU seconds each living thread of process `pid` (0: this one) has used so far, by thread id.
struct ThreadCpu {
  std::string name;  // the thread's name (/proc/PID/task/TID/comm)
  double seconds = 0;
};
std::map<std::string, ThreadCpu> CpuByThread(pid_t pid = 0);

}  // namespace kvol::client::testing
