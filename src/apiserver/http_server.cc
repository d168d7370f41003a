// HTTPS server on Boost.Beast: a listener thread accepts, each connection gets its own thread
// running the synchronous read-handle-write loop.
#include "apiserver/http_server.h"

#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <set>

#include "apiserver/tls_stream.h"
#include "base/fd.h"
#include "base/thread.h"

namespace kvol::apiserver {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

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

beast::string_view Sv(std::string_view s) { return beast::string_view(s.data(), s.size()); }

using SteadyClock = std::chrono::steady_clock;

// Deadlines are kept as nanoseconds of the steady clock, so that a connection's thread and the
// watchdog can share one without a lock.
constexpr int64_t kNoDeadline = INT64_MAX;

int64_t DeadlineAfter(std::chrono::milliseconds d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             (SteadyClock::now() + d).time_since_epoch())
      .count();
}

class ConnectionWriter final : public ResponseWriter {
 public:
  // Each write may take `write_timeout`; `deadline` is the connection's, which the server's
  // watchdog enforces.
  ConnectionWriter(SslStream& stream, beast::flat_buffer& buffer, bool keep_alive,
                   unsigned version, const std::atomic<bool>& stopping,
                   std::atomic<int64_t>& deadline, std::chrono::milliseconds write_timeout)
      : stream_(stream),
        buffer_(buffer),
        keep_alive_(keep_alive),
        version_(version),
        stopping_(stopping),
        deadline_(deadline),
        write_timeout_(write_timeout) {}

  std::unique_ptr<UpgradedConnection> Upgrade(
      const std::vector<std::pair<std::string, std::string>>& headers) override {
    http::response<http::empty_body> res{http::status::switching_protocols, version_};
    for (const auto& [k, v] : headers) res.insert(Sv(k), Sv(v));
    ok_ = Timed([&](beast::error_code& ec) { http::write(stream_, res, ec); });
    sent_ = true;
    upgraded_ = true;
    if (!ok_) return nullptr;
    return std::make_unique<TimedUpgrade>(*this);
  }

  bool Send(int status, std::string_view content_type, std::string_view body,
            const std::vector<std::pair<std::string, std::string>>& headers = {}) override {
    http::response<http::string_body> res{static_cast<http::status>(status), version_};
    res.set(http::field::server, "kvol");
    if (!content_type.empty()) res.set(http::field::content_type, Sv(content_type));
    for (const auto& [k, v] : headers) res.insert(Sv(k), Sv(v));
    res.keep_alive(keep_alive_);
    res.body() = std::string(body);
    res.prepare_payload();
    ok_ = Timed([&](beast::error_code& ec) { http::write(stream_, res, ec); });
    sent_ = true;
    return ok_;
  }

  bool StartStream(int status, std::string_view content_type) override {
    http::response<http::empty_body> res{static_cast<http::status>(status), version_};
    res.set(http::field::server, "kvol");
    res.set(http::field::content_type, Sv(content_type));
    res.set(http::field::cache_control, "no-cache, private");
    res.keep_alive(keep_alive_);
    res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    ok_ = Timed([&](beast::error_code& ec) { http::write_header(stream_, sr, ec); });
    sent_ = true;
    streaming_ = true;
    return ok_;
  }

  bool WriteChunk(std::string_view data) override {
    if (!ok_) return false;
    ok_ = Timed([&](beast::error_code& ec) {
      net::write(stream_, http::make_chunk(net::const_buffer(data.data(), data.size())), ec);
    });
    return ok_;
  }

  void EndStream() override {
    if (!ok_ || !streaming_) return;
    ok_ = Timed([&](beast::error_code& ec) { net::write(stream_, http::make_chunk_last(), ec); });
    streaming_ = false;
  }

  // The server stops or, while a watch or a followed log streams, the client has closed its
  // end: a stream waiting for news ends at its next look (every half second) rather than at
  // its next write, and the connection and its thread go.
  bool Stopping() const override { return stopping_.load() || (streaming_ && PeerClosed()); }
  bool sent() const { return sent_; }
  bool ok() const { return ok_ && !upgraded_; }

