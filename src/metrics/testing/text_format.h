// A strict reader of the Prometheus text format (0.0.4), for tests: what a scraper would accept
// and nothing more. It refuses bad names and escapes, a TYPE after its samples or given twice,
// a family's samples split apart, a series given twice, and histograms whose buckets are not
// ascending and cumulative up to a +Inf bucket equal to _count.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kvol::metrics::testing {

struct Sample {
  std::string name;  // with its suffix: "x_bucket"
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Family {
  std::string name;
  std::string type = "untyped";  // counter, gauge, histogram, summary, untyped
  std::string help;
  std::vector<Sample> samples;
};

struct Exposition {
  std::map<std::string, Family> families;

  // The value of the one sample `name` whose labels include `labels`; NotFound when there is
  // none, FailedPrecondition when more than one match.
  StatusOr<double> Value(std::string_view name,
                         const std::map<std::string, std::string>& labels = {}) const;
};

// Parses `text`; InvalidArgument naming the line and what is wrong with it.
StatusOr<Exposition> ParseText(std::string_view text);

}  // namespace kvol::metrics::testing
