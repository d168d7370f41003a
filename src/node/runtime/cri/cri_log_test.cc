#include "node/runtime/cri/cri_log.h"

#include <gtest/gtest.h>

namespace kvol::node::cri {
namespace {

TEST(CriLogTest, ParseLine) {
  struct Row {
    std::string line;
    std::string time, stream, content;
    bool partial = false;
    std::string error;
  };
  const std::vector<Row> rows = {
      {.line = "2016-10-06T00:17:09.669794202Z stdout F hello",
       .time = "2016-10-06T00:17:09.669794202Z",
       .stream = "stdout",
       .content = "hello"},
      {.line = "2016-10-06T00:17:09.669794203Z stderr P part of a ",
       .time = "2016-10-06T00:17:09.669794203Z",
       .stream = "stderr",
       .content = "part of a ",
       .partial = true},
      {.line = "2016-10-06T00:17:09.669794204Z stdout F ",
       .time = "2016-10-06T00:17:09.669794204Z",
       .stream = "stdout",
       .content = ""},
      {.line = "2016-10-06T00:17:09.669794204Z stdout P",
       .time = "2016-10-06T00:17:09.669794204Z",
       .stream = "stdout",
       .content = "",
       .partial = true},
      {.line = "2016-10-06T00:17:09Z stdout F  two  spaces kept ",
       .time = "2016-10-06T00:17:09Z",
       .stream = "stdout",
       .content = " two  spaces kept "},
      {.line = "", .error = "timestamp is not found"},
      {.line = "no-spaces-at-all", .error = "timestamp is not found"},
      {.line = "2016-10-06T00:17:09Z stdin F x", .error = "stream type is not found"},
      {.line = "2016-10-06T00:17:09Z stdout", .error = "stream type is not found"},
      {.line = "2016-10-06T00:17:09Z stdout X x", .error = "log tag is not found"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.line);
    auto e = ParseCriLogLine(row.line);
    if (!row.error.empty()) {
      ASSERT_FALSE(e.ok());
      EXPECT_EQ(e.status().message(), row.error);
      continue;
    }
    ASSERT_TRUE(e.ok()) << e.status().message();
    EXPECT_EQ(e->time, row.time);
    EXPECT_EQ(e->stream, row.stream);
    EXPECT_EQ(e->content, row.content);
    EXPECT_EQ(e->partial, row.partial);
  }
}

constexpr char kLog[] =
    "2024-01-01T00:00:00.000000001Z stdout F first\n"
    "2024-01-01T00:00:00.000000002Z stderr P a long \n"
    "2024-01-01T00:00:00.000000003Z stderr F line\n"
    "not an entry\n"
    "2024-01-01T00:00:00.000000004Z stdout F \n";

TEST(CriLogTest, DecodesInAnyChunks) {
  // Whatever the chunks, the output is the same: cut at every size from 1 to the whole.
  const std::string want = "first\na long line\n\n";
  const std::string log = kLog;
  for (size_t size = 1; size <= log.size(); ++size) {
    SCOPED_TRACE(size);
    CriLogDecoder d;
    std::string out;
    for (size_t at = 0; at < log.size(); at += size) d.Feed(log.substr(at, size), &out);
    EXPECT_EQ(out, want);
    EXPECT_EQ(d.skipped(), 1);
  }
}

TEST(CriLogTest, Timestamps) {
  CriLogDecoder d(/*timestamps=*/true);
  std::string out;
  d.Feed(kLog, &out);
  EXPECT_EQ(out,
            "2024-01-01T00:00:00.000000001Z first\n"
            "2024-01-01T00:00:00.000000002Z a long 2024-01-01T00:00:00.000000003Z line\n"
            "2024-01-01T00:00:00.000000004Z \n");
}

TEST(CriLogTest, AnUnendedLineWaits) {
  CriLogDecoder d;
  std::string out;
  d.Feed("2024-01-01T00:00:00Z stdout F not ended yet", &out);
  EXPECT_EQ(out, "");
  d.Feed("\n", &out);
  EXPECT_EQ(out, "not ended yet\n");
}

}  // namespace
}  // namespace kvol::node::cri
