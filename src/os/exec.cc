// The real Exec: posix_spawnp with one pipe for stdout and stderr, read until EOF or deadline.
#include "os/exec.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "os/spawn.h"

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
    CloseInheritedDescriptors(&actions);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    SetChildSpawnAttributes(&attr);
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

    // Read until the program exits (then take what is left in the pipe: a helper it left
    // running may hold the pipe open) or the deadline passes.
    ExecResult result;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const int pidfd = PidFdOpen(pid);  // -1: wait without a deadline
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    bool timed_out = false, exited = false, eof = false;
    char buf[4096];
    auto drain = [&] {
      for (;;) {
        ssize_t got = read(fds[0], buf, sizeof buf);
        if (got > 0) {
          result.output.append(buf, static_cast<size_t>(got));
          continue;
        }
        if (got < 0 && errno == EINTR) continue;
        if (got == 0) eof = true;
        return;
      }
    };
    while (!exited && !(eof && pidfd < 0)) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        break;
      }
      pollfd p[2] = {{eof ? -1 : fds[0], POLLIN, 0}, {pidfd, POLLIN, 0}};
      int n = poll(p, 2, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
      if (n < 0 && errno != EINTR) break;
      if (n <= 0) continue;
      if (p[0].revents) drain();
      if (p[1].revents) exited = true;
    }
    if (!timed_out) drain();
    close(fds[0]);
    if (timed_out) kill(-pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (pidfd >= 0) close(pidfd);
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

int PidFdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

void CloseInheritedDescriptors(posix_spawn_file_actions_t* actions) {
  posix_spawn_file_actions_addclosefrom_np(actions, 3);
}

void SetChildSpawnAttributes(posix_spawnattr_t* attr) {
  sigset_t none, defaults;
  sigemptyset(&none);
  sigfillset(&defaults);
  posix_spawnattr_setsigmask(attr, &none);
  posix_spawnattr_setsigdefault(attr, &defaults);
  posix_spawnattr_setpgroup(attr, 0);
  posix_spawnattr_setflags(attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
}

std::string DescribeExit(int exit_code) {
  if (exit_code > 128) {
    int sig = exit_code - 128;
    if (sig == SIGKILL) return "signal: killed";
    return std::string("signal: ") + strsignal(sig);
  }
  return "exit status " + std::to_string(exit_code);
}

int SpawnLogged(const std::vector<std::string>& argv, const std::string& log_path, pid_t* pid) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0640);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  CloseInheritedDescriptors(&actions);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  SetChildSpawnAttributes(&attr);
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const int rc = posix_spawnp(pid, args[0].c_str(), &actions, &attr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc;
}

}  // namespace kvol::os
