// The process's exposition, and the strict reader the tests check expositions with.
#include "metrics/metrics.h"

#include <gtest/gtest.h>

#include <ctime>

#include "metrics/testing/text_format.h"

namespace kvol::metrics {
namespace {

using testing::ParseText;

TEST(TextFormat, AcceptsWhatAScraperAccepts) {
  const char* text =
      "# HELP requests_total Requests.\n"
      "# TYPE requests_total counter\n"
      "requests_total{code=\"200\",verb=\"GET\"} 3\n"
      "requests_total{code=\"404\",verb=\"GET\"} 1 1700000000000\n"
      "# comment\n"
      "\n"
      "# TYPE latency_seconds histogram\n"
      "latency_seconds_bucket{verb=\"GET\",le=\"0.1\"} 1\n"
      "latency_seconds_bucket{verb=\"GET\",le=\"1\"} 3\n"
      "latency_seconds_bucket{verb=\"GET\",le=\"+Inf\"} 4\n"
      "latency_seconds_sum{verb=\"GET\"} 2.5\n"
      "latency_seconds_count{verb=\"GET\"} 4\n"
      "# TYPE up gauge\n"
      "up{path=\"a \\\"b\\\" \\\\ c\\nd\"} -1.5e3\n"
      "no_type_at_all NaN\n";
  auto got = ParseText(text);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->families.at("requests_total").type, "counter");
  EXPECT_EQ(got->families.at("requests_total").help, "Requests.");
  EXPECT_EQ(got->families.at("latency_seconds").samples.size(), 5u);
  EXPECT_EQ(got->families.at("up").samples[0].labels.at("path"), "a \"b\" \\ c\nd");
  EXPECT_EQ(*got->Value("requests_total", {{"code", "404"}}), 1);
  EXPECT_EQ(*got->Value("latency_seconds_count"), 4);
  EXPECT_EQ(got->Value("requests_total").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(got->Value("absent").status().code(), StatusCode::kNotFound);
}

TEST(TextFormat, RefusesWhatAScraperRefuses) {
  struct Case {
    std::string name, text, error;
  };
  const Case cases[] = {
      {"no final newline", "a 1", "does not end with a newline"},
      {"bad name", "1a 1\n", "bad metric name"},
      {"bad label name", "a{1x=\"v\"} 1\n", "bad label name"},
      {"reserved label name", "a{__name__=\"v\"} 1\n", "bad label name"},
      {"unquoted value", "a{x=v} 1\n", "not quoted"},
      {"bad escape", "a{x=\"\\t\"} 1\n", "bad escape"},
      {"label twice", "a{x=\"1\",x=\"2\"} 1\n", "label \"x\" twice"},
      {"no value", "a{x=\"1\"}\n", "no value"},
      {"bad value", "a 1.2.3\n", "bad value"},
      {"bad timestamp", "a 1 soon\n", "bad timestamp"},
      {"bad type", "# TYPE a meter\n", "bad type"},
      {"type twice", "# TYPE a gauge\n# TYPE a gauge\n", "a second TYPE"},
      {"help twice", "# HELP a x\n# HELP a y\n", "a second HELP"},
      {"type after samples", "a 1\n# TYPE a gauge\n", "after its samples"},
      {"split family", "a 1\nb 1\na{x=\"1\"} 2\n", "split apart"},
      {"series twice", "a{x=\"1\"} 1\na{x=\"1\"} 2\n", "same series"},
      {"negative counter", "# TYPE a counter\na -1\n", "below zero"},
      {"histogram without +Inf", "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
       "no +Inf"},
      {"histogram not cumulative",
       "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
       "not cumulative"},
      {"histogram count", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",
       "_count"},
      {"histogram le order",
       "# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\n"
       "h_sum 1\nh_count 1\n",
       "ascending"},
  };
  for (const auto& c : cases) {
    auto got = ParseText(c.text);
    ASSERT_FALSE(got.ok()) << c.name;
    EXPECT_NE(got.status().message().find(c.error), std::string::npos)
        << c.name << ": " << got.status().message();
  }
}

class Fixed final : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    prometheus::ClientMetric m;
    m.gauge.value = 7;
    m.label = {{"resource", "pods"}};
    return {{"test_fixed_objects", "Objects.", prometheus::MetricType::Gauge, {m}}};
  }
};

TEST(Expose, TheRegistryCollectorsAndTheProcess) {
  auto& family = prometheus::BuildCounter()
                     .Name("test_expose_total")
                     .Help("Things done.")
                     .Register(Registry());
  family.Add({{"verb", "GET"}}).Increment(2);
  auto fixed = std::make_shared<Fixed>();
  AddCollector(fixed);

  // Some CPU time to show (the kernel counts it in ticks of 10 ms).
  while (std::clock() < CLOCKS_PER_SEC / 20) {
  }

  auto got = testing::ParseText(Expose());
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got->Value("test_expose_total", {{"verb", "GET"}}), 2);
  EXPECT_EQ(*got->Value("test_fixed_objects", {{"resource", "pods"}}), 7);
  EXPECT_GT(*got->Value("process_cpu_seconds_total"), 0);
  EXPECT_GT(*got->Value("process_resident_memory_bytes"), 1 << 20);
  EXPECT_GT(*got->Value("process_open_fds"), 2);
  EXPECT_GT(*got->Value("process_start_time_seconds"), 1.6e9);
  EXPECT_EQ(got->families.at("process_cpu_seconds_total").type, "counter");

  fixed.reset();  // its owner is gone: so is it
  got = testing::ParseText(Expose());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->families.count("test_fixed_objects"), 0u);
}

TEST(Collector, AsksItsSourceUntilDetached) {
  int asked = 0;
  Collector c([&] {
    ++asked;
    return Fixed().Collect();
  });
  auto got = testing::ParseText(ExposeOnly({&c}));
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got->Value("test_fixed_objects"), 7);
  c.Detach();
  EXPECT_TRUE(c.Collect().empty());
  EXPECT_EQ(asked, 1);
}

}  // namespace
}  // namespace kvol::metrics
