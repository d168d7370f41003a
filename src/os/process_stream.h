// A process whose standard streams are served from one thread: `kubectl exec` in a container,
// whether the node's agent started it here, a container runtime runs it, or another machine's
// agent serves it over a WebSocket. Poll fd(), then Collect.
#pragma once

#include <poll.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvol::os {

class ProcessStream {
 public:
  virtual ~ProcessStream() = default;
  // Ready for PollEvents() when Collect has something to do: output to return, or stdin that
  // can move on.
  virtual int fd() const = 0;
  virtual short PollEvents() const { return POLLIN; }
  // The output waiting now, as (1 = stdout, 2 = stderr, bytes); once the process has ended
  // and its output is read, its exit status. Moves on what stdin it can.
  virtual std::optional<int> Collect(std::vector<std::pair<int, std::string>>* out) = 0;
  // Never blocks: what the process cannot take yet is kept, and moved on by Collect.
  virtual void WriteStdin(std::string_view data) = 0;
  // Stdin is kept that the process has not taken: the server stops reading its client's input
  // until it has (so that a process slow to read holds its client back, and one that writes
  // while it reads is never stuck behind its own input), and keeps collecting output.
  virtual bool StdinBacklogged() const { return false; }
  virtual void CloseStdin() = 0;
  virtual void Resize(uint16_t cols, uint16_t rows) = 0;
  // Ends the process (the client went away).
  virtual void Kill() = 0;
};

}  // namespace kvol::os
