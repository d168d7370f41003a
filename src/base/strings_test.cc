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

TEST(StringsTest, Utf8) {
  EXPECT_EQ(FirstInvalidUtf8("plain ascii"), std::string_view::npos);
  EXPECT_EQ(FirstInvalidUtf8("概述 é \xF0\x9F\x98\x80"), std::string_view::npos);
  EXPECT_EQ(FirstInvalidUtf8("ab\xD9\xD9"), 2u);             // stray continuation
  EXPECT_EQ(FirstInvalidUtf8("\xC0\xAF"), 0u);                // overlong
  EXPECT_EQ(FirstInvalidUtf8("x\xED\xA0\x80"), 1u);          // surrogate
  EXPECT_EQ(FirstInvalidUtf8("\xF4\x90\x80\x80"), 0u);      // above U+10FFFF
  EXPECT_EQ(FirstInvalidUtf8("\xE6\xA6"), 0u);                // truncated
}

TEST(StringsTest, SameSecret) {
  struct Case {
    std::string_view a, b;
    bool same;
  };
  const Case cases[] = {
      {.a = "token", .b = "token", .same = true},
      {.a = "", .b = "", .same = true},
      {.a = "token", .b = "tokem", .same = false},
      {.a = "token", .b = "Token", .same = false},
      {.a = "token", .b = "token2", .same = false},
      {.a = "token", .b = "", .same = false},
  };
  for (const auto& c : cases) EXPECT_EQ(SameSecret(c.a, c.b), c.same) << c.a << " / " << c.b;
}

TEST(StringsTest, TrimRight) {
  EXPECT_EQ(TrimRight("mke2fs failed\r\n \t"), "mke2fs failed");
  EXPECT_EQ(TrimRight(" keeps leading"), " keeps leading");
  EXPECT_EQ(TrimRight("\n\n"), "");
  EXPECT_EQ(TrimRight(""), "");
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

TEST(StringsTest, Base64RoundTripsAndReportsGoOffsets) {
  for (std::string_view in : {"", "f", "fo", "foo", "foob", "fooba", "foobar", "\0\xff\x10"}) {
    std::string enc = Base64Encode(in);
    auto dec = Base64Decode(enc);
    ASSERT_TRUE(dec) << enc;
    EXPECT_EQ(*dec, in);
  }
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(*Base64Decode("Zm9v\r\nYmE="), "fooba");  // line breaks are skipped
  size_t bad = 99;
  EXPECT_FALSE(Base64Decode("not base64!", &bad));
  EXPECT_EQ(bad, 3u);
  EXPECT_FALSE(Base64Decode("Zm9vY", &bad));  // short final group
  EXPECT_EQ(bad, 4u);
  EXPECT_FALSE(Base64Decode("Zm=v", &bad));  // padding in the middle
  EXPECT_EQ(bad, 2u);
}

}  // namespace
}  // namespace kvol
