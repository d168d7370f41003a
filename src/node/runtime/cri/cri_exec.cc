// CriExecStream: Exec, and its session with the runtime's streaming server over SPDY.
#include "node/runtime/cri/cri_exec.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "api/codec.h"
#include "api/exec_status.h"
#include "csi/client.h"

namespace kvol::node::cri {

namespace {

// "http://HOST:PORT/PATH" split; InvalidArgument for anything else (a runtime serving its
// streams over TLS is not supported).
struct Url {
  std::string host, port, target;
};
StatusOr<Url> ParseUrl(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) {
    return InvalidArgumentError("the container runtime's streaming URL \"" + url +
                                "\" is not http:// (TLS streaming is not supported)");
  }
  std::string rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  Url u;
  u.target = slash == std::string::npos ? "/" : rest.substr(slash);
  std::string authority = rest.substr(0, slash);
  size_t colon = authority.rfind(':');
  if (!authority.empty() && authority.front() == '[') {  // [v6]:port
    const size_t close = authority.find(']');
    if (close == std::string::npos)
      return InvalidArgumentError("bad streaming URL \"" + url + "\"");
    u.host = authority.substr(1, close - 1);
    colon = authority.find(':', close);
  } else {
    u.host = authority.substr(0, colon);
  }
  u.port = colon == std::string::npos ? "80" : authority.substr(colon + 1);
  if (u.host.empty() || u.port.empty()) {
    return InvalidArgumentError("bad streaming URL \"" + url + "\"");
  }
  return u;
}

// Waits until `fd` is ready for `events` or `deadline` passes.
bool WaitFor(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

StatusOr<int> Dial(const Url& u, std::chrono::steady_clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(u.host.c_str(), u.port.c_str(), &hints, &found); rc != 0) {
    return UnavailableError("cannot look up the container runtime's streaming server " + u.host +
                            ": " + gai_strerror(rc));
  }
  std::string error = "no address";
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    int err = errno;
    if (err == EINPROGRESS && WaitFor(fd, POLLOUT, deadline)) {
      socklen_t len = sizeof err;
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) break;
    }
    error = err == EINPROGRESS ? "timed out" : std::strerror(err);
    close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return UnavailableError("cannot reach the container runtime's streaming server " + u.host +
                            ":" + u.port + ": " + error);
  }
  // Blocking while the session opens, each write bounded; Open makes it non-blocking again
  // once it is open.
  const int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  timeval send_timeout{.tv_sec = 30, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
  return fd;
}

bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

StatusOr<std::unique_ptr<CriExecStream>> CriExecStream::Start(Client& client, const std::string& id,
                                                              const std::vector<std::string>& argv,
                                                              bool stdin, bool tty,
                                                              std::chrono::milliseconds timeout) {
  pb::ExecRequest req;
  req.set_container_id(id);
  for (const auto& a : argv) req.add_cmd(a);
  req.set_tty(tty);
  req.set_stdin(stdin);
  req.set_stdout(true);
  req.set_stderr(!tty);  // a terminal carries both
  KVOL_ASSIGN_OR_RETURN(pb::ExecResponse resp, client.Call(&pb::RuntimeService::Stub::Exec, req));
  std::unique_ptr<CriExecStream> s(new CriExecStream());
  KVOL_RETURN_IF_ERROR(s->Open(resp.url(), stdin, tty, timeout));
  return s;
}

