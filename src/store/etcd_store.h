// The etcd v3 backend: state in an etcd cluster, reached over gRPC, so several kvol servers can
// share it. Revisions are etcd's own; compare-and-swap is an etcd transaction on mod_revision.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "store/store.h"

namespace kvol::store {

struct EtcdOptions {
  std::vector<std::string> endpoints;  // "host:port"; the next one is tried when one is down
  int request_timeout_ms = 10'000;
};

// Parses "etcd://h1:2379,h2:2379" into options. InvalidArgument on anything else.
StatusOr<EtcdOptions> ParseEtcdUrl(std::string_view url);

// Connects (lazily; the first request fails with Unavailable if no endpoint answers).
StatusOr<std::unique_ptr<Store>> OpenEtcdStore(const EtcdOptions& opts);

}  // namespace kvol::store
