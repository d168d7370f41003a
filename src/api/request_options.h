// The options of Kubernetes' list, watch, create/update/patch and delete requests
// (meta/v1 ListOptions, CreateOptions/UpdateOptions, DeleteOptions), as the server reads them
// from a query string and a client sends them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kvol::api {

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;        // "": most recent; "0": any; "N": not older than N
  std::string resource_version_match;  // "", "NotOlderThan", "Exact"
  int64_t limit = 0;
  std::string continue_token;
  // watch only
  bool allow_bookmarks = false;
  int64_t timeout_seconds = 0;
};

struct WriteOptions {
  bool dry_run = false;
  std::string field_validation;  // "Strict", "Warn", "Ignore" ("" as Warn)
};

struct DeleteOptions {
  std::optional<int64_t> grace_period_seconds;
  std::string propagation_policy;  // Orphan, Background, Foreground (accepted)
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
  bool dry_run = false;
};

}  // namespace kvol::api
