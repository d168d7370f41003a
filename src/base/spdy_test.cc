// SPDY/3 framing: the frames kvol writes, read back field by field (the header blocks through
// zlib, as a peer reads them); a peer's frames split from bytes however they arrive; a peer's
// header blocks, compressed with SPDY's dictionary as Go's framer does, read back.
#include "base/spdy.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <map>

namespace kvol::spdy {
namespace {

uint32_t Be32(std::string_view s, size_t at) {
  return static_cast<uint32_t>(static_cast<uint8_t>(s[at])) << 24 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[at + 1])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[at + 2])) << 8 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[at + 3]));
}

// Inflates the header blocks of consecutive SYN_STREAM frames as one zlib stream.
class Inflater {
 public:
  Inflater() { EXPECT_EQ(inflateInit(&z_), Z_OK); }
  ~Inflater() { inflateEnd(&z_); }
  std::string Next(std::string_view block) {
    std::string out(1 << 18, '\0');
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(block.data()));
    z_.avail_in = static_cast<uInt>(block.size());
    z_.next_out = reinterpret_cast<Bytef*>(out.data());
    z_.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&z_, Z_SYNC_FLUSH);
    EXPECT_TRUE(rc == Z_OK || rc == Z_BUF_ERROR) << rc;
    EXPECT_EQ(z_.avail_in, 0u) << "the whole block is read";
    out.resize(out.size() - z_.avail_out);
    return out;
  }

 private:
  z_stream z_{};
};

struct SynRow {
  const char* name;
  uint32_t stream;
  std::vector<std::pair<std::string, std::string>> headers;
};

