#include "base/spdy.h"

#include <zlib.h>

#include <algorithm>

namespace kvol::spdy {

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

std::string Writer::HeaderBlock(const Headers& headers) {
  std::string block;
  Put32(&block, static_cast<uint32_t>(headers.size()));
  for (const auto& [name, value] : headers) {
    Put32(&block, static_cast<uint32_t>(name.size()));
    block += name;
    Put32(&block, static_cast<uint32_t>(value.size()));
    block += value;
  }
  std::string out;
  if (!header_stream_started_) {
    out += "\x78\x01";  // zlib: deflate, 32K window, no preset dictionary
    header_stream_started_ = true;
  }
  return out + StoredBlocks(block);
}

std::string Writer::SynStream(uint32_t stream, const Headers& headers) {
  std::string data;
  Put32(&data, stream & 0x7fffffff);
  Put32(&data, 0);                 // associated-to stream: none
  data += std::string("\0\0", 2);  // priority 0, slot 0
  data += HeaderBlock(headers);
  return Control(Type::kSynStream, 0, data);
}

std::string Writer::SynReply(uint32_t stream, const Headers& headers) {
  std::string data;
  Put32(&data, stream & 0x7fffffff);
  data += HeaderBlock(headers);
  return Control(Type::kSynReply, 0, data);
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

std::string_view HeaderDictionary() {
  // Length-prefixed words, then text, as SPDY/3 (section 2.6.10.1) lists them.
  static const std::string dictionary = [] {
    static constexpr std::string_view kWords[] = {"options",
                                                  "head",
                                                  "post",
                                                  "put",
                                                  "delete",
                                                  "trace",
                                                  "accept",
                                                  "accept-charset",
                                                  "accept-encoding",
                                                  "accept-language",
                                                  "accept-ranges",
                                                  "age",
                                                  "allow",
                                                  "authorization",
                                                  "cache-control",
                                                  "connection",
                                                  "content-base",
                                                  "content-encoding",
                                                  "content-language",
                                                  "content-length",
                                                  "content-location",
                                                  "content-md5",
                                                  "content-range",
                                                  "content-type",
                                                  "date",
                                                  "etag",
                                                  "expect",
                                                  "expires",
                                                  "from",
                                                  "host",
                                                  "if-match",
                                                  "if-modified-since",
                                                  "if-none-match",
                                                  "if-range",
                                                  "if-unmodified-since",
                                                  "last-modified",
                                                  "location",
                                                  "max-forwards",
                                                  "pragma",
                                                  "proxy-authenticate",
                                                  "proxy-authorization",
                                                  "range",
                                                  "referer",
                                                  "retry-after",
                                                  "server",
                                                  "te",
                                                  "trailer",
                                                  "transfer-encoding",
                                                  "upgrade",
                                                  "user-agent",
                                                  "vary",
                                                  "via",
                                                  "warning",
                                                  "www-authenticate",
                                                  "method",
                                                  "get",
                                                  "status",
                                                  "200 OK",
                                                  "version",
                                                  "HTTP/1.1",
                                                  "url",
                                                  "public",
                                                  "set-cookie",
                                                  "keep-alive",
                                                  "origin"};
    std::string out;
    for (std::string_view w : kWords) {
      Put32(&out, static_cast<uint32_t>(w.size()));
      out += w;
    }
    out +=
        "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504"
        "505203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad "
        "Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not "
        "Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec "
        "00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,"
        "image/gif,application/xml,application/xhtml+xml,text/plain,text/javascript,"
        "publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";
    return out;
  }();
  return dictionary;
}

HeaderReader::HeaderReader() : z_(std::make_unique<z_stream_s>()) { inflateInit(z_.get()); }

HeaderReader::~HeaderReader() { inflateEnd(z_.get()); }

StatusOr<std::map<std::string, std::string>> HeaderReader::Read(std::string_view block) {
  // A block carries whole headers: a peer flushes its compressor after each.
  static constexpr size_t kMaxBlock = 1 << 20;
  std::string plain;
  z_->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(block.data()));
  z_->avail_in = static_cast<uInt>(block.size());
  while (true) {
    char buf[16 << 10];
    z_->next_out = reinterpret_cast<Bytef*>(buf);
    z_->avail_out = sizeof buf;
    int rc = inflate(z_.get(), Z_SYNC_FLUSH);
    if (rc == Z_NEED_DICT) {
      const std::string_view d = HeaderDictionary();
      rc = inflateSetDictionary(z_.get(), reinterpret_cast<const Bytef*>(d.data()),
                                static_cast<uInt>(d.size()));
      if (rc != Z_OK) return InvalidArgumentError("SPDY header block names another dictionary");
      continue;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR && rc != Z_STREAM_END) {
      return InvalidArgumentError(std::string("SPDY header block does not inflate: ") +
                                  (z_->msg ? z_->msg : std::to_string(rc)));
    }
    plain.append(buf, sizeof buf - z_->avail_out);
    if (plain.size() > kMaxBlock) return InvalidArgumentError("SPDY header block over 1 MiB");
    // Done once all of the block is taken and zlib had room to spare for what it gave; a
    // Z_BUF_ERROR with room to spare means it can make no more progress.
    if (rc == Z_STREAM_END || (z_->avail_out > 0 && (z_->avail_in == 0 || rc == Z_BUF_ERROR))) {
      break;
    }
  }
  std::string_view in = plain;
  auto take32 = [&](uint32_t* v) {
    if (in.size() < 4) return false;
    *v = Get32(in);
    in.remove_prefix(4);
    return true;
  };
  auto take = [&](std::string* s) {
    uint32_t n = 0;
    if (!take32(&n) || in.size() < n) return false;
    s->assign(in.substr(0, n));
    in.remove_prefix(n);
    return true;
  };
  std::map<std::string, std::string> headers;
  uint32_t count = 0;
  if (!take32(&count)) return InvalidArgumentError("SPDY header block without a count");
  for (uint32_t i = 0; i < count; ++i) {
    std::string name, value;
    if (!take(&name) || !take(&value)) {
      return InvalidArgumentError("SPDY header block shorter than its " + std::to_string(count) +
                                  " headers");
    }
    headers[std::move(name)] = std::move(value);
  }
  return headers;
}

std::string_view SynStreamHeaderBlock(std::string_view payload) {
  return payload.size() < 6 ? std::string_view() : payload.substr(6);
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

}  // namespace kvol::spdy
