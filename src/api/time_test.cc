// RFC 3339 timestamps as metav1.Time and MicroTime read and write them.
#include "api/time.h"

#include <gtest/gtest.h>

namespace kvol::api {
namespace {

TEST(TimeTest, ParsesAndFormatsUTC) {
  auto t = Time::Parse("2022-02-18T13:51:25Z");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->unix_seconds(), 1645192285);
  EXPECT_EQ(t->ToString(), "2022-02-18T13:51:25Z");
  EXPECT_EQ(t->ToMicroString(), "2022-02-18T13:51:25.000000Z");
}

TEST(TimeTest, OffsetsAndFractions) {
  auto t = Time::Parse("2022-02-18T13:51:25.433545445+08:00");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->ToString(), "2022-02-18T05:51:25Z");  // Time drops the fraction
  EXPECT_EQ(t->ToMicroString(), "2022-02-18T05:51:25.433545Z");
  EXPECT_EQ(Time::Parse("1969-12-31T23:59:59Z")->unix_seconds(), -1);
  EXPECT_EQ(Time::Parse("2000-02-29T00:00:00-01:30")->ToString(), "2000-02-29T01:30:00Z");
  EXPECT_EQ(Time::Parse("9999-12-31T23:59:59Z")->ToString(), "9999-12-31T23:59:59Z");
}

TEST(TimeTest, RejectsMalformed) {
  for (const char* bad : {"", "2022-02-18", "2022-02-18T13:51:25", "2022-13-01T00:00:00Z",
                          "2021-02-29T00:00:00Z", "2022-02-18T24:00:00Z", "2022-02-18T13:51:25.Z",
                          "2022-02-18T13:51:25+0800", "2022-02-18T13:51:25Zjunk", "yesterday"}) {
    EXPECT_FALSE(Time::Parse(bad).ok()) << bad;
  }
}

TEST(TimeTest, Ordering) {
  EXPECT_LT(*Time::Parse("2022-02-18T13:51:25Z"), *Time::Parse("2022-02-18T13:51:25.1Z"));
  EXPECT_EQ(*Time::Parse("2022-02-18T13:51:25Z"), *Time::Parse("2022-02-18T14:51:25+01:00"));
}

}  // namespace
}  // namespace kvol::api
