// The SPDY/3.1 exec session: the streams a client opens, then the process's input and output
// on them.
#include "apiserver/exec_spdy.h"

#include <poll.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/codec.h"
#include "base/log.h"
#include "base/spdy.h"

namespace kvol::apiserver {

namespace {

// The most output one DATA frame carries.
constexpr size_t kMaxDataFrame = 32 << 10;
// How long a finished session waits for its client to close the connection, so that closing
// it first cannot throw away output the client has not read.
constexpr auto kLinger = std::chrono::seconds(5);

class SpdyExecSession {
 public:
  SpdyExecSession(ResponseWriter& w, UpgradedConnection& conn, const ExecRequest& er,
                  ExecProcess& proc)
      : w_(w), conn_(conn), er_(er), proc_(proc) {}

  void Run(std::chrono::milliseconds stream_creation_timeout) {
    if (!OpenStreams(stream_creation_timeout)) return proc_.Kill();
    std::optional<int> exit_code;
    std::vector<std::pair<int, std::string>> output;
    bool first = true;  // output that came with the process's start is taken before a wait
    while (!exit_code && !w_.Stopping()) {
      // While the process has not taken the stdin already given, the client's frames wait in
      // the connection (and so the client waits); its output is still collected.
      const bool backlogged = proc_.StdinBacklogged();
      pollfd fds[2] = {{conn_.fd(), static_cast<short>(backlogged ? 0 : POLLIN), 0},
                       {proc_.fd(), proc_.PollEvents(), 0}};
      if (!first && (backlogged || !conn_.Buffered())) poll(fds, 2, 1000);
      first = false;
      if (backlogged && (fds[0].revents & (POLLHUP | POLLERR))) return proc_.Kill();
      if (!backlogged && (conn_.Buffered() || (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))) {
        if (!Receive()) return proc_.Kill();  // the client left, or broke the session
      }
      exit_code = proc_.Collect(&output);
      for (const auto& [stream, data] : output) {
        if (!SendOutput(stream, data)) return proc_.Kill();
      }
    }
    if (!exit_code) return proc_.Kill();
    Finish(*exit_code);
  }