 private:
  bool PeerClosed() const {
    pollfd p{beast::get_lowest_layer(stream_).socket().native_handle(), POLLRDHUP, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
  }

  // The connection after the upgrade, whose writes keep the write timeout (a peer that stops
  // reading an exec session's output does not hold its thread). Reads have no limit: a session
  // may be quiet for as long as its user likes. Used only while the handler runs, so the
  // writer outlives it.
  class TimedUpgrade final : public UpgradedConnection {
   public:
    explicit TimedUpgrade(ConnectionWriter& w) : w_(w), conn_(w.stream_, w.buffer_) {}
    int fd() const override { return conn_.fd(); }
    bool Buffered() const override { return conn_.Buffered(); }
    bool ReadSome(std::string* out) override { return conn_.ReadSome(out); }
    bool Write(std::string_view data) override {
      return w_.Timed([&](beast::error_code& ec) {
        net::write(w_.stream_, net::const_buffer(data.data(), data.size()), ec);
      });
    }

   private:
    ConnectionWriter& w_;
    UpgradedStream conn_;
  };

  // One write, under the connection's deadline for as long as it takes. True if it went out.
  template <class Write>
  bool Timed(Write&& write) {
    beast::error_code ec;
    deadline_ = DeadlineAfter(write_timeout_);
    write(ec);
    deadline_ = kNoDeadline;
    return !ec;
  }

  SslStream& stream_;
  beast::flat_buffer& buffer_;
  bool upgraded_ = false;
  bool keep_alive_;
  unsigned version_;
  const std::atomic<bool>& stopping_;
  std::atomic<int64_t>& deadline_;
  const std::chrono::milliseconds write_timeout_;
  bool sent_ = false;
  bool streaming_ = false;
  bool ok_ = true;
};

}  // namespace

struct HttpServer::Impl {
  HttpServerOptions opts;
  Handler handler;
  net::io_context io{1};
  ssl::context tls{ssl::context::tls_server};
  std::unique_ptr<tcp::acceptor> acceptor;
  std::thread accept_thread;
  std::atomic<bool> stopping{false};

  struct Conn {
    std::thread thread;
    std::mutex m;      // guards fd against reuse between close and a shutdown from elsewhere
    int fd = -1;       // -1 once closed
    bool done = false;  // guarded by Impl::mu
    // While the connection waits for its handshake or a request, or while a write goes out:
    // when the watchdog ends it.
    std::atomic<int64_t> deadline{kNoDeadline};
  };
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::shared_ptr<Conn>> conns;
  std::thread watchdog;

  // Blocking reads cannot time out by themselves: Asio answers a receive timeout
  // (SO_RCVTIMEO) by polling the socket with no limit. So a connection past its deadline is
  // shut down from here, which ends the read it is blocked in.
  void WatchdogLoop() {
    const auto shortest = std::min(
        {opts.handshake_timeout, opts.header_timeout, opts.idle_timeout, opts.write_timeout});
    const auto tick = std::clamp<std::chrono::milliseconds>(shortest / 4, std::chrono::milliseconds(5),
                                                            std::chrono::seconds(1));
    std::unique_lock lock(mu);
    while (!stopping) {
      cv.wait_for(lock, tick, [this] { return stopping.load(); });
      const int64_t now = DeadlineAfter(std::chrono::milliseconds(0));
      for (auto& c : conns) {
        if (c->deadline.load(std::memory_order_relaxed) > now) continue;
        std::lock_guard l(c->m);
        c->deadline = kNoDeadline;
        if (c->fd >= 0) ::shutdown(c->fd, SHUT_RDWR);
      }
    }
  }

  void AcceptLoop() {
    while (!stopping) {
      beast::error_code ec;
      tcp::socket sock(io);
      acceptor->accept(sock, ec);
      if (ec) {
        if (stopping) return;
        continue;
      }
      SetCloseOnExec(sock.native_handle());  // Asio's accept does not set it
      std::lock_guard lock(mu);
      // Reap finished connection threads.
      std::erase_if(conns, [](const std::shared_ptr<Conn>& c) {
        if (!c->done) return false;
        c->thread.join();
        return true;
      });
      if (conns.size() >= opts.max_connections) continue;  // drop: too many clients
      auto conn = std::make_shared<Conn>();
      conn->fd = sock.native_handle();
      conn->deadline = DeadlineAfter(opts.handshake_timeout);
      conn->thread = std::thread([this, conn, s = std::move(sock)]() mutable {
        SetThreadName("http-conn");
        Serve(std::move(s), *conn);
        std::lock_guard l(mu);
        conn->done = true;
        cv.notify_all();
      });
      conns.push_back(std::move(conn));
    }
  }

