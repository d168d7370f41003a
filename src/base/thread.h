// Names for a process's threads, as ps -L, top -H, perf and /proc/PID/task/TID/comm show them.
#pragma once

#include <string>
#include <string_view>

namespace kvol {

// Names the calling thread. Linux keeps 15 bytes of a thread's name: a longer name is cut
// there. The names kvol gives say what a thread does ("kvol-committer", "pv-claim",
// "watch-pvc"), so that a profile or top -H of a busy process reads by role.
void SetThreadName(std::string_view name);

// The calling thread's name.
std::string ThreadName();

}  // namespace kvol
