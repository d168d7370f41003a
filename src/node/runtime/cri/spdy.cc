#include "node/runtime/cri/spdy.h"

namespace kvol::node::cri::spdy {

namespace {

constexpr uint16_t kVersion = 3;

void Put32(std::string* out, uint32_t v) {
  out->push_back(static_cast<char>(v >> 24));
  out->push_back(static_cast<char>(v >> 16));
  out->push_back(static_cast<char>(v >> 8));
  out->push_back(static_cast<char>(v));
}

uint32_t Get32(std::string_view in) {
  return static_cast<uint32_t>(static_cast<uint8_t>(in[0])) << 24 |
         static_cast<uint32_t>(static_cast<uint8_t>(in[1])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(in[2])) << 8 |
         static_cast<uint32_t>(static_cast<uint8_t>(in[3]));
}

// The eight-byte head every frame starts with: the control bit and version and type, or the
// stream id; then the flags and the length of what follows.
std::string Head(uint32_t first, uint8_t flags, size_t length) {
  std::string out;
  Put32(&out, first);
  Put32(&out, static_cast<uint32_t>(flags) << 24 | static_cast<uint32_t>(length));
  return out;
}

std::string Control(Type type, uint8_t flags, std::string_view data) {
  return Head(0x80000000u | kVersion << 16 | static_cast<uint16_t>(type), flags, data.size()) +
         std::string(data);
}

// `data` as deflate blocks stored uncompressed (each at most 65535 bytes, none final), then an
// empty stored block, as zlib's sync flush ends its output: a reader that meets it hands out
// what it has, where otherwise it would first read on for the next block, past the frame.
std::string StoredBlocks(std::string_view data) {
  std::string out;
  while (!data.empty()) {
    const size_t n = std::min<size_t>(data.size(), 0xffff);
    out.push_back(0);  // BFINAL 0, BTYPE 00 (stored), then padding to the byte
    out.push_back(static_cast<char>(n & 0xff));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(~n & 0xff));
    out.push_back(static_cast<char>((~n >> 8) & 0xff));
    out.append(data.substr(0, n));
    data.remove_prefix(n);
  }
  out += std::string("\0\0\0\xff\xff", 5);
  return out;
}

}  // namespace

std::string Writer::SynStream(uint32_t stream,
                              const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string block;
  Put32(&block, static_cast<uint32_t>(headers.size()));
  for (const auto& [name, value] : headers) {
    Put32(&block, static_cast<uint32_t>(name.size()));
    block += name;
    Put32(&block, static_cast<uint32_t>(value.size()));
    block += value;
  }
  std::string data;
  Put32(&data, stream & 0x7fffffff);
  Put32(&data, 0);                 // associated-to stream: none
  data += std::string("\0\0", 2);  // priority 0, slot 0
  if (!header_stream_started_) {
    data += "\x78\x01";  // zlib: deflate, 32K window, no preset dictionary
    header_stream_started_ = true;
  }
  data += StoredBlocks(block);
  return Control(Type::kSynStream, 0, data);
}

std::string Writer::Data(uint32_t stream, std::string_view data, bool fin) {
  if (data.size() > 0xffffff) return "";  // no frame holds it: callers send at most 32 KiB
  return Head(stream & 0x7fffffff, fin ? kFlagFin : 0, data.size()) + std::string(data);
}

std::string Writer::Ping(uint32_t id) {
  std::string data;
  Put32(&data, id);
  return Control(Type::kPing, 0, data);
}

StatusOr<std::optional<Frame>> Reader::Next() {
  if (in_.size() < 8) return std::optional<Frame>();
  const uint32_t first = Get32(in_);
  const uint32_t second = Get32(std::string_view(in_).substr(4));
  const size_t length = second & 0xffffff;
  if (length > kMaxFrame) {
    return InvalidArgumentError("SPDY frame of " + std::to_string(length) + " bytes");
  }
  if (in_.size() < 8 + length) return std::optional<Frame>();
  Frame f;
  f.flags = static_cast<uint8_t>(second >> 24);
  std::string_view data = std::string_view(in_).substr(8, length);
  if (first & 0x80000000u) {
    const uint16_t version = (first >> 16) & 0x7fff;
    if (version != kVersion) {
      return InvalidArgumentError("SPDY frame of version " + std::to_string(version) + ", not 3");
    }
    f.type = static_cast<Type>(first & 0xffff);
    if (f.type != Type::kSettings && f.type != Type::kGoAway && data.size() >= 4) {
      f.stream = Get32(data) & (f.type == Type::kPing ? 0xffffffffu : 0x7fffffffu);
      data.remove_prefix(4);
    }
  } else {
    f.stream = first & 0x7fffffff;
  }
  f.payload = std::string(data);
  in_.erase(0, 8 + length);
  return std::optional<Frame>(std::move(f));
}

}  // namespace kvol::node::cri::spdy
