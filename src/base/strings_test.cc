// String helpers.
#include "base/strings.h"

#include <gtest/gtest.h>

namespace kvol {
namespace {

TEST(StringsTest, ParseInt64AsGo) {
  int64_t v = 0;
  EXPECT_TRUE(ParseInt64("42", &v));
  EXPECT_EQ(v, 42);
  EXPECT_TRUE(ParseInt64("+7", &v));
  EXPECT_EQ(v, 7);
  EXPECT_TRUE(ParseInt64("-9223372036854775808", &v));
  EXPECT_EQ(v, INT64_MIN);
  for (const char* bad : {"", "+", "-", "+-1", "1.0", "0x10", " 1", "1 ", "9223372036854775808"}) {
    EXPECT_FALSE(ParseInt64(bad, &v)) << bad;
  }
}

TEST(StringsTest, LowerAndLines) {
  EXPECT_EQ(AsciiLower("Kvol.IO/Local-Path"), "kvol.io/local-path");
  int line, col;
  LineColumn("ab\ncd\nef", 4, &line, &col);
  EXPECT_EQ(line, 2);
  EXPECT_EQ(col, 2);
  LineColumn("ab", 0, &line, &col);
  EXPECT_EQ(line, 1);
  EXPECT_EQ(col, 1);
}

}  // namespace
}  // namespace kvol
