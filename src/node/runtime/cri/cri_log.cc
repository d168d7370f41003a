// CriLog: entries of the CRI log format, and a container's output decoded from them.
#include "node/runtime/cri/cri_log.h"

#include <optional>

namespace kvol::node::cri {
namespace {

// The next space-delimited field of `line`, removed from it with its space; nullopt when no
// space follows it.
std::optional<std::string_view> Field(std::string_view* line) {
  const size_t space = line->find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view f = line->substr(0, space);
  line->remove_prefix(space + 1);
  return f;
}

}  // namespace

StatusOr<CriLogEntry> ParseCriLogLine(std::string_view line) {
  CriLogEntry e;
  auto time = Field(&line);
  if (!time || time->empty()) return InvalidArgumentError("timestamp is not found");
  e.time = *time;
  auto stream = Field(&line);
  if (!stream || (*stream != "stdout" && *stream != "stderr")) {
    return InvalidArgumentError("stream type is not found");
  }
  e.stream = *stream;
  // The tag may be followed by the content or end the line (an empty partial entry).
  std::optional<std::string_view> tag = Field(&line);
  if (!tag) {
    tag = line;
    line = {};
  }
  if (*tag != "P" && *tag != "F") return InvalidArgumentError("log tag is not found");
  e.partial = *tag == "P";
  e.content = line;
  return e;
}

void CriLogDecoder::Decode(std::string_view line, std::string* out) {
  auto entry = ParseCriLogLine(line);
  if (!entry.ok()) {
    ++skipped_;
    return;
  }
  if (timestamps_) {
    out->append(entry->time);
    out->push_back(' ');
  }
  out->append(entry->content);
  if (!entry->partial) out->push_back('\n');
}

void CriLogDecoder::Feed(std::string_view chunk, std::string* out) {
  while (!chunk.empty()) {
    const size_t nl = chunk.find('\n');
    if (nl == std::string_view::npos) {
      pending_.append(chunk);
      return;
    }
    if (pending_.empty()) {
      Decode(chunk.substr(0, nl), out);
    } else {
      pending_.append(chunk.substr(0, nl));
      Decode(pending_, out);
      pending_.clear();
    }
    chunk.remove_prefix(nl + 1);
  }
}

}  // namespace kvol::node::cri
