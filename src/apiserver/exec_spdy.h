// `kubectl exec` over SPDY/3.1 (base/spdy.h), as kubelet serves it to client-go before 1.29
// (and to kubectl after it with KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false), with Kubernetes' v4
// stream protocol: the client opens a stream per purpose, named by its `streamtype` header:
// error (always), stdin (-i), stdout, stderr (not with a terminal) and resize (-t, terminal
// sizes as JSON lines). Each is answered as it comes; once all are open the session runs. At
// the process's end stdout and stderr are closed, and the outcome (a Status) is written to the
// error stream, which is closed too.
#pragma once

#include <chrono>

#include "apiserver/http_server.h"
#include "apiserver/node_connection.h"
#include "apiserver/streaming.h"

namespace kvol::apiserver {

// How long a client has to open its streams after the upgrade (kubelet's default).
inline constexpr std::chrono::seconds kExecStreamCreationTimeout{30};

// Upgrades the connection to SPDY/3.1 and runs the session to the process's end, or kills the
// process when the client leaves, breaks the protocol or does not open its streams in time.
void ServeExecSpdy(ResponseWriter& w, const ExecRequest& er, ExecProcess& proc,
                   std::chrono::milliseconds stream_creation_timeout = kExecStreamCreationTimeout);

}  // namespace kvol::apiserver
