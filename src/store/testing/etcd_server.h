// A real etcd server for tests: Debian's etcd on free loopback ports with a temporary data
// directory, stopped (and its directory removed) when the test process exits, or killed by the
// kernel if the test process dies first.
#pragma once

#include <string>

#include "base/status.h"

namespace kvol::store::testing {

// Starts etcd once per process and returns its client endpoint ("127.0.0.1:port").
// FailedPrecondition if no etcd binary is installed; Unavailable if it does not come up.
StatusOr<std::string> SharedEtcdServer();

// A free TCP port on 127.0.0.1 (bound and released; good enough for tests).
int FreeLoopbackPort();

}  // namespace kvol::store::testing
