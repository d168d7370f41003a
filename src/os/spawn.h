// Starting a long-lived child of kvol's (a container's init, a containerd): no stdin, its
// stdout and stderr appended to a log file, started as kvol's children are
// (SetChildSpawnAttributes), with no descriptor of kvol's inherited.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace kvol::os {

// Starts argv[0] (looked up in PATH when it has no slash) with argv and the caller's
// environment; sets `pid`. 0, or the error number posix_spawn gave.
int SpawnLogged(const std::vector<std::string>& argv, const std::string& log_path, pid_t* pid);

}  // namespace kvol::os
