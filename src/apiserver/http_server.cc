// HTTPS server. A connection is a state machine on its own Asio strand, run by a few I/O
// threads: handshake, wait for a request, read its header and body (Beast's parser), then hand
// it to a worker thread, which runs the handler and writes the answer with blocking writes on
// the non-blocking socket. A stream the handler detaches comes back to the strand, which
// pulls it when woken and writes it as the client takes it; an idle keep-alive connection and
// an open watch hold no thread. Every wait of the strand is under a timer.
#include "apiserver/http_server.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <cstdio>
#include <optional>

#include "apiserver/tls_socket.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/thread.h"
#include "base/worker_pool.h"

namespace kvol::apiserver {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;

std::string UrlDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

namespace {

constexpr size_t kHeaderLimit = 64 * 1024;
constexpr size_t kReadChunk = 16 * 1024;
constexpr std::string_view kLastChunk = "0\r\n\r\n";

// Writes to a socket the peer has reset raise SIGPIPE in the writing thread; the server's
// threads take EPIPE instead. (A blocked, thread-directed SIGPIPE stays pending and harmless.)
void BlockSigpipe() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

bool PeerClosed(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

// The request as handlers see it, from Beast's parsed message.
HttpRequest ToRequest(http::request<http::string_body>& req, const std::string& remote) {
  HttpRequest r;
  r.method = std::string(req.method_string());
  r.target = std::string(req.target());
  r.remote = remote;
  std::string_view target = r.target;
  size_t q = target.find('?');
  r.path = UrlDecode(target.substr(0, q));
  if (q != std::string_view::npos) {
    std::string_view qs = target.substr(q + 1);
    while (!qs.empty()) {
      size_t amp = qs.find('&');
      std::string_view kv = qs.substr(0, amp);
      size_t eq = kv.find('=');
      // A query is form-encoded: '+' is a space (kubectl exec's command=sh+-c).
      auto decode = [](std::string_view part) {
        std::string plus(part);
        std::replace(plus.begin(), plus.end(), '+', ' ');
        return UrlDecode(plus);
      };
      std::string key = decode(kv.substr(0, eq));
      std::string val = eq == std::string_view::npos ? "" : decode(kv.substr(eq + 1));
      if (!key.empty()) {
        r.query[key] = val;
        r.query_list.emplace_back(std::move(key), std::move(val));
      }
      if (amp == std::string_view::npos) break;
      qs.remove_prefix(amp + 1);
    }
  }
  for (const auto& f : req) {
    std::string name(f.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // A header sent more than once (X-Stream-Protocol-Version) is one comma-separated list.
    std::string value(f.value());
    auto [it, fresh] = r.headers.try_emplace(std::move(name), value);
    if (!fresh) it->second += ", " + value;
  }
  r.body = std::move(req.body());
  return r;
}

// A response's status line and the headers every answer has.
std::string StatusLine(int status, unsigned version) {
  const auto reason = http::obsolete_reason(static_cast<http::status>(status));
  std::string out = version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out.append(reason.data(), reason.size());
  out += "\r\n";
  return out;
}

void AddHeader(std::string* out, std::string_view name, std::string_view value) {
  out->append(name);
  out->append(": ");
  out->append(value);
  out->append("\r\n");
}

void AddConnectionHeader(std::string* out, bool keep_alive, unsigned version) {
  if (version >= 11 && !keep_alive) AddHeader(out, "Connection", "close");
  if (version == 10 && keep_alive) AddHeader(out, "Connection", "keep-alive");
}

void AppendChunk(std::string* out, std::string_view data) {
  char size[20];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  out->append(size, static_cast<size_t>(n));
  out->append(data);
  out->append("\r\n");
}

}  // namespace

struct HttpServer::Impl {
  enum class Phase { kHandshake, kIdle, kHeader, kBody, kHandler, kStreaming, kClosed };

  struct Conn {
    Conn(net::io_context& io, tcp::socket s, SSL_CTX* ctx, uint64_t id)
        : sock(std::move(s)),
          strand(net::make_strand(io)),
          timer(io),
          tls(ctx, sock.native_handle()),
          id(id) {}

    tcp::socket sock;
    net::strand<net::io_context::executor_type> strand;
    net::steady_timer timer;
    TlsSocket tls;
    const uint64_t id;  // in order of acceptance
    std::string remote;

    // On the strand, or on the worker while the phase is kHandler.
    Phase phase = Phase::kHandshake;
    uint64_t timer_generation = 0;
    std::string in;  // received and not yet parsed (a pipelined request's start)
    // Only while a request is read: a connection streaming a watch holds none.
    std::unique_ptr<http::request_parser<http::string_body>> parser;
    bool keep_alive = true;
    // A detached stream: what is still to be written, and when to pull again unwoken.
    std::shared_ptr<StreamSource> source;
    std::string out;
    size_t out_written = 0;
    bool writing = false;
    bool source_done = false;
    SteadyClock::time_point next_pull = SteadyClock::time_point::max();
    std::atomic<bool> woken{false};

    // Whether it waits for input: what eviction may close. Any thread.
    std::atomic<bool> waiting{true};
    // Guards the descriptor against reuse between its close and a shutdown from elsewhere.
    std::mutex fd_mu;
    bool closed = false;
    // Under Impl::mu.
    bool authenticated = false;
    bool evicted = false;

    void ShutdownSocket() {
      std::lock_guard l(fd_mu);
      if (!closed) ::shutdown(sock.native_handle(), SHUT_RDWR);
    }
  };
  using ConnPtr = std::shared_ptr<Conn>;

  HttpServerOptions opts;
  Handler handler;
  ssl::context tls{ssl::context::tls_server};
  std::atomic<bool> stopping{false};
  std::unique_ptr<WorkerPool> workers;
  std::vector<std::thread> io_threads;

  mutable std::mutex mu;
  std::condition_variable drained;
  uint64_t next_id = 0;
  std::map<uint64_t, std::weak_ptr<Conn>> conns;
  std::map<uint64_t, std::weak_ptr<Conn>> unauthenticated;  // oldest first
  size_t detached = 0;

  // Last, so that it goes first: the handlers it still holds own connections, whose
  // destructors use what is above.
  net::io_context io;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::unique_ptr<net::steady_timer> accept_retry;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;

  // ---- accepting ----

  void Accept() {
    acceptor->async_accept(io, [this](beast::error_code ec, tcp::socket sock) {
      if (stopping) return;
      if (ec) {
        // Out of descriptors, most likely: try again shortly rather than spin.
        accept_retry->expires_after(std::chrono::milliseconds(50));
        accept_retry->async_wait([this](beast::error_code e) {
          if (!e) Accept();
        });
        return;
      }
      Admit(std::move(sock));
      Accept();
    });
  }

  void Admit(tcp::socket sock) {
    SetCloseOnExec(sock.native_handle());  // Asio's accept does not set it
    beast::error_code ec;
    sock.non_blocking(true, ec);
    // Without it, Nagle's algorithm holds a small write (a watch event, the last piece of a
    // response) while an earlier one is unacknowledged, and a client with nothing to send
    // acknowledges only after its delayed-ACK timer, about 40 ms.
    sock.set_option(tcp::no_delay(true), ec);
    std::string remote;
    auto ep = sock.remote_endpoint(ec);
    if (!ec) remote = ep.address().to_string() + ":" + std::to_string(ep.port());
    ConnPtr c;
    ConnPtr evict;
    {
      std::lock_guard lock(mu);
      if (conns.size() >= opts.max_connections) return;  // dropped: too many clients
      c = std::make_shared<Conn>(io, std::move(sock), tls.native_handle(), next_id++);
      if (!c->tls.valid()) return;
      conns.emplace(c->id, c);
      unauthenticated.emplace(c->id, c);
      evict = PickEvictionLocked();
    }
    if (evict) evict->ShutdownSocket();  // its strand sees the end and closes it
    c->remote = std::move(remote);
    net::post(c->strand, [this, c] {
      Arm(c, opts.handshake_timeout);
      Handshake(c);
    });
  }

  // The oldest unauthenticated connection that waits for input, once there are too many.
  ConnPtr PickEvictionLocked() {
    size_t live = 0;
    for (auto& [id, w] : unauthenticated) {
      auto c = w.lock();
      if (c && !c->evicted) ++live;
    }
    if (live <= opts.max_unauthenticated) return nullptr;
    for (auto& [id, w] : unauthenticated) {
      auto c = w.lock();
      if (c && !c->evicted && c->waiting.load()) {
        c->evicted = true;
        return c;
      }
    }
    return nullptr;
  }

  void MarkAuthenticated(Conn& c) {
    std::lock_guard lock(mu);
    if (c.authenticated) return;
    c.authenticated = true;
    unauthenticated.erase(c.id);
  }

  // ---- timers ----

  // One timer per connection: whatever the strand waits for, it waits at most `d`.
  void Arm(const ConnPtr& c, std::chrono::milliseconds d) { ArmAt(c, SteadyClock::now() + d); }

  void ArmAt(const ConnPtr& c, SteadyClock::time_point at) {
    const uint64_t g = ++c->timer_generation;
    c->timer.expires_at(at);
    c->timer.async_wait(net::bind_executor(c->strand, [this, c, g](beast::error_code ec) {
      if (ec || g != c->timer_generation) return;
      OnTimer(c);
    }));
  }

  void Disarm(const ConnPtr& c) {
    ++c->timer_generation;
    c->timer.cancel();
  }

  void OnTimer(const ConnPtr& c) {
    if (c->phase == Phase::kStreaming && !c->writing) return Pump(c);  // time to pull again
    if (c->phase != Phase::kHandler) Close(c);
  }

  // Runs `step` on the strand once the socket is readable (or writable).
  template <class Step>
  void WaitThen(const ConnPtr& c, TlsIo want, Step step) {
    const auto w = want == TlsIo::kWantWrite ? tcp::socket::wait_write : tcp::socket::wait_read;
    c->sock.async_wait(w, net::bind_executor(c->strand, [c, step](beast::error_code ec) {
                         if (ec == net::error::operation_aborted) return;
                         step();
                       }));
  }

  // ---- reading a request ----

  void Handshake(const ConnPtr& c) {
    if (c->phase != Phase::kHandshake) return;
    switch (const TlsIo r = c->tls.Handshake()) {
      case TlsIo::kDone:
        return WaitForRequest(c);
      case TlsIo::kWantRead:
      case TlsIo::kWantWrite:
        return WaitThen(c, r, [this, c] { Handshake(c); });
      case TlsIo::kClosed:
        return Close(c);
    }
  }

  // Idle until a request's first bytes, then its header within header_timeout (a client
  // trickling a header does not hold the connection for the idle time), then its body with
  // the idle time between reads.
  void WaitForRequest(const ConnPtr& c) {
    if (stopping) return Close(c);
    c->phase = Phase::kIdle;
    c->waiting = true;
    c->parser = std::make_unique<http::request_parser<http::string_body>>();
    c->parser->body_limit(opts.max_body_bytes);
    c->parser->header_limit(kHeaderLimit);
    if (c->in.empty()) std::string().swap(c->in);  // an idle connection keeps no buffer
    Arm(c, opts.idle_timeout);
    ReadRequest(c);
  }

  void ReadRequest(const ConnPtr& c) {
    if (c->phase != Phase::kIdle && c->phase != Phase::kHeader && c->phase != Phase::kBody) {
      return;
    }
    thread_local char buf[kReadChunk];
    while (true) {
      if (!c->in.empty()) {
        if (c->phase == Phase::kIdle) {
          c->phase = Phase::kHeader;
          Arm(c, opts.header_timeout);
        }
        beast::error_code ec;
        while (!c->in.empty() && !c->parser->is_done()) {
          const size_t used = c->parser->put(net::buffer(c->in), ec);
          c->in.erase(0, used);
          if (ec == http::error::need_more) {
            ec = {};
            break;
          }
          if (ec || used == 0) break;
        }
        if (ec == http::error::body_limit) return RefuseTooLarge(c);
        if (ec) return Close(c);
        if (c->phase == Phase::kHeader && c->parser->is_header_done()) {
          c->phase = Phase::kBody;
          Arm(c, opts.idle_timeout);
        }
        if (c->parser->is_done()) return Dispatch(c);
        if (c->phase == Phase::kHeader && c->in.size() > kHeaderLimit) return Close(c);
      }
      size_t n = 0;
      switch (const TlsIo r = c->tls.Read(buf, sizeof buf, &n)) {
        case TlsIo::kDone:
          c->in.append(buf, n);
          if (c->phase == Phase::kBody) Arm(c, opts.idle_timeout);
          break;
        case TlsIo::kWantRead:
        case TlsIo::kWantWrite:
          return WaitThen(c, r, [this, c] { ReadRequest(c); });
        case TlsIo::kClosed:
          return Close(c);
      }
    }
  }

  // ---- answering ----

  class Writer;

  void Dispatch(const ConnPtr& c) {
    Disarm(c);
    c->phase = Phase::kHandler;
    c->waiting = false;
    auto& req = c->parser->get();
    c->keep_alive = req.keep_alive();
    const unsigned version = req.version();
    auto r = std::make_shared<HttpRequest>(ToRequest(req, c->remote));
    c->parser.reset();
    if (!workers->Submit([this, c, r, version] { RunHandler(c, *r, version); })) Close(c);
  }

  void RefuseTooLarge(const ConnPtr& c);
  void RunHandler(const ConnPtr& c, const HttpRequest& req, unsigned version);

  // ---- a detached stream ----

  void StartStreaming(const ConnPtr& c, std::shared_ptr<StreamSource> source) {
    c->phase = Phase::kStreaming;
    c->source = std::move(source);
    {
      std::lock_guard lock(mu);
      ++detached;
    }
    std::weak_ptr<Conn> weak = c;
    c->source->Start([this, weak] {
      auto conn = weak.lock();
      if (!conn || conn->woken.exchange(true)) return;
      net::post(conn->strand, [this, conn] {
        if (conn->phase == Phase::kStreaming && !conn->writing) Pump(conn);
      });
    });
    WatchPeer(c);
    Pump(c);
  }

  // A client that closes its end (or sends anything) ends the stream at once, not at its next
  // write.
  void WatchPeer(const ConnPtr& c) {
    c->sock.async_wait(tcp::socket::wait_read,
                       net::bind_executor(c->strand, [this, c](beast::error_code ec) {
                         if (ec == net::error::operation_aborted) return;
                         if (c->phase != Phase::kStreaming) return;
                         char b[512];
                         size_t n = 0;
                         if (!ec && c->tls.Read(b, sizeof b, &n) == TlsIo::kWantRead) {
                           return WatchPeer(c);  // a TLS record with nothing for us
                         }
                         Close(c);
                       }));
  }

  void Pump(const ConnPtr& c) {
    if (c->phase != Phase::kStreaming || c->writing) return;
    if (!c->source_done && c->source) {
      c->woken = false;
      std::string data;
      std::chrono::milliseconds again = std::chrono::hours(24);
      const bool more = c->source->Pull(&data, &again);
      if (!data.empty()) AppendChunk(&c->out, data);
      c->next_pull = SteadyClock::now() + again;
      if (!more || stopping) {
        c->source_done = true;
        c->out.append(kLastChunk);
        EndSource(c);
      }
    }
    if (c->out_written < c->out.size()) return Flush(c);
    if (c->source_done) return FinishStream(c);
    ArmAt(c, c->next_pull);
  }

  void Flush(const ConnPtr& c) {
    while (c->out_written < c->out.size()) {
      size_t n = 0;
      const std::string_view rest = std::string_view(c->out).substr(c->out_written);
      switch (const TlsIo r = c->tls.Write(rest, &n)) {
        case TlsIo::kDone:
          c->out_written += n;
          break;
        case TlsIo::kWantRead:
        case TlsIo::kWantWrite:
          if (!c->writing) Arm(c, opts.write_timeout);  // a client that stopped reading
          c->writing = true;
          return WaitThen(c, r, [this, c] { Flush(c); });
        case TlsIo::kClosed:
          return Close(c);
      }
    }
    std::string().swap(c->out);
    c->out_written = 0;
    c->writing = false;
    if (c->phase != Phase::kStreaming) return;
    if (c->source_done || c->woken) return Pump(c);
    ArmAt(c, c->next_pull);
  }

  void EndSource(const ConnPtr& c) {
    if (!c->source) return;
    c->source->Close();
    c->source.reset();
    std::lock_guard lock(mu);
    --detached;
  }

  void FinishStream(const ConnPtr& c) {
    beast::error_code ec;
    c->sock.cancel(ec);  // the peer watch: the next request is read as usual
    c->source_done = false;
    if (!c->keep_alive) return Close(c);
    WaitForRequest(c);
  }

  // ---- the end ----

  void Close(const ConnPtr& c) {
    if (c->phase == Phase::kClosed) return;
    c->phase = Phase::kClosed;
    c->waiting = false;
    Disarm(c);
    EndSource(c);
    {
      std::lock_guard l(c->fd_mu);
      c->closed = true;
      beast::error_code ec;
      c->sock.shutdown(tcp::socket::shutdown_both, ec);
      c->sock.close(ec);
    }
    std::string().swap(c->in);
    std::string().swap(c->out);
    std::lock_guard lock(mu);
    conns.erase(c->id);
    unauthenticated.erase(c->id);
    if (conns.empty()) drained.notify_all();
  }
};

// How a handler answers, on its worker thread: blocking writes with the write timeout. The
// connection is the handler's alone until it returns.
class HttpServer::Impl::Writer final : public ResponseWriter {
 public:
  Writer(Impl& server, ConnPtr c, unsigned version)
      : server_(server), c_(std::move(c)), version_(version) {}

  bool Send(int status, std::string_view content_type, std::string_view body,
            const std::vector<std::pair<std::string, std::string>>& headers) override {
    std::string out = StatusLine(status, version_);
    AddHeader(&out, "Server", "kvol");
    if (!content_type.empty()) AddHeader(&out, "Content-Type", content_type);
    for (const auto& [k, v] : headers) AddHeader(&out, k, v);
    AddHeader(&out, "Content-Length", std::to_string(body.size()));
    AddConnectionHeader(&out, c_->keep_alive, version_);
    out += "\r\n";
    sent_ = true;
    // One write for a small answer; a large body is not copied.
    if (body.size() <= 16 * 1024) {
      out.append(body);
      return Write(out);
    }
    return Write(out) && Write(body);
  }

  bool StartStream(int status, std::string_view content_type) override {
    std::string out = StatusLine(status, version_);
    AddHeader(&out, "Server", "kvol");
    AddHeader(&out, "Content-Type", content_type);
    AddHeader(&out, "Cache-Control", "no-cache, private");
    AddHeader(&out, "Transfer-Encoding", "chunked");
    AddConnectionHeader(&out, c_->keep_alive, version_);
    out += "\r\n";
    sent_ = true;
    streaming_ = true;
    return Write(out);
  }

  bool WriteChunk(std::string_view data) override {
    if (!ok_ || data.empty()) return ok_;
    std::string out;
    AppendChunk(&out, data);
    return Write(out);
  }

  void EndStream() override {
    if (!ok_ || !streaming_) return;
    Write(kLastChunk);
    streaming_ = false;
  }

  std::unique_ptr<UpgradedConnection> Upgrade(
      const std::vector<std::pair<std::string, std::string>>& headers) override {
    std::string out = StatusLine(101, version_);
    for (const auto& [k, v] : headers) AddHeader(&out, k, v);
    out += "\r\n";
    sent_ = true;
    upgraded_ = true;
    if (!Write(out)) return nullptr;
    return std::make_unique<Upgraded>(*this);
  }

  bool Stopping() const override {
    return server_.stopping.load() || (streaming_ && PeerClosed(c_->tls.fd()));
  }

  bool Detach(std::shared_ptr<StreamSource> source) override {
    if (!ok_ || !streaming_ || detached_ || server_.stopping) return false;
    detached_ = std::move(source);
    return true;
  }

  void Authenticated() override { server_.MarkAuthenticated(*c_); }

  bool sent() const { return sent_; }
  bool reusable() const { return ok_ && !upgraded_ && !streaming_; }
  std::shared_ptr<StreamSource> TakeDetached() { return std::move(detached_); }

 private:
  // The connection after a 101, for its handler: what was read past the request comes first.
  // Reads have no limit (a session may be quiet for as long as its user likes); writes keep
  // the write timeout.
  class Upgraded final : public UpgradedConnection {
   public:
    explicit Upgraded(Writer& w) : w_(w) {}
    int fd() const override { return w_.c_->tls.fd(); }
    bool Buffered() const override { return !w_.c_->in.empty() || w_.c_->tls.Pending(); }
    bool ReadSome(std::string* out) override {
      if (!w_.c_->in.empty()) {
        out->swap(w_.c_->in);
        w_.c_->in.clear();
        return true;
      }
      return w_.c_->tls.ReadSome(out);
    }
    bool Write(std::string_view data) override { return w_.Write(data); }

   private:
    Writer& w_;
  };

  bool Write(std::string_view data) {
    if (!ok_) return false;
    ok_ = c_->tls.WriteAll(data, server_.opts.write_timeout);
    return ok_;
  }

  Impl& server_;
  ConnPtr c_;
  const unsigned version_;
  bool sent_ = false;
  bool streaming_ = false;
  bool upgraded_ = false;
  bool ok_ = true;
  std::shared_ptr<StreamSource> detached_;
};

void HttpServer::Impl::RefuseTooLarge(const ConnPtr& c) {
  Disarm(c);
  c->phase = Phase::kHandler;
  c->waiting = false;
  c->keep_alive = false;
  const bool taken = workers->Submit([this, c] {
    Writer w(*this, c, 11);
    w.Send(
        413, "application/json",
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
        R"("message":"Request entity too large: limit is 3145728","reason":"RequestEntityTooLarge",)"
        R"("code":413})",
        {});
    net::post(c->strand, [this, c] { Close(c); });
  });
  if (!taken) Close(c);
}

void HttpServer::Impl::RunHandler(const ConnPtr& c, const HttpRequest& req, unsigned version) {
  Writer w(*this, c, version);
  handler(req, w);
  if (!w.sent()) w.Send(500, "text/plain", "no response\n", {});
  if (auto source = w.TakeDetached()) {
    net::post(c->strand, [this, c, source] { StartStreaming(c, source); });
    return;
  }
  const bool again = w.reusable() && c->keep_alive && !stopping;
  net::post(c->strand, [this, c, again] {
    if (again) return WaitForRequest(c);
    Close(c);
  });
}

HttpServer::HttpServer(HttpServerOptions opts, Handler handler) : impl_(std::make_unique<Impl>()) {
  impl_->opts = std::move(opts);
  impl_->handler = std::move(handler);
}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  auto& im = *impl_;
  beast::error_code ec;
  im.tls.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                     ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  im.tls.use_certificate_chain(net::buffer(im.opts.cert_pem), ec);
  if (ec) return InvalidArgumentError("serving certificate: " + ec.message());
  im.tls.use_private_key(net::buffer(im.opts.key_pem), ssl::context::pem, ec);
  if (ec) return InvalidArgumentError("serving key: " + ec.message());
  PrepareServerContext(im.tls.native_handle());
  // Only HTTP/1.1: Go clients fall back to it when the server does not offer h2.
  auto address = net::ip::make_address(im.opts.host, ec);
  if (ec) return InvalidArgumentError("listen address \"" + im.opts.host + "\": " + ec.message());
  tcp::endpoint ep(address, static_cast<unsigned short>(im.opts.port));
  im.acceptor = std::make_unique<tcp::acceptor>(im.io);
  im.acceptor->open(ep.protocol(), ec);
  if (!ec) SetCloseOnExec(im.acceptor->native_handle());
  if (!ec) im.acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) im.acceptor->bind(ep, ec);
  if (ec) {
    return UnavailableError("cannot listen on " + im.opts.host + ":" +
                            std::to_string(im.opts.port) + ": " + ec.message() +
                            (ec == net::error::address_in_use
                                 ? " (is another kvol or Kubernetes API server running?)"
                                 : ""));
  }
  im.acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) return UnavailableError("listen: " + ec.message());
  port_ = im.acceptor->local_endpoint().port();
  im.accept_retry = std::make_unique<net::steady_timer>(im.io);
  im.workers = std::make_unique<WorkerPool>(WorkerPool::Options{
      .max_threads = std::max<size_t>(im.opts.max_handler_threads, 1),
      .idle_exit = std::chrono::seconds(30),
      .thread_name = "http-handler",
      .on_start = BlockSigpipe,
  });
  im.work.emplace(im.io.get_executor());
  im.Accept();
  for (size_t i = 0; i < std::max<size_t>(im.opts.io_threads, 1); ++i) {
    im.io_threads.emplace_back([this] {
      SetThreadName("http-io");
      BlockSigpipe();
      impl_->io.run();
    });
  }
  return OkStatus();
}

