// Small helpers for file descriptors that every layer uses.
#pragma once

#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace kvol {

// Sets close-on-exec on `fd`, for descriptors a library opens without it (Asio's sockets), so
// that no process kvol starts inherits them. A descriptor that is not open is left alone.
inline void SetCloseOnExec(int fd) {
  const int flags = fcntl(fd, F_GETFD);
  if (flags >= 0 && !(flags & FD_CLOEXEC)) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

// Sets close-on-exec on every descriptor above 2 the process has, such as those it inherited
// from whoever started it, so that none reaches the processes it starts in turn.
inline void CloseOnExecAboveStdio() {
  if (syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC) == 0) return;
  for (int fd = 3; fd < 4096; ++fd) SetCloseOnExec(fd);  // kernels before 5.11
}

// Raises the soft limit on open descriptors to the hard limit, as Go programs such as
// kube-apiserver do at start: a server holding thousands of watches needs more than the
// usual 1,024. Returns the limit now in force.
inline rlim_t RaiseDescriptorLimit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return 0;
  if (r.rlim_cur < r.rlim_max) {
    rlimit raised{r.rlim_max, r.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
  }
  return r.rlim_cur;
}

}  // namespace kvol