 private:
  // Answers the client's streams until every one the request asks for is open.
  bool OpenStreams(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!AllOpen()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || w_.Stopping()) {
        log::Warn("exec over SPDY: the client did not open its streams within " +
                  std::to_string(timeout.count()) + " ms");
        return false;
      }
      if (!conn_.Buffered()) {
        pollfd p{conn_.fd(), POLLIN, 0};
        if (poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000))) <= 0) continue;
      }
      if (!Receive()) return false;
    }
    return true;
  }

  bool AllOpen() const {
    auto open = [&](const char* type) { return streams_.count(type) > 0; };
    return open("error") && (!er_.options.stdin || open("stdin")) &&
           (!er_.want_stdout || open("stdout")) && (!WantStderr() || open("stderr")) &&
           (!er_.options.tty || open("resize"));
  }
  // A terminal carries stderr on stdout, so no stderr stream is opened with one.
  bool WantStderr() const { return er_.want_stderr && !er_.options.tty; }

  uint32_t StreamOf(const char* type) const {
    auto it = streams_.find(type);
    return it == streams_.end() ? 0 : it->second;
  }

  // Reads what the connection has and handles the frames it completes. False once the client
  // has gone or has sent what is not SPDY/3.
  bool Receive() {
    std::string in;
    if (!conn_.ReadSome(&in)) return false;
    reader_.Feed(in);
    while (true) {
      auto frame = reader_.Next();
      if (!frame.ok()) {
        log::Warn("exec over SPDY: " + frame.status().message());
        return false;
      }
      if (!*frame) return true;
      if (!Handle(**frame)) return false;
    }
  }

  bool Handle(const spdy::Frame& f) {
    switch (f.type) {
      case spdy::Type::kSynStream: {
        auto headers = header_reader_.Read(spdy::SynStreamHeaderBlock(f.payload));
        if (!headers.ok()) {
          log::Warn("exec over SPDY: " + headers.status().message());
          return false;
        }
        const std::string type = (*headers)["streamtype"];
        if (type == "error" || type == "stdin" || type == "stdout" || type == "stderr" ||
            type == "resize") {
          streams_.try_emplace(type, f.stream);
        } else {
          log::Warn("exec over SPDY: unexpected stream type \"" + type + "\"");
        }
        return conn_.Write(writer_.SynReply(f.stream, {}));
      }
      case spdy::Type::kData:
        if (f.stream != 0 && f.stream == StreamOf("stdin")) {
          if (!f.payload.empty()) proc_.WriteStdin(f.payload);
          if (f.flags & spdy::kFlagFin) proc_.CloseStdin();
        } else if (f.stream != 0 && f.stream == StreamOf("resize")) {
          Resize(f.payload);
        }
        return true;
      case spdy::Type::kRstStream:
        if (f.stream != 0 && f.stream == StreamOf("stdin")) proc_.CloseStdin();
        return true;
      case spdy::Type::kPing:
        return conn_.Write(spdy::Writer::Ping(f.stream));
      case spdy::Type::kGoAway:
        return false;  // the client is done with the session before the process is
      default:
        return true;  // SETTINGS, WINDOW_UPDATE, HEADERS: nothing to do here
    }
  }

  // Terminal sizes, one JSON object per line: {"Width":80,"Height":24}.
  void Resize(std::string_view data) {
    resize_.append(data);
    size_t nl;
    while ((nl = resize_.find('\n')) != std::string::npos) {
      auto size = TerminalSizeOf(std::string_view(resize_).substr(0, nl));
      if (size) proc_.Resize(size->first, size->second);
      resize_.erase(0, nl + 1);
    }
  }

  bool SendOutput(int stream, std::string_view data) {
    const uint32_t id = stream == 1 ? StreamOf("stdout") : StreamOf("stderr");
    if (id == 0 || (stream == 2 && !WantStderr())) return true;  // not asked for
    while (!data.empty()) {
      const std::string_view part = data.substr(0, kMaxDataFrame);
      if (!conn_.Write(spdy::Writer::Data(id, part, false))) return false;
      data.remove_prefix(part.size());
    }
    return true;
  }

  // Ends the output streams, writes the outcome, and waits for the client to close.
  void Finish(int exit_code) {
    std::string out;
    for (const char* type : {"stdout", "stderr"}) {
      if (uint32_t id = StreamOf(type)) out += spdy::Writer::Data(id, "", true);
    }
    out += spdy::Writer::Data(StreamOf("error"), api::ExecOutcome(er_.options.command, exit_code),
                              true);
    if (!conn_.Write(out)) return;
    const auto deadline = std::chrono::steady_clock::now() + kLinger;
    std::string ignored;
    while (std::chrono::steady_clock::now() < deadline && !w_.Stopping()) {
      if (!conn_.Buffered()) {
        pollfd p{conn_.fd(), POLLIN, 0};
        if (poll(&p, 1, 200) <= 0) continue;
      }
      if (!conn_.ReadSome(&ignored)) return;
    }
  }

  ResponseWriter& w_;
  UpgradedConnection& conn_;
  const ExecRequest& er_;
  ExecProcess& proc_;
  spdy::Reader reader_;
  spdy::HeaderReader header_reader_;
  spdy::Writer writer_;
  std::map<std::string, uint32_t, std::less<>> streams_;  // by stream type
  std::string resize_;  // the resize stream's data not yet a whole line
};

}  // namespace

void ServeExecSpdy(ResponseWriter& w, const ExecRequest& er, ExecProcess& proc,
                   std::chrono::milliseconds stream_creation_timeout) {
  auto conn = w.Upgrade({{"Connection", "Upgrade"},
                         {"Upgrade", "SPDY/3.1"},
                         {"X-Stream-Protocol-Version", "v4.channel.k8s.io"}});
  if (!conn) return proc.Kill();
  SpdyExecSession(w, *conn, er, proc).Run(stream_creation_timeout);
}

}  // namespace kvol::apiserver
