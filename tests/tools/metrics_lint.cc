// metrics_lint [NAME [LABEL=VALUE,...]]: reads a Prometheus text exposition on stdin and checks
// it with the tests' strict reader (metrics/testing/text_format.h). With NAME, prints the value
// of the one sample of NAME whose labels include those given. Exit 1, with the reason on
// stderr, when the text or the query fails.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <map>
#include <string>

#include "metrics/testing/text_format.h"

int main(int argc, char** argv) {
  const std::string text((std::istreambuf_iterator<char>(std::cin)),
                         std::istreambuf_iterator<char>());
  auto parsed = kvol::metrics::testing::ParseText(text);
  if (!parsed.ok()) {
    std::cerr << "metrics_lint: " << parsed.status().message() << "\n";
    return 1;
  }
  if (argc < 2) return 0;
  std::map<std::string, std::string> labels;
  if (argc > 2) {
    std::string spec = argv[2];
    size_t start = 0;
    while (start < spec.size()) {
      size_t comma = spec.find(',', start);
      if (comma == std::string::npos) comma = spec.size();
      const std::string kv = spec.substr(start, comma - start);
      const size_t eq = kv.find('=');
      if (eq == std::string::npos) {
        std::cerr << "metrics_lint: \"" << kv << "\" is not LABEL=VALUE\n";
        return 2;
      }
      labels[kv.substr(0, eq)] = kv.substr(eq + 1);
      start = comma + 1;
    }
  }
  auto value = parsed->Value(argv[1], labels);
  if (!value.ok()) {
    std::cerr << "metrics_lint: " << value.status().message() << "\n";
    return 1;
  }
  std::printf("%.17g\n", *value);  // exact: byte counts are large
  return 0;
}
