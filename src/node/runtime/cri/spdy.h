// SPDY/3.1 framing, as much as a client of Kubernetes' streaming protocols needs: a CRI
// runtime's streaming server (containerd's) serves `kubectl exec` over SPDY, which lets each
// side half-close its stream, so that the end of stdin reaches the command. (Its WebSocket
// protocols before v5 cannot say that stdin ended.)
//
// The client opens every stream (odd ids) with SYN_STREAM and its headers; the server answers
// each with SYN_REPLY and sends DATA on it; either side ends its half of a stream with the FIN
// flag. Header blocks are one zlib stream per direction; this client writes its own as
// uncompressed (stored) deflate blocks, which any zlib reader takes with or without SPDY's
// dictionary, and never needs to read the server's (the replies' headers say nothing here).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace kvol::node::cri::spdy {

inline constexpr uint8_t kFlagFin = 0x01;

enum class Type : uint16_t {
  kData = 0,  // not a control frame
  kSynStream = 1,
  kSynReply = 2,
  kRstStream = 3,
  kSettings = 4,
  kPing = 6,
  kGoAway = 7,
  kHeaders = 8,
  kWindowUpdate = 9,
};

struct Frame {
  Type type = Type::kData;
  uint8_t flags = 0;
  // The stream a DATA, SYN_STREAM, SYN_REPLY, RST_STREAM, HEADERS or WINDOW_UPDATE frame is
  // about; a PING's id.
  uint32_t stream = 0;
  std::string payload;  // a DATA frame's data; a control frame's data after its stream id
};

// The frames a client writes.
class Writer {
 public:
  std::string SynStream(uint32_t stream,
                        const std::vector<std::pair<std::string, std::string>>& headers);
  static std::string Data(uint32_t stream, std::string_view data, bool fin);
  static std::string Ping(uint32_t id);

 private:
  bool header_stream_started_ = false;  // the zlib stream's two-byte header is written
};

// Frames from the bytes a server sent, in order.
class Reader {
 public:
  void Feed(std::string_view bytes) { in_.append(bytes); }
  // The next whole frame; nullopt until one has arrived. InvalidArgument for a frame of
  // another SPDY version, or longer than kMaxFrame (a streaming server writes what it copies,
  // 32 KiB at a time).
  StatusOr<std::optional<Frame>> Next();

 private:
  static constexpr size_t kMaxFrame = 8 << 20;
  std::string in_;
};

}  // namespace kvol::node::cri::spdy