void HttpServer::Stop() {
  auto& im = *impl_;
  if (im.stopping.exchange(true)) return;
  if (im.io_threads.empty()) return;  // never started
  net::post(im.io, [&im] {
    beast::error_code ec;
    im.acceptor->close(ec);
    im.accept_retry->cancel();
  });
  // Ending every socket ends whatever waits on it: the strand's reads and writes, a handler's
  // blocking ones. Detached streams are pulled one last time and end.
  std::vector<Impl::ConnPtr> open;
  {
    std::lock_guard lock(im.mu);
    for (auto& [id, w] : im.conns) {
      if (auto c = w.lock()) open.push_back(std::move(c));
    }
  }
  for (auto& c : open) {
    c->ShutdownSocket();
    net::post(c->strand, [&im, c] {
      if (c->phase != Impl::Phase::kHandler) im.Close(c);
    });
  }
  open.clear();
  im.workers->Stop();  // handlers return once their writes fail or they see Stopping()
  {
    std::unique_lock lock(im.mu);
    if (!im.drained.wait_for(lock, std::chrono::seconds(10), [&im] { return im.conns.empty(); })) {
      log::Warn("https: " + std::to_string(im.conns.size()) +
                " connections still open 10s after the server began to stop");
    }
  }
  im.work.reset();
  im.io.stop();
  for (auto& t : im.io_threads) t.join();
}

HttpServer::Stats HttpServer::stats() const {
  auto& im = *impl_;
  Stats s;
  std::lock_guard lock(im.mu);
  s.connections = im.conns.size();
  for (auto& [id, w] : im.unauthenticated) {
    auto c = w.lock();
    if (c && !c->evicted) ++s.unauthenticated;
  }
  s.detached_streams = im.detached;
  s.threads = im.io_threads.size() + (im.workers ? im.workers->threads() : 0);
  return s;
}

}  // namespace kvol::apiserver
