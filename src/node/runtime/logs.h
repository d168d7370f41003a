// Reading a container's log file as `kubectl logs` asks: the last N lines, at most M bytes,
// and, following, what the container writes next until it stops.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"

namespace kvol::node::runtime {

class LogReader {
 public:
  // `still_written` (for following) says whether the container is still writing the file;
  // null to read what is there and stop.
  static StatusOr<std::unique_ptr<LogReader>> Open(const std::string& path,
                                                   std::optional<int64_t> tail_lines,
                                                   std::optional<int64_t> limit_bytes,
                                                   std::function<bool()> still_written);
  ~LogReader();
  LogReader(const LogReader&) = delete;
  LogReader& operator=(const LogReader&) = delete;

  // The next chunk; false at the end. Following, waits for the file to grow.
  bool Next(std::string* chunk);

 private:
  LogReader() = default;
  int fd_ = -1;
  int inotify_ = -1;
  std::optional<int64_t> remaining_;  // bytes still allowed by limitBytes
  std::function<bool()> still_written_;
  bool last_read_ = false;  // the writer stopped: one more read to the end, then done
};

// Where the last `lines` lines of the file start (0 for the whole file).
int64_t TailOffset(int fd, int64_t lines);

}  // namespace kvol::node::runtime