TEST(SpdyWriter, SynStreamsAsAServerReadsThem) {
  const SynRow rows[] = {
      {.name = "the error stream, first", .stream = 1, .headers = {{"streamtype", "error"}}},
      {.name = "stdin", .stream = 3, .headers = {{"streamtype", "stdin"}}},
      {.name = "two headers", .stream = 5, .headers = {{"streamtype", "stdout"}, {"port", "80"}}},
      {.name = "a value longer than one stored block",
       .stream = 7,
       .headers = {{"x", std::string(70'000, 'v')}}},
  };
  Writer w;
  Inflater z;
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    const std::string f = w.SynStream(row.stream, row.headers);
    ASSERT_GE(f.size(), 18u);
    EXPECT_EQ(Be32(f, 0), 0x80030001u) << "control, version 3, SYN_STREAM";
    EXPECT_EQ(Be32(f, 4) >> 24, 0u) << "no flags";
    EXPECT_EQ(Be32(f, 4) & 0xffffff, f.size() - 8);
    EXPECT_EQ(Be32(f, 8), row.stream);
    EXPECT_EQ(Be32(f, 12), 0u) << "associated to no stream";
    const std::string block = z.Next(std::string_view(f).substr(18));
    ASSERT_GE(block.size(), 4u);
    ASSERT_EQ(Be32(block, 0), row.headers.size());
    size_t at = 4;
    for (const auto& [name, value] : row.headers) {
      ASSERT_EQ(Be32(block, at), name.size());
      EXPECT_EQ(block.substr(at + 4, name.size()), name);
      at += 4 + name.size();
      ASSERT_EQ(Be32(block, at), value.size());
      EXPECT_EQ(block.substr(at + 4, value.size()), value);
      at += 4 + value.size();
    }
    EXPECT_EQ(at, block.size());
  }
}

TEST(SpdyReader, FramesFromBytesHoweverTheyArrive) {
  // A SYN_REPLY for stream 3 (its header block is not read), DATA with FIN on stream 5, a PING.
  std::string reply = std::string("\x80\x03\x00\x02\x00\x00\x00\x06", 8) +
                      std::string("\x00\x00\x00\x03\x78\x01", 6);
  const std::string bytes = reply + Writer::Data(5, "hello", true) + Writer::Ping(2);
  for (size_t chunk : {bytes.size(), size_t{1}, size_t{7}}) {
    SCOPED_TRACE("chunks of " + std::to_string(chunk));
    Reader r;
    std::vector<Frame> frames;
    for (size_t at = 0; at < bytes.size(); at += chunk) {
      r.Feed(std::string_view(bytes).substr(at, chunk));
      while (true) {
        auto f = r.Next();
        ASSERT_TRUE(f.ok()) << f.status().message();
        if (!*f) break;
        frames.push_back(**f);
      }
    }
    ASSERT_EQ(frames.size(), 3u);
    EXPECT_EQ(frames[0].type, Type::kSynReply);
    EXPECT_EQ(frames[0].stream, 3u);
    EXPECT_EQ(frames[1].type, Type::kData);
    EXPECT_EQ(frames[1].stream, 5u);
    EXPECT_EQ(frames[1].flags, kFlagFin);
    EXPECT_EQ(frames[1].payload, "hello");
    EXPECT_EQ(frames[2].type, Type::kPing);
    EXPECT_EQ(frames[2].stream, 2u);
  }
}

TEST(SpdyWriter, Replies) {
  Writer w;
  Inflater z;
  const std::string reply = w.SynReply(3, {});
  EXPECT_EQ(Be32(reply, 0), 0x80030002u) << "control, version 3, SYN_REPLY";
  EXPECT_EQ(Be32(reply, 4) & 0xffffff, reply.size() - 8);
  EXPECT_EQ(Be32(reply, 8), 3u);
  EXPECT_EQ(z.Next(std::string_view(reply).substr(12)), std::string(4, '\0')) << "no headers";
  const std::string second = w.SynReply(5, {{"a", "b"}});
  EXPECT_EQ(Be32(z.Next(std::string_view(second).substr(12)), 0), 1u)
      << "the second block continues the zlib stream";
}

TEST(SpdyHeaderDictionary, IsTheOnePeersNameByItsChecksum) {
  const std::string_view d = HeaderDictionary();
  EXPECT_EQ(d.size(), 1423u);
  // A peer's zlib stream names its dictionary by this Adler-32 (Go's spdy framer's, and the
  // SPDY/3 draft's).
  EXPECT_EQ(adler32(1, reinterpret_cast<const Bytef*>(d.data()), static_cast<uInt>(d.size())),
            0xe3c6a7c2u);
}

// Header blocks as Go's framer writes them: one zlib stream at the best compression, primed
// with the dictionary, sync-flushed after each block.
class DictionaryDeflater {
 public:
  DictionaryDeflater() {
    EXPECT_EQ(deflateInit(&z_, Z_BEST_COMPRESSION), Z_OK);
    const std::string_view d = HeaderDictionary();
    EXPECT_EQ(deflateSetDictionary(&z_, reinterpret_cast<const Bytef*>(d.data()),
                                   static_cast<uInt>(d.size())),
              Z_OK);
  }
  ~DictionaryDeflater() { deflateEnd(&z_); }
  std::string Block(const Headers& headers) {
    std::string plain;
    auto put = [&](uint32_t v) {
      for (int shift : {24, 16, 8, 0}) plain.push_back(static_cast<char>(v >> shift));
    };
    put(static_cast<uint32_t>(headers.size()));
    for (const auto& [name, value] : headers) {
      put(static_cast<uint32_t>(name.size()));
      plain += name;
      put(static_cast<uint32_t>(value.size()));
      plain += value;
    }
    std::string out(deflateBound(&z_, plain.size()) + 64, '\0');
    z_.next_in = reinterpret_cast<Bytef*>(plain.data());
    z_.avail_in = static_cast<uInt>(plain.size());
    z_.next_out = reinterpret_cast<Bytef*>(out.data());
    z_.avail_out = static_cast<uInt>(out.size());
    EXPECT_EQ(deflate(&z_, Z_SYNC_FLUSH), Z_OK);
    out.resize(out.size() - z_.avail_out);
    return out;
  }

 private:
  z_stream z_{};
};

struct BlockRow {
  const char* name;
  Headers headers;
  std::map<std::string, std::string> want;
};

TEST(SpdyHeaderReader, ReadsConsecutiveBlocksOfOnePeer) {
  const BlockRow rows[] = {
      {.name = "client-go's error stream",
       .headers = {{"streamtype", "error"}},
       .want = {{"streamtype", "error"}}},
      {.name = "the same header again (back-references into the last block)",
       .headers = {{"streamtype", "stdin"}},
       .want = {{"streamtype", "stdin"}}},
      {.name = "none", .headers = {}, .want = {}},
      {.name = "a value bigger than zlib's window and the reader's buffer",
       .headers = {{"x", std::string(100'000, 'v')}, {"streamtype", "resize"}},
       .want = {{"x", std::string(100'000, 'v')}, {"streamtype", "resize"}}},
  };
  SCOPED_TRACE("compressed with the dictionary");
  {
    DictionaryDeflater peer;
    HeaderReader r;
    for (const auto& row : rows) {
      SCOPED_TRACE(row.name);
      auto got = r.Read(peer.Block(row.headers));
      ASSERT_TRUE(got.ok()) << got.status().message();
      EXPECT_EQ(*got, row.want);
    }
  }
  SCOPED_TRACE("stored, as kvol's Writer writes them");
  {
    Writer peer;
    HeaderReader r;
    uint32_t stream = 1;
    for (const auto& row : rows) {
      SCOPED_TRACE(row.name);
      const std::string frame = peer.SynStream(stream += 2, row.headers);
      auto got = r.Read(SynStreamHeaderBlock(std::string_view(frame).substr(12)));
      ASSERT_TRUE(got.ok()) << got.status().message();
      EXPECT_EQ(*got, row.want);
    }
  }
}

TEST(SpdyHeaderReader, RefusesWhatIsNoHeaderBlock) {
  HeaderReader garbage;
  EXPECT_FALSE(garbage.Read("not zlib at all").ok());
  DictionaryDeflater peer;
  const std::string whole = peer.Block({{"streamtype", "error"}});
  HeaderReader cut;
  auto got = cut.Read(std::string_view(whole).substr(0, 2));  // the zlib header only
  EXPECT_FALSE(got.ok()) << "no count";
  // A count of three headers with one present.
  Writer w;
  const std::string frame = w.SynStream(1, {{"a", "b"}});
  std::string block(SynStreamHeaderBlock(std::string_view(frame).substr(12)));
  HeaderReader short_block;
  // The stored block's data starts after the zlib header (2) and the stored block head (5).
  block[2 + 5 + 3] = 3;
  got = short_block.Read(block);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "SPDY header block shorter than its 3 headers");
}

TEST(SpdyReader, RefusesWhatNoSpdy3ServerSends) {
  Reader version2;
  version2.Feed(std::string("\x80\x02\x00\x02\x00\x00\x00\x00", 8));
  EXPECT_FALSE(version2.Next().ok());
  Reader huge;
  huge.Feed(std::string("\x00\x00\x00\x01\x00\x90\x00\x00", 8));  // 9 MiB
  EXPECT_FALSE(huge.Next().ok());
}

}  // namespace
}  // namespace kvol::spdy