Status CriExecStream::Open(const std::string& url, bool stdin, bool tty,
                           std::chrono::milliseconds timeout) {
  KVOL_ASSIGN_OR_RETURN(Url u, ParseUrl(url));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  KVOL_ASSIGN_OR_RETURN(socket_, Dial(u, deadline));
  const std::string host = u.host.find(':') == std::string::npos ? u.host : "[" + u.host + "]";
  const std::string request = "POST " + u.target + " HTTP/1.1\r\nHost: " + host + ":" + u.port +
                              "\r\nUser-Agent: kvol-agent\r\nConnection: Upgrade\r\n"
                              "Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: " +
                              std::string(kStreamProtocol) + "\r\nContent-Length: 0\r\n\r\n";
  if (!SendAll(socket_, request)) {
    return UnavailableError("writing to the container runtime's streaming server: " +
                            std::string(std::strerror(errno)));
  }
  // The answer's head; whatever follows it is the first of the SPDY frames.
  std::string in;
  size_t end = std::string::npos;
  while ((end = in.find("\r\n\r\n")) == std::string::npos) {
    if (in.size() > (64 << 10) || !WaitFor(socket_, POLLIN, deadline)) {
      return UnavailableError(
          "the container runtime's streaming server did not answer the "
          "exec upgrade");
    }
    char buf[4096];
    const ssize_t n = recv(socket_, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) break;
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) return UnavailableError(std::string("reading the exec upgrade: ") + strerror(errno));
    in.append(buf, static_cast<size_t>(n));
  }
  const std::string head = in.substr(0, end);
  if (head.rfind("HTTP/1.1 101", 0) != 0 && head.rfind("HTTP/1.0 101", 0) != 0) {
    const std::string status_line = head.substr(0, head.find("\r\n"));
    const std::string body = end == std::string::npos ? "" : in.substr(end + 4);
    return UnavailableError("the container runtime's streaming server refused the exec: " +
                            status_line + (body.empty() ? "" : ": " + body));
  }
  reader_.Feed(std::string_view(in).substr(end + 4));

  // The streams, in the order kubectl opens them, each once the last is answered (as kubectl
  // waits for each reply).
  uint32_t next = 1;
  auto open = [&](uint32_t* stream, const char* type) -> Status {
    *stream = next;
    next += 2;
    if (!SendAll(socket_, writer_.SynStream(*stream, {{"streamtype", type}}))) {
      return UnavailableError("opening the exec's " + std::string(type) +
                              " stream: " + std::strerror(errno));
    }
    while (!replied_.count(*stream)) {
      auto frame = reader_.Next();
      if (!frame.ok()) return frame.status();
      if (*frame) {
        if ((*frame)->type == spdy::Type::kSynReply) replied_.insert((*frame)->stream);
        if ((*frame)->type == spdy::Type::kRstStream && (*frame)->stream == *stream) {
          return UnavailableError("the container runtime refused the exec's " + std::string(type) +
                                  " stream");
        }
        continue;
      }
      char buf[4096];
      if (!WaitFor(socket_, POLLIN, deadline)) {
        return UnavailableError("the container runtime did not answer the exec's " +
                                std::string(type) + " stream");
      }
      const ssize_t n = recv(socket_, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0) return UnavailableError("the container runtime closed the exec's stream");
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return UnavailableError(std::string("reading the exec's stream: ") + strerror(errno));
      }
      if (n > 0) reader_.Feed(std::string_view(buf, static_cast<size_t>(n)));
    }
    return OkStatus();
  };
  KVOL_RETURN_IF_ERROR(open(&streams_.error, "error"));
  if (stdin) KVOL_RETURN_IF_ERROR(open(&streams_.stdin, "stdin"));
  KVOL_RETURN_IF_ERROR(open(&streams_.stdout, "stdout"));
  if (!tty) KVOL_RETURN_IF_ERROR(open(&streams_.stderr, "stderr"));
  if (tty) KVOL_RETURN_IF_ERROR(open(&streams_.resize, "resize"));
  fcntl(socket_, F_SETFL, fcntl(socket_, F_GETFL) | O_NONBLOCK);
  return OkStatus();
}

CriExecStream::~CriExecStream() {
  if (socket_ >= 0) close(socket_);
}

void CriExecStream::Send(const std::string& bytes) {
  if (ended_ || send_failed_) return;
  out_.append(bytes);
  Pump();
}

