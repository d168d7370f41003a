// The two streaming calls that only a node can answer, kubectl logs and kubectl exec, as the
// API server serves them to kubectl and as a node agent serves them to the API server: the
// query each takes, the log's chunked stream, and exec over WebSocket channels
// (v5.channel.k8s.io or v4.channel.k8s.io: 0 stdin, 1 stdout, 2 stderr, 3 the outcome as a
// Status, 4 terminal size, 255 close, v5 only) or over SPDY/3.1 streams (exec_spdy.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/exec_status.h"
#include "apiserver/errors.h"
#include "apiserver/http_server.h"
#include "apiserver/node_connection.h"

namespace kvol::apiserver {

// Answers `e` as a Status object.
void SendError(ResponseWriter& w, const ApiError& e);

// The query of a log request (container, follow, previous, tailLines, limitBytes).
ApiOr<PodLogOptions> LogOptionsOf(const HttpRequest& req);
// Streams the log to the end (or until the client leaves).
void ServeLog(ResponseWriter& w, LogStream& stream);

struct ExecRequest {
  ExecOptions options;
  bool want_stdout = true;
  bool want_stderr = true;
};
// The query of an exec request (container, command..., stdin, tty, stdout, stderr).
ApiOr<ExecRequest> ExecRequestOf(const HttpRequest& req);
struct ExecUpgrade {
  enum class Transport { kWebSocket, kSpdy };
  Transport transport = Transport::kWebSocket;
  std::string protocol;  // the stream protocol: v5.channel.k8s.io, v4.channel.k8s.io
};
// What to answer an upgrade request with: its transport, and the newest stream protocol both
// sides speak over it.
ApiOr<ExecUpgrade> ExecUpgradeOf(const HttpRequest& req);
// Upgrades the connection and runs the session to the process's end, or kills the process
// when the client leaves.
void ServeExec(const HttpRequest& req, ResponseWriter& w, const ExecRequest& er,
               const ExecUpgrade& upgrade, ExecProcess& proc);

// A terminal size message, {"Width":80,"Height":24}; nullopt for anything else (a field that
// is not a whole number from 0 to 65535 included).
std::optional<std::pair<uint16_t, uint16_t>> TerminalSizeOf(std::string_view json);

// The Status sent on channel 3 (api/exec_status.h).
using api::ExecOutcome;
using api::ExitCodeOf;

}  // namespace kvol::apiserver
