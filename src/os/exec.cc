// The real Exec: posix_spawnp with one pipe for stdout and stderr, read until EOF or deadline.
#include "os/exec.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace kvol::os {
namespace {

class RealExecImpl final : public Exec {
 public:
  StatusOr<ExecResult> Run(const std::vector<std::string>& argv,
                           std::chrono::milliseconds timeout) override {
    if (argv.empty()) return InvalidArgumentError("exec: no program given");
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return InternalError(std::string("pipe: ") + strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    // The caller's threads may block signals; the child starts with none blocked.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    close(fds[1]);
    if (rc != 0) {
      close(fds[0]);
      return NotFoundError("exec: \"" + argv[0] + "\": " + strerror(rc));
    }

    ExecResult result;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    bool timed_out = false;
    char buf[4096];
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        break;
      }
      pollfd p{fds[0], POLLIN, 0};
      int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) continue;  // the loop re-checks the deadline
      ssize_t got = read(fds[0], buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;  // EOF: every writer (the child and its children) closed it
      result.output.append(buf, static_cast<size_t>(got));
    }
    close(fds[0]);
    if (timed_out) kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) {
      return DeadlineExceededError("exec: \"" + argv[0] + "\" still running after " +
                                   std::to_string(timeout.count()) + "ms; killed");
    }
    if (WIFEXITED(status)) {
      result.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      result.exit_code = 128 + WTERMSIG(status);
    }
    return result;
  }
};

}  // namespace

Exec& RealExec() {
  static RealExecImpl exec;
  return exec;
}

std::string DescribeExit(int exit_code) {
  if (exit_code > 128) {
    int sig = exit_code - 128;
    if (sig == SIGKILL) return "signal: killed";
    return std::string("signal: ") + strsignal(sig);
  }
  return "exit status " + std::to_string(exit_code);
}

}  // namespace kvol::os
