// How the steps of a container's init report a failure: on stderr, which is the container's
// log, with errno's text, and the exit code the runtime reports for a container that could not
// start.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace kvol::node::runtime {

inline constexpr int kInitFailed = 127;

inline int InitFailure(const std::string& what) {
  std::fprintf(stderr, "kvol: container init: %s: %s\n", what.c_str(), std::strerror(errno));
  return kInitFailed;
}

}  // namespace kvol::node::runtime
