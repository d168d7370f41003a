// The node's volume operations, timed into storage_operation_duration_seconds.
#include "node/volumemanager/operation_metrics.h"

#include <gtest/gtest.h>

#include "metrics/metrics.h"
#include "metrics/testing/text_format.h"

namespace kvol::node::volumemanager {
namespace {

TEST(OperationMetrics, EachRunIsTimedWithItsOutcome) {
  int runs = 0;
  auto ok = Timed("example.com/timed", "volume_mount", [&] {
    ++runs;
    return OkStatus();
  });
  auto failing = Timed("example.com/timed", "volume_mount",
                       [] { return UnavailableError("the driver is restarting"); });
  EXPECT_TRUE(ok().ok());
  EXPECT_TRUE(ok().ok());
  EXPECT_EQ(failing().code(), StatusCode::kUnavailable) << "the operation's own result";
  EXPECT_EQ(runs, 2);

  auto text = metrics::testing::ParseText(metrics::ExposeOnly({&metrics::Registry()}));
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(text->families.at("storage_operation_duration_seconds").type, "histogram");
  const std::map<std::string, std::string> labels = {{"volume_plugin", "example.com/timed"},
                                                     {"operation_name", "volume_mount"},
                                                     {"migrated", "false"}};
  auto with = [&](std::string status) {
    auto l = labels;
    l["status"] = std::move(status);
    return l;
  };
  EXPECT_EQ(*text->Value("storage_operation_duration_seconds_count", with("success")), 2);
  EXPECT_EQ(*text->Value("storage_operation_duration_seconds_count", with("fail-unknown")), 1);
  auto fast = with("success");
  fast["le"] = "0.1";
  EXPECT_EQ(*text->Value("storage_operation_duration_seconds_bucket", fast), 2);
}

}  // namespace
}  // namespace kvol::node::volumemanager
