// Running other programs (mount, mkfs, FlexVolume drivers), behind an interface so unit tests
// script the answers. The real one forks and execs with no shell in between.
#pragma once

#include <spawn.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"

namespace kvol::os {

struct ExecResult {
  int exit_code = 0;   // the program's exit status; 128+N when signal N ended it
  std::string output;  // stdout and stderr together, in the order written
};

class Exec {
 public:
  virtual ~Exec() = default;
  // Runs argv[0] (looked up in PATH when it has no slash) with argv and the caller's
  // environment, stdin closed, and waits for it. A program that ran gives a result whatever its
  // exit code. NotFound when argv[0] cannot be executed; DeadlineExceeded when it is still
  // running after `timeout` (it is killed with SIGKILL and reaped first). Thread-safe.
  virtual StatusOr<ExecResult> Run(const std::vector<std::string>& argv,
                                   std::chrono::milliseconds timeout) = 0;
};

// The real one. Thread-safe; one shared instance.
Exec& RealExec();

// Sets `attr` (initialised by the caller) so that a child starts as kvol's children should: no
// signal blocked, every signal at its default disposition (the caller's threads block some and
// ignore SIGPIPE), and a process group of its own, so that killing the group reaches whatever
// helpers the child starts.
void SetChildSpawnAttributes(posix_spawnattr_t* attr);

// Adds to `actions` (initialised by the caller, after its own opens and dup2s onto 0, 1 and 2)
// the closing of every descriptor above 2 in the child. kvol opens its descriptors
// close-on-exec; this is the second line of defence, for a descriptor a library opened without
// the flag, or one open between a socket call and its fcntl while another thread spawns.
void CloseInheritedDescriptors(posix_spawn_file_actions_t* actions);

// A descriptor that becomes readable when process `pid` exits (pidfd_open; it need not be a
// child); -1 when the kernel has none (before 5.3).
int PidFdOpen(pid_t pid);

// "exit status N" or "signal: killed", as Go's os/exec words it (users search for these).
std::string DescribeExit(int exit_code);

}  // namespace kvol::os
