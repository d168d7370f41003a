// SPDY/3.1 framing, as much as Kubernetes' streaming protocols need on either side: the node
// agent is a client of a CRI runtime's streaming server (containerd's), and the API server and
// agent serve `kubectl exec` to clients that speak SPDY (client-go before 1.29, and kubectl
// after it when told not to use WebSockets). SPDY lets each side half-close its stream, so
// that the end of stdin reaches the command. (The WebSocket protocols before v5 cannot say
// that stdin ended.)
//
// The client opens every stream (odd ids) with SYN_STREAM and its headers; the server answers
// each with SYN_REPLY and sends DATA on it; either side ends its half of a stream with the FIN
// flag. Header blocks are one zlib stream per direction, primed with SPDY's dictionary. kvol
// writes its own as uncompressed (stored) deflate blocks, which any zlib reader takes with or
// without the dictionary, and reads its peer's with zlib (HeaderReader).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

struct z_stream_s;  // zlib's

namespace kvol::spdy {

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

using Headers = std::vector<std::pair<std::string, std::string>>;

// The frames one side writes; the header blocks of its SYN_STREAMs and SYN_REPLYs continue one
// zlib stream.
class Writer {
 public:
  std::string SynStream(uint32_t stream, const Headers& headers);
  std::string SynReply(uint32_t stream, const Headers& headers);
  static std::string Data(uint32_t stream, std::string_view data, bool fin);
  static std::string Ping(uint32_t id);

 private:
  std::string HeaderBlock(const Headers& headers);
  bool header_stream_started_ = false;  // the zlib stream's two-byte header is written
};

// SPDY/3's zlib dictionary (1423 bytes), which a peer's header compressor starts from.
std::string_view HeaderDictionary();

// The header blocks of the frames a peer sent, in order: one zlib stream, which may name the
// dictionary. Names are lower case, as SPDY/3 requires; a value holding several is kept
// whole (NUL-separated).
class HeaderReader {
 public:
  HeaderReader();
  ~HeaderReader();
  HeaderReader(const HeaderReader&) = delete;
  HeaderReader& operator=(const HeaderReader&) = delete;
  // InvalidArgument for a block that does not inflate or does not parse; the zlib stream is
  // then broken, and so is the session.
  StatusOr<std::map<std::string, std::string>> Read(std::string_view block);

 private:
  std::unique_ptr<z_stream_s> z_;
};

// The header block of a SYN_STREAM frame's payload (after its associated-to stream, priority
// and slot); "" for one too short to have any.
std::string_view SynStreamHeaderBlock(std::string_view payload);

// Frames from the bytes a peer sent, in order.
class Reader {
 public:
  void Feed(std::string_view bytes) { in_.append(bytes); }
  // The next whole frame; nullopt until one has arrived. InvalidArgument for a frame of
  // another SPDY version, or longer than kMaxFrame (a streaming peer writes what it copies,
  // 32 KiB at a time).
  StatusOr<std::optional<Frame>> Next();

 private:
  static constexpr size_t kMaxFrame = 8 << 20;
  std::string in_;
};

}  // namespace kvol::spdy
