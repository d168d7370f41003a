// Store backends for the conformance suite: each test gets a store through OpenBackend.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "store/store.h"

namespace kvol::store::testing {

// The backends this test binary runs against ("sqlite", and "etcd" when built with it).
std::vector<std::string> BackendNames();

// A store of that backend: a fresh SQLite file in a temporary directory, or a client of a real
// etcd started once for the whole binary.
StatusOr<std::unique_ptr<Store>> OpenBackend(const std::string& name);

// A key prefix no other test uses ("/t<n>/").
std::string UniquePrefix();

}  // namespace kvol::store::testing