  void Serve(tcp::socket sock, Conn& conn) {
    std::string remote;
    beast::error_code ec;
    auto ep = sock.remote_endpoint(ec);
    if (!ec) remote = ep.address().to_string() + ":" + std::to_string(ep.port());
    // Without it, Nagle's algorithm holds a small write (a watch event, the last piece of a
    // response) while an earlier one is unacknowledged, and a client with nothing to send
    // acknowledges only after its delayed-ACK timer, about 40 ms.
    sock.set_option(tcp::no_delay(true), ec);
    SslStream stream(std::move(sock), tls);
    ServeStream(stream, remote, conn);
    std::lock_guard l(conn.m);
    auto& socket = beast::get_lowest_layer(stream).socket();
    socket.shutdown(tcp::socket::shutdown_both, ec);
    socket.close(ec);
    conn.fd = -1;
  }

  void ServeStream(SslStream& stream, const std::string& remote, Conn& conn) {
    beast::error_code ec;
    stream.handshake(ssl::stream_base::server, ec);
    if (ec) return;
    beast::flat_buffer buffer;
    while (!stopping) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(opts.max_body_bytes);
      parser.header_limit(64 * 1024);
      // Idle until the request's first bytes, then its header within header_timeout (a
      // client trickling a header does not hold the connection for the idle time), then the
      // body within the idle time.
      conn.deadline = DeadlineAfter(opts.idle_timeout);
      if (buffer.size() == 0) {
        const size_t got = stream.read_some(buffer.prepare(16 * 1024), ec);
        buffer.commit(got);
        if (ec) break;
      }
      conn.deadline = DeadlineAfter(opts.header_timeout);
      http::read_header(stream, buffer, parser, ec);
      if (!ec) {
        conn.deadline = DeadlineAfter(opts.idle_timeout);
        http::read(stream, buffer, parser, ec);
      }
      conn.deadline = kNoDeadline;
      if (ec == http::error::body_limit) {
        ConnectionWriter w(stream, buffer, false, 11, stopping, conn.deadline, opts.write_timeout);
        w.Send(413, "application/json",
               R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
               R"("message":"Request entity too large: limit is 3145728","reason":"RequestEntityTooLarge",)"
               R"("code":413})");
        break;
      }
      if (ec) break;
      auto& req = parser.get();
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
        r.headers[name] = std::string(f.value());
      }
      r.body = std::move(req.body());
      const bool keep_alive = req.keep_alive();
      ConnectionWriter writer(stream, buffer, keep_alive, req.version(), stopping, conn.deadline,
                              opts.write_timeout);
      handler(r, writer);
      if (!writer.sent()) writer.Send(500, "text/plain", "no response\n");
      if (!writer.ok() || !keep_alive) break;
    }
  }
};

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
  im.accept_thread = std::thread([this] {
    SetThreadName("http-accept");
    impl_->AcceptLoop();
  });
  im.watchdog = std::thread([this] {
    SetThreadName("http-watchdog");
    impl_->WatchdogLoop();
  });
  return OkStatus();
}

void HttpServer::Stop() {
  auto& im = *impl_;
  if (im.stopping.exchange(true)) return;
  if (im.acceptor) {
    beast::error_code ec;
    // Unblock accept(): shutdown wakes a thread blocked in accept on Linux.
    ::shutdown(im.acceptor->native_handle(), SHUT_RDWR);
    im.acceptor->close(ec);
  }
  if (im.accept_thread.joinable()) im.accept_thread.join();
  {
    std::lock_guard lock(im.mu);
    im.cv.notify_all();
  }
  if (im.watchdog.joinable()) im.watchdog.join();
  std::vector<std::shared_ptr<Impl::Conn>> conns;
  {
    std::lock_guard lock(im.mu);
    conns = im.conns;
    for (auto& c : conns) {
      std::lock_guard l(c->m);
      if (c->fd >= 0) ::shutdown(c->fd, SHUT_RDWR);  // ends blocked reads and writes
    }
  }
  for (auto& c : conns) {
    if (c->thread.joinable()) c->thread.join();
  }
  std::lock_guard lock(im.mu);
  im.conns.clear();
}

}  // namespace kvol::apiserver
