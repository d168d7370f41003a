// Status and StatusOr.
#include "base/status.h"

#include <gtest/gtest.h>

namespace kvol {
namespace {

StatusOr<int> Half(int v) {
  if (v % 2) return InvalidArgumentError("odd");
  return v / 2;
}

Status Quarter(int v, int* out) {
  KVOL_ASSIGN_OR_RETURN(int half, Half(v));
  KVOL_ASSIGN_OR_RETURN(*out, Half(half));
  return OkStatus();
}

TEST(StatusTest, OkAndErrors) {
  EXPECT_TRUE(OkStatus().ok());
  EXPECT_EQ(OkStatus().ToString(), "OK");
  Status s = NotFoundError("pod \"x\" not found");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NOT_FOUND: pod \"x\" not found");
  EXPECT_EQ(s.Annotate("get").message(), "get: pod \"x\" not found");
  EXPECT_TRUE(OkStatus().Annotate("x").ok());
}

TEST(StatusTest, StatusOrAndMacros) {
  auto h = Half(4);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, 2);
  EXPECT_EQ(Half(3).status().code(), StatusCode::kInvalidArgument);
  int q = 0;
  EXPECT_TRUE(Quarter(8, &q).ok());
  EXPECT_EQ(q, 2);
  EXPECT_EQ(Quarter(6, &q).message(), "odd");
}

TEST(StatusTest, StatusOrFromAnOkStatusIsAnError) {
  StatusOr<int> v = OkStatus();
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInternal);
  EXPECT_EQ(v.status().message(), "StatusOr built from an OK status");
}

}  // namespace
}  // namespace kvol
