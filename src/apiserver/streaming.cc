// kubectl logs and exec on the wire.
#include "apiserver/streaming.h"

#include <poll.h>

#include <algorithm>

#include "apiserver/exec_spdy.h"
#include "apiserver/websocket.h"
#include "base/strings.h"

namespace kvol::apiserver {

using api::Json;

namespace {

bool Truthy(const std::string& v) { return v == "1" || v == "true" || v == "True"; }

}  // namespace

void SendError(ResponseWriter& w, const ApiError& e) {
  w.Send(e.code, "application/json", e.ToJson());
}

ApiOr<PodLogOptions> LogOptionsOf(const HttpRequest& req) {
  PodLogOptions lo;
  lo.container = req.Query("container");
  lo.follow = Truthy(req.Query("follow"));
  lo.previous = Truthy(req.Query("previous"));
  for (auto [key, field] :
       {std::pair{"tailLines", &lo.tail_lines}, std::pair{"limitBytes", &lo.limit_bytes}}) {
    if (!req.HasQuery(key)) continue;
    int64_t n = 0;
    if (!ParseInt64(req.Query(key), &n) || n < 0) {
      return BadRequest(std::string(key) + ": Invalid value: \"" + req.Query(key) +
                        "\": must be greater than or equal to 0");
    }
    *field = n;
  }
  return lo;
}

void ServeLog(ResponseWriter& w, LogStream& stream) {
  if (!w.StartStream(200, "text/plain")) return;
  std::string chunk;
  while (!w.Stopping() && stream.Next(&chunk)) {
    if (!chunk.empty() && !w.WriteChunk(chunk)) return;
  }
  w.EndStream();
}

std::optional<std::pair<uint16_t, uint16_t>> TerminalSizeOf(std::string_view json) {
  auto size = api::ParseJson(json);
  if (!size.ok() || !size->is_object()) return std::nullopt;
  auto dimension = [&](const char* key) -> std::optional<uint16_t> {
    auto it = size->find(key);
    if (it == size->end() || !it->is_number_unsigned() || it->get<uint64_t>() > 0xffff) {
      return std::nullopt;
    }
    return static_cast<uint16_t>(it->get<uint64_t>());
  };
  auto width = dimension("Width"), height = dimension("Height");
  if (!width || !height) return std::nullopt;
  return std::pair{*width, *height};
}

ApiOr<ExecRequest> ExecRequestOf(const HttpRequest& req) {
  ExecRequest er;
  er.options.container = req.Query("container");
  er.options.command = req.QueryAll("command");
  er.options.stdin = Truthy(req.Query("stdin"));
  er.options.tty = Truthy(req.Query("tty"));
  er.want_stdout = !req.HasQuery("stdout") || Truthy(req.Query("stdout"));
  er.want_stderr = !req.HasQuery("stderr") || Truthy(req.Query("stderr"));
  if (er.options.command.empty()) return BadRequest("you must specify at least 1 command");
  return er;
}

ApiOr<ExecUpgrade> ExecUpgradeOf(const HttpRequest& req) {
  const std::string upgrade = AsciiLower(req.Header("upgrade"));
  const bool spdy = upgrade == "spdy/3.1";
  if (!spdy && (upgrade != "websocket" || req.Header("sec-websocket-key").empty())) {
    return BadRequest(
        "Upgrade request required (WebSocket: v5.channel.k8s.io or v4.channel.k8s.io; "
        "SPDY/3.1: v4.channel.k8s.io)");
  }
  // SPDY's offers are X-Stream-Protocol-Version headers, one per protocol (joined here).
  const std::string offered =
      req.Header(spdy ? "x-stream-protocol-version" : "sec-websocket-protocol");
  std::vector<std::string> offers;
  for (size_t start = 0; start <= offered.size();) {
    size_t end = offered.find(',', start);
    if (end == std::string::npos) end = offered.size();
    std::string o = offered.substr(start, end - start);
    o.erase(0, o.find_first_not_of(' '));
    o.erase(o.find_last_not_of(' ') + 1);
    offers.push_back(std::move(o));
    start = end + 1;
  }
  // v5 (a close channel) exists only over WebSocket: SPDY closes a stream itself.
  const std::vector<const char*> supported =
      spdy ? std::vector<const char*>{"v4.channel.k8s.io"}
           : std::vector<const char*>{"v5.channel.k8s.io", "v4.channel.k8s.io"};
  for (const char* p : supported) {
    if (std::find(offers.begin(), offers.end(), p) != offers.end()) {
      return ExecUpgrade{
          .transport = spdy ? ExecUpgrade::Transport::kSpdy : ExecUpgrade::Transport::kWebSocket,
          .protocol = p};
    }
  }
  if (spdy) {
    return BadRequest("no supported stream protocol in \"" + offered +
                      "\" (SPDY/3.1: v4.channel.k8s.io)");
  }
  return BadRequest("no supported WebSocket subprotocol in \"" + offered +
                    "\" (v5.channel.k8s.io, v4.channel.k8s.io)");
}

namespace {

void ServeExecWebSocket(const HttpRequest& req, ResponseWriter& w, const ExecRequest& er,
                        const std::string& protocol, ExecProcess& proc) {
  auto conn = w.Upgrade({{"Upgrade", "websocket"},
                         {"Connection", "Upgrade"},
                         {"Sec-WebSocket-Accept", WebSocketAccept(req.Header("sec-websocket-key"))},
                         {"Sec-WebSocket-Protocol", protocol}});
  if (!conn) return proc.Kill();
  WebSocket ws(*conn);
  std::optional<int> exit_code;
  std::vector<std::pair<int, std::string>> output;
  std::vector<std::string> messages;
  // Output that came with the process's start (a runtime's first frames) is collected before
  // the first wait.
  bool first = true;
  while (!exit_code && !w.Stopping()) {
    // While the process has not taken the stdin already given, the client's input waits in the
    // connection (and so the client waits); its output is still collected.
    const bool backlogged = proc.StdinBacklogged();
    pollfd fds[2] = {{conn->fd(), static_cast<short>(backlogged ? 0 : POLLIN), 0},
                     {proc.fd(), proc.PollEvents(), 0}};
    if (!first && (backlogged || !conn->Buffered())) poll(fds, 2, 1000);
    first = false;
    if (backlogged && (fds[0].revents & (POLLHUP | POLLERR))) {  // the client left
      proc.Kill();
      return;
    }
    if (!backlogged && (conn->Buffered() || (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))) {
      messages.clear();
      const bool open = ws.Receive(&messages);
      for (const auto& m : messages) {
        if (m.empty()) continue;
        const auto channel = static_cast<unsigned char>(m[0]);
        const std::string_view data = std::string_view(m).substr(1);
        if (channel == 0) {
          proc.WriteStdin(data);
        } else if (channel == 4) {  // {"Width":80,"Height":24}
          if (auto size = TerminalSizeOf(data)) proc.Resize(size->first, size->second);
        } else if (channel == 255 && data.size() == 1 && data[0] == 0) {  // v5: stdin closed
          proc.CloseStdin();
        }
      }
      if (!open) {  // the client left: so does its process
        proc.Kill();
        return;
      }
    }
    exit_code = proc.Collect(&output);
    for (const auto& [stream, data] : output) {
      if ((stream == 1 && !er.want_stdout) || (stream == 2 && !er.want_stderr)) continue;
      if (!ws.SendBinary(std::string(1, static_cast<char>(stream)) + data)) {
        proc.Kill();
        return;
      }
    }
  }
  if (!exit_code) {
    proc.Kill();
    return;
  }
  ws.SendBinary(std::string(1, '\x03') + ExecOutcome(er.options.command, *exit_code));
  ws.Close();
}

}  // namespace

void ServeExec(const HttpRequest& req, ResponseWriter& w, const ExecRequest& er,
               const ExecUpgrade& upgrade, ExecProcess& proc) {
  if (upgrade.transport == ExecUpgrade::Transport::kSpdy) return ServeExecSpdy(w, er, proc);
  ServeExecWebSocket(req, w, er, upgrade.protocol, proc);
}

}  // namespace kvol::apiserver