void CriExecStream::Pump() {
  size_t sent = 0;
  while (!send_failed_ && sent < out_.size()) {
    const ssize_t n =
        send(socket_, out_.data() + sent, out_.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    // The command may have ended and the server closed (stdin still coming): what it wrote
    // and its outcome are still to be read, so only sending stops.
    failure_ = std::string("writing to the container runtime's stream: ") + std::strerror(errno);
    send_failed_ = true;
  }
  if (send_failed_) {
    out_.clear();
  } else {
    out_.erase(0, sent);
  }
}

void CriExecStream::Flush() {
  if (streams_.stdin && replied_.count(streams_.stdin)) {
    // In frames of at most 32 KiB, as the server writes its own (and far below SPDY's 16 MiB).
    for (size_t at = 0; at < pending_stdin_.size(); at += kMaxDataFrame) {
      Send(spdy::Writer::Data(streams_.stdin,
                              std::string_view(pending_stdin_).substr(at, kMaxDataFrame), false));
    }
    pending_stdin_.clear();
    if (pending_close_) Send(spdy::Writer::Data(streams_.stdin, "", true));
    pending_close_ = false;
  }
  if (streams_.resize && replied_.count(streams_.resize) && pending_resize_) {
    Send(spdy::Writer::Data(streams_.resize, *pending_resize_, false));
    pending_resize_.reset();
  }
}

std::optional<int> CriExecStream::Collect(std::vector<std::pair<int, std::string>>* out) {
  out->clear();
  if (outcome_) return outcome_;
  if (!out_.empty() && !ended_) Pump();
  while (!ended_) {
    char buf[16 << 10];
    const ssize_t n = recv(socket_, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      reader_.Feed(std::string_view(buf, static_cast<size_t>(n)));
      if (static_cast<size_t>(n) < sizeof buf) break;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0) {
      failure_ = std::string("reading the container runtime's stream: ") + std::strerror(errno);
      failed_ = true;
    }
    ended_ = true;
  }
  if (ended_) out_.clear();  // nobody to take it
  while (true) {
    auto frame = reader_.Next();
    if (!frame.ok()) {
      failure_ = frame.status().message();
      failed_ = ended_ = true;
      break;
    }
    if (!*frame) break;
    const spdy::Frame& f = **frame;
    switch (f.type) {
      case spdy::Type::kSynReply:
        replied_.insert(f.stream);
        Flush();
        break;
      case spdy::Type::kData:
        if (f.payload.empty()) break;
        if (f.stream == streams_.stdout) out->emplace_back(1, f.payload);
        if (f.stream == streams_.stderr) out->emplace_back(2, f.payload);
        if (f.stream == streams_.error && status_.size() < (1 << 20)) status_ += f.payload;
        break;
      case spdy::Type::kPing:
        if (f.stream % 2 == 0) Send(spdy::Writer::Ping(f.stream));  // the server's: answered
        break;
      default:  // replies' headers, resets, settings, window updates, go-away: the end follows
        break;
    }
  }
  if (!ended_) return std::nullopt;
  return Outcome(out);
}

std::optional<int> CriExecStream::Outcome(std::vector<std::pair<int, std::string>>* out) {
  if (!status_.empty()) {
    if (auto code = api::ExitCodeOf(status_)) return outcome_ = *code;
    // A Failure with no exit code: the runtime could not run the command.
    auto st = api::ParseJson(status_);
    const std::string message =
        st.ok() && st->is_object() ? st->value("message", status_) : status_;
    out->emplace_back(2, message + "\n");
    return outcome_ = 126;
  }
  out->emplace_back(2,
                    "the container runtime's exec stream ended without the command's "
                    "outcome" +
                        (failed_ || send_failed_ ? ": " + failure_ : std::string()) + "\n");
  return outcome_ = 126;
}

void CriExecStream::WriteStdin(std::string_view data) {
  if (!streams_.stdin || data.empty()) return;
  pending_stdin_.append(data);
  Flush();
}

void CriExecStream::CloseStdin() {
  if (!streams_.stdin) return;
  pending_close_ = true;
  Flush();
}

void CriExecStream::Resize(uint16_t cols, uint16_t rows) {
  if (!streams_.resize) return;
  pending_resize_ =
      "{\"Width\":" + std::to_string(cols) + ",\"Height\":" + std::to_string(rows) + "}";
  Flush();
}

void CriExecStream::Kill() {
  if (socket_ >= 0) shutdown(socket_, SHUT_RDWR);
}

}  // namespace kvol::node::cri
