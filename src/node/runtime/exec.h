// A process started in a running container for `kubectl exec`: `kvol container-exec` joins
// the container and runs the command; its stdin, stdout and stderr are pipes here (or, with a
// terminal, one pseudo-terminal). One descriptor (an epoll set) becomes readable when output
// is waiting or the process has ended, so a single thread can serve it and the client.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "os/process_stream.h"

namespace kvol::node::runtime {

// A process started in a running container for `kubectl exec`, whatever started it.
using ExecStream = os::ProcessStream;

class ExecSession : public ExecStream {
 public:
  // Starts `kvol_binary container-exec --pid PID1 [--tty] -- argv...`.
  static StatusOr<std::unique_ptr<ExecSession>> Start(const std::string& kvol_binary,
                                                      pid_t container_pid1,
                                                      const std::vector<std::string>& argv,
                                                      bool stdin, bool tty);
  ~ExecSession() override;
  ExecSession(const ExecSession&) = delete;
  ExecSession& operator=(const ExecSession&) = delete;

  int fd() const override { return epoll_; }
  std::optional<int> Collect(std::vector<std::pair<int, std::string>>* out) override;
  void WriteStdin(std::string_view data) override;
  void CloseStdin() override;
  bool StdinBacklogged() const override { return !stdin_backlog_.empty(); }
  void Resize(uint16_t cols, uint16_t rows) override;
  void Kill() override;

 private:
  ExecSession() = default;
  void Drop(int& fd);
  // Writes what of the backlog the process takes now; while some is left, the epoll set also
  // waits for stdin to take more.
  void FlushStdin();
  void EndStdin();

  pid_t pid_ = -1;
  int pidfd_ = -1;
  int epoll_ = -1;
  int stdin_ = -1;   // the write end (or the terminal's master)
  int stdout_ = -1;  // the read end (or the terminal's master)
  int stderr_ = -1;
  bool tty_ = false;
  std::string stdin_backlog_;  // written, not yet taken
  bool stdin_closing_ = false;  // CloseStdin once the backlog is taken
  bool stdin_watched_ = false;  // stdin_ is in the epoll set
  std::optional<int> exit_code_;
};

}  // namespace kvol::node::runtime
