// ExecSession: posix_spawn with pipes or a pseudo-terminal, epoll over the outputs and a pidfd.
#include "node/runtime/exec.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "os/exec.h"

extern char** environ;

namespace kvol::node::runtime {

StatusOr<std::unique_ptr<ExecSession>> ExecSession::Start(const std::string& kvol_binary,
                                                          pid_t container_pid1,
                                                          const std::vector<std::string>& argv,
                                                          bool stdin, bool tty) {
  std::unique_ptr<ExecSession> s(new ExecSession());
  s->tty_ = tty;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  int child_fds[3] = {-1, -1, -1};  // closed here once the child has them
  auto cleanup = [&] {
    posix_spawn_file_actions_destroy(&actions);
    for (int& fd : child_fds) {
      if (fd >= 0) close(fd);
      fd = -1;
    }
  };
  if (tty) {
    // From the container's own devpts, so that the terminal is /dev/pts/N inside it (`tty`
    // works); the node's for a container started without one.
    const std::string ptmx = "/proc/" + std::to_string(container_pid1) + "/root/dev/pts/ptmx";
    int master = open(ptmx.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0) master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0 || unlockpt(master) != 0) {
      if (master >= 0) close(master);
      cleanup();
      return InternalError(std::string("pseudo-terminal: ") + std::strerror(errno));
    }
    // The peer of this master, whichever devpts it is on (no path lookup).
    int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0) {
      close(master);
      cleanup();
      return InternalError(std::string("pseudo-terminal: ") + std::strerror(errno));
    }
    child_fds[0] = slave;
    for (int fd = 0; fd < 3; ++fd) posix_spawn_file_actions_adddup2(&actions, slave, fd);
    s->stdin_ = master;
    s->stdout_ = fcntl(master, F_DUPFD_CLOEXEC, 0);
  } else {
    int in[2] = {-1, -1}, out[2], err[2];
    if ((stdin && pipe2(in, O_CLOEXEC) != 0) || pipe2(out, O_CLOEXEC) != 0 ||
        pipe2(err, O_CLOEXEC) != 0) {
      cleanup();
      return InternalError(std::string("pipe: ") + std::strerror(errno));
    }
    if (stdin) {
      posix_spawn_file_actions_adddup2(&actions, in[0], 0);
      child_fds[0] = in[0];
      s->stdin_ = in[1];
    } else {
      posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    }
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    child_fds[1] = out[1];
    child_fds[2] = err[1];
    s->stdout_ = out[0];
    s->stderr_ = err[0];
  }
  os::CloseInheritedDescriptors(&actions);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  os::SetChildSpawnAttributes(&attr);
  std::vector<std::string> args = {kvol_binary, "container-exec", "--pid",
                                   std::to_string(container_pid1)};
  if (tty) args.push_back("--tty");
  args.push_back("--");
  args.insert(args.end(), argv.begin(), argv.end());
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  int rc = posix_spawn(&s->pid_, kvol_binary.c_str(), &actions, &attr, cargs.data(), environ);
  posix_spawnattr_destroy(&attr);
  cleanup();
  if (rc != 0) {
    s->pid_ = -1;
    return InternalError("start " + kvol_binary + ": " + std::strerror(rc));
  }
  s->pidfd_ = os::PidFdOpen(s->pid_);
  s->epoll_ = epoll_create1(EPOLL_CLOEXEC);
  if (s->stdin_ >= 0) fcntl(s->stdin_, F_SETFL, fcntl(s->stdin_, F_GETFL) | O_NONBLOCK);
  for (int fd : {s->stdout_, s->stderr_, s->pidfd_}) {
    if (fd < 0) continue;
    if (fd != s->pidfd_) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(s->epoll_, EPOLL_CTL_ADD, fd, &ev);
  }
  return s;
}

ExecSession::~ExecSession() {
  if (!exit_code_ && pid_ > 0) {
    Kill();
    waitpid(pid_, nullptr, 0);
  }
  for (int* fd : {&stdin_, &stdout_, &stderr_, &pidfd_, &epoll_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

void ExecSession::Drop(int& fd) {
  if (fd < 0) return;
  epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  fd = -1;
}

std::optional<int> ExecSession::Collect(std::vector<std::pair<int, std::string>>* out) {
  out->clear();
  if (!stdin_backlog_.empty()) FlushStdin();
  auto drain = [&](int& fd, int stream) {
    char buf[32 * 1024];
    while (fd >= 0) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n > 0) {
        out->emplace_back(stream, std::string(buf, static_cast<size_t>(n)));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      Drop(fd);  // the end (EIO from a terminal whose last user closed it)
    }
  };
  drain(stdout_, 1);
  drain(stderr_, 2);
  if (!exit_code_ && pid_ > 0) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      Drop(pidfd_);
      // What it wrote before it ended is read now; what a process it left behind writes later
      // is not waited for.
      drain(stdout_, 1);
      drain(stderr_, 2);
    }
  }
  return exit_code_;
}

void ExecSession::WriteStdin(std::string_view data) {
  if (stdin_ < 0 || stdin_closing_) return;
  stdin_backlog_.append(data);
  FlushStdin();
}

void ExecSession::FlushStdin() {
  size_t done = 0;
  while (stdin_ >= 0 && done < stdin_backlog_.size()) {
    const ssize_t n = write(stdin_, stdin_backlog_.data() + done, stdin_backlog_.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    // The process stopped reading (EPIPE): what it did not take is dropped.
    done = stdin_backlog_.size();
  }
  stdin_backlog_.erase(0, done);
  const bool watch = stdin_ >= 0 && !stdin_backlog_.empty();
  if (watch != stdin_watched_) {
    epoll_event ev{};
    ev.events = EPOLLOUT;
    ev.data.fd = stdin_;
    epoll_ctl(epoll_, watch ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, stdin_, &ev);
    stdin_watched_ = watch;
  }
  if (stdin_backlog_.empty() && stdin_closing_) EndStdin();
}

void ExecSession::CloseStdin() {
  if (tty_) {
    // A terminal has no end of input of its own: end-of-file is ^D.
    WriteStdin("\x04");
    return;
  }
  if (stdin_ < 0 || stdin_closing_) return;
  stdin_closing_ = true;
  FlushStdin();
}

void ExecSession::EndStdin() {
  stdin_closing_ = false;
  close(stdin_);
  stdin_ = -1;
}

void ExecSession::Resize(uint16_t cols, uint16_t rows) {
  if (!tty_ || stdin_ < 0) return;
  winsize ws{};
  ws.ws_col = cols;
  ws.ws_row = rows;
  ioctl(stdin_, TIOCSWINSZ, &ws);
}

void ExecSession::Kill() {
  if (pid_ > 0 && !exit_code_) kill(-pid_, SIGKILL);
}

}  // namespace kvol::node::runtime
