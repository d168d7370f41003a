// The CRI log format that containerd writes a container's stdout and stderr in, and that
// kubelet reads for `kubectl logs`: one entry per line,
//   <RFC 3339 time, nanoseconds> <stdout|stderr> <P|F> <content>
// where F ends a line of the container's output and P marks a part of a longer line that the
// next entry continues.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace kvol::node::cri {

struct CriLogEntry {
  std::string_view time;
  std::string_view stream;  // "stdout" or "stderr"
  bool partial = false;     // P: the line goes on in the next entry
  std::string_view content;
};

// One line of a CRI log file, without its newline. InvalidArgument, in kubelet's words, for a
// line that is not an entry.
StatusOr<CriLogEntry> ParseCriLogLine(std::string_view line);

// The container's output from a CRI log file read in chunks, as `kubectl logs` shows it: the
// entries' content, each full line ended with a newline, each prefixed by its time when
// `timestamps` (--timestamps). Lines that are not entries are skipped, as kubelet skips them.
class CriLogDecoder {
 public:
  explicit CriLogDecoder(bool timestamps = false) : timestamps_(timestamps) {}

  // Appends to `out` the output of the entries `chunk` completes; a line cut by the end of the
  // chunk waits for the next.
  void Feed(std::string_view chunk, std::string* out);
  // The lines skipped so far.
  int skipped() const { return skipped_; }

 private:
  void Decode(std::string_view line, std::string* out);

  const bool timestamps_;
  std::string pending_;  // a line not yet ended
  int skipped_ = 0;
};

}  // namespace kvol::node::cri
