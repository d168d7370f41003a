// Reading manifests as kubectl does: multi-document YAML (YAML 1.1 scalars, as Go's yaml.v2
// reads them: `0644` is octal, `yes` is true, `1.1` is a number) or a stream of JSON objects,
// from a file, a directory of .yaml/.yml/.json files, or standard input. `List` kinds are
// expanded into their items. Malformed input is an error with its line and column, never a crash.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/codec.h"
#include "base/status.h"

namespace kvol::manifest {

struct Document {
  api::Json object;
  std::string source;  // file name, or "<stdin>"
  int line = 0;        // 1-based line where the document starts
};

// One problem in one document; reading goes on with the next document.
struct ReadError {
  std::string source;
  int line = 0;    // 1-based; 0 if unknown
  int column = 0;  // 1-based; 0 if unknown
  std::string message;

  std::string ToString() const;  // "file.yaml:12:3: did not find expected key"
};

struct ReadResult {
  std::vector<Document> documents;
  std::vector<ReadError> errors;
};

// Limits on one document: nesting depth and the number of values after alias expansion.
inline constexpr int kMaxDepth = api::kMaxJsonDepth;
inline constexpr size_t kMinValueBudget = 100'000;

// Parses every document in `text`. Empty documents are skipped.
ReadResult ParseText(std::string_view text, std::string_view source);

// Reads a file, every .yaml/.yml/.json file directly inside a directory (sorted by name), or
// standard input for "-". A path that cannot be read is a ReadError.
ReadResult ReadPath(const std::string& path);

}  // namespace kvol::manifest
