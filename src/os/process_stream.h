// A process whose standard streams are served from one thread: `kubectl exec` in a container,
// whether the node's agent started it here, a container runtime runs it, or another machine's
// agent serves it over a WebSocket. Poll fd(), then Collect.
#pragma once

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
  // Readable when Collect has something to return.
  virtual int fd() const = 0;
  // The output waiting now, as (1 = stdout, 2 = stderr, bytes); once the process has ended
  // and its output is read, its exit status.
  virtual std::optional<int> Collect(std::vector<std::pair<int, std::string>>* out) = 0;
  virtual void WriteStdin(std::string_view data) = 0;
  virtual void CloseStdin() = 0;
  virtual void Resize(uint16_t cols, uint16_t rows) = 0;
  // Ends the process (the client went away).
  virtual void Kill() = 0;
};

}  // namespace kvol::os
