// HTTPS with Boost.Beast. Every connection owns an io_context; a blocking call starts the
// asynchronous operation and runs that context until it completes or its deadline passes, so
// each call has a timeout without a thread of its own.
#include "client/http_transport.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <limits>

#include "base/fd.h"

namespace kvol::client {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t kMaxResponseBytes = 1ull << 30;
constexpr size_t kMaxErrorBodyBytes = 1 << 20;

bool IsIp(const std::string& host) {
  beast::error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

// A failure on a connection the server may have closed while it sat idle.
bool IsStaleConnection(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == net::error::eof ||
         ec == net::error::connection_reset || ec == net::error::broken_pipe ||
         ec == ssl::error::stream_truncated;
}

Status TransportError(std::string_view what, const std::string& where, const beast::error_code& ec) {
  std::string msg = std::string(what) + " " + where + ": " + ec.message();
  if (ec == beast::error::timeout) return DeadlineExceededError(std::move(msg));
  return UnavailableError(std::move(msg));
}

}  // namespace

struct HttpTransport::Tls {
  ssl::context ctx{ssl::context::tls_client};
};

class HttpTransport::Connection {
 public:
  explicit Connection(ssl::context& ctx) : stream(ioc, ctx) {}

  // Starts an asynchronous operation with `start(handler)` and runs it to completion, or until
  // `timeout` passes (then the socket is closed and the result is beast::error::timeout). The
  // deadline is the context's own wait, not a timer: no timer to arm and cancel per call.
  template <class Start>
  beast::error_code Run(std::chrono::milliseconds timeout, Start&& start) {
    beast::error_code result = net::error::would_block;
    start([&result](beast::error_code ec, auto&&...) { result = ec; });
    ioc.restart();
    ioc.run_for(timeout);
    if (result == net::error::would_block) {
      // Still in flight at the deadline: closing the socket completes it, aborted.
      beast::error_code ignored;
      beast::get_lowest_layer(stream).socket().close(ignored);
      ioc.restart();
      ioc.run();
      return beast::error::timeout;
    }
    return result;
  }

  net::io_context ioc;
  beast::ssl_stream<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  bool reused = false;
};

// The body of a streaming response, read a piece at a time into `pending_` and handed out
// line by line. The read in flight survives a Next that times out and completes in a later one.
class HttpTransport::LineStream final : public HttpLineStream {
 public:
  using Parser = http::response_parser<http::buffer_body>;

  LineStream(std::unique_ptr<Connection> c, std::unique_ptr<Parser> p)
      : c_(std::move(c)), parser_(std::move(p)) {
    beast::get_lowest_layer(c_->stream).expires_never();
  }
  ~LineStream() override {
    beast::error_code ec;
    beast::get_lowest_layer(c_->stream).socket().close(ec);
  }

  StatusOr<std::vector<std::string>> Next(std::chrono::milliseconds timeout) override {
    std::vector<std::string> lines;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      TakeLines(&lines);
      if (!lines.empty()) return lines;
      if (closed_) return CancelledError("the stream was closed");
      if (!end_.ok()) return end_;
      if (!reading_) StartRead();
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= 0s) return lines;
      c_->ioc.restart();
      c_->ioc.run_for(left);
      if (reading_ && std::chrono::steady_clock::now() >= deadline) return lines;
    }
  }

  void Close() override {
    closed_ = true;
    net::post(c_->ioc, [c = c_.get()] {
      beast::error_code ec;
      beast::get_lowest_layer(c->stream).socket().shutdown(tcp::socket::shutdown_both, ec);
      beast::get_lowest_layer(c->stream).socket().close(ec);
    });
  }

 private:
  void StartRead() {
    reading_ = true;
    parser_->get().body().data = chunk_;
    parser_->get().body().size = sizeof(chunk_);
    http::async_read_some(c_->stream, c_->buffer, *parser_,
                          [this](beast::error_code ec, size_t) { OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    reading_ = false;
    const size_t got = sizeof(chunk_) - parser_->get().body().size;
    pending_.append(chunk_, got);
    if (ec == http::error::need_buffer) ec = {};
    if (ec) {
      end_ = IsStaleConnection(ec) ? OutOfRangeError("the server ended the stream")
                                   : UnavailableError("reading the stream: " + ec.message());
    } else if (parser_->is_done()) {
      end_ = OutOfRangeError("the server ended the stream");
    }
    if (!end_.ok() && !pending_.empty() && pending_.back() != '\n') pending_ += '\n';
  }

  void TakeLines(std::vector<std::string>* lines) {
    size_t start = 0;
    for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (nl > start) lines->emplace_back(pending_, start, nl - start);
    }
    pending_.erase(0, start);
  }

  std::unique_ptr<Connection> c_;
  std::unique_ptr<Parser> parser_;
  char chunk_[64 * 1024];
  std::string pending_;
  bool reading_ = false;
  Status end_;
  std::atomic<bool> closed_{false};
};

HttpTransport::HttpTransport(HttpConfig config)
    : config_(std::move(config)), tls_(std::make_unique<Tls>()) {}

HttpTransport::~HttpTransport() = default;

StatusOr<std::unique_ptr<HttpTransport>> HttpTransport::Create(HttpConfig config) {
  std::string_view url = config.server;
  constexpr std::string_view kScheme = "https://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return InvalidArgumentError("server \"" + config.server +
                                "\": only https:// API servers are supported");
  }
  url.remove_prefix(kScheme.size());
  std::string_view hostport = url.substr(0, url.find('/'));
  if (url.size() > hostport.size() && url.substr(hostport.size()) != "/") {
    return InvalidArgumentError("server \"" + config.server + "\": a path prefix is not supported");
  }
  std::unique_ptr<HttpTransport> t(new HttpTransport(std::move(config)));
  if (!hostport.empty() && hostport.front() == '[') {
    size_t close = hostport.find(']');
    if (close == std::string_view::npos) {
      return InvalidArgumentError("server \"" + t->config_.server + "\": unbalanced [");
    }
    t->host_ = std::string(hostport.substr(1, close - 1));
    std::string_view rest = hostport.substr(close + 1);
    t->port_ = rest.size() > 1 && rest[0] == ':' ? std::string(rest.substr(1)) : "443";
  } else {
    size_t colon = hostport.rfind(':');
    t->host_ = std::string(hostport.substr(0, colon));
    t->port_ = colon == std::string_view::npos ? "443" : std::string(hostport.substr(colon + 1));
  }
  if (t->host_.empty()) {
    return InvalidArgumentError("server \"" + t->config_.server + "\": no host");
  }
  t->host_header_ = std::string(hostport);

  beast::error_code ec;
  auto& ctx = t->tls_->ctx;
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                  ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  if (t->config_.insecure_skip_tls_verify) {
    ctx.set_verify_mode(ssl::verify_none);
  } else {
    ctx.set_verify_mode(ssl::verify_peer);
    if (t->config_.ca_pem.empty()) {
      ctx.set_default_verify_paths(ec);
    } else {
      ctx.add_certificate_authority(net::buffer(t->config_.ca_pem), ec);
    }
    if (ec) return InvalidArgumentError("certificate authority: " + ec.message());
  }
  return t;
}

StatusOr<std::unique_ptr<HttpTransport::Connection>> HttpTransport::Connect() {
  auto c = std::make_unique<Connection>(tls_->ctx);
  tcp::resolver resolver(c->ioc);
  beast::error_code ec;
  auto endpoints = resolver.resolve(host_, port_, ec);
  if (ec) return UnavailableError("lookup " + host_ + ": " + ec.message());
  ec = c->Run(config_.timeout, [&](auto handler) {
    beast::get_lowest_layer(c->stream).async_connect(endpoints, std::move(handler));
  });
  if (ec) return TransportError("dial tcp", host_header_, ec);
  SetCloseOnExec(beast::get_lowest_layer(c->stream).socket().native_handle());
  beast::get_lowest_layer(c->stream).socket().set_option(tcp::no_delay(true), ec);
  SSL* ssl = c->stream.native_handle();
  const bool ip = IsIp(host_);
  if (!ip) SSL_set_tlsext_host_name(ssl, host_.c_str());
  if (!config_.insecure_skip_tls_verify) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host_.c_str())
                : X509_VERIFY_PARAM_set1_host(param, host_.c_str(), 0);
    if (ok != 1) return InvalidArgumentError("cannot verify host " + host_);
  }
  ec = c->Run(config_.timeout, [&](auto handler) {
    c->stream.async_handshake(ssl::stream_base::client, std::move(handler));
  });
  if (ec) return TransportError("TLS handshake with", host_header_, ec);
  return c;
}

StatusOr<HttpResponse> HttpTransport::Do(std::string_view method, const std::string& target,
                                         std::string_view content_type, std::string body) {
  http::request<http::string_body> req{
      http::string_to_verb(beast::string_view(method.data(), method.size())), target, 11};
  if (req.method() == http::verb::unknown) {
    return InvalidArgumentError("unknown HTTP method " + std::string(method));
  }
  req.set(http::field::host, host_header_);
  req.set(http::field::user_agent, "kvol-client");
  req.set(http::field::accept, "application/json");
  if (!config_.token.empty()) req.set(http::field::authorization, "Bearer " + config_.token);
  if (!content_type.empty()) {
    req.set(http::field::content_type, beast::string_view(content_type.data(), content_type.size()));
  }
  req.body() = std::move(body);
  req.prepare_payload();
  req.keep_alive(true);

  for (int attempt = 0; attempt < 2; ++attempt) {
    std::unique_ptr<Connection> c;
    {
      std::lock_guard lock(mu_);
      if (!idle_.empty()) {
        c = std::move(idle_.back());
        idle_.pop_back();
      }
    }
    if (!c) {
      auto fresh = Connect();
      if (!fresh.ok()) return fresh.status();
      c = *std::move(fresh);
    }
    const bool reused = c->reused;
    auto ec = c->Run(config_.timeout, [&](auto handler) {
      http::async_write(c->stream, req, std::move(handler));
    });
    if (ec) {
      if (reused && IsStaleConnection(ec)) continue;
      return TransportError("writing to", host_header_, ec);
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxResponseBytes);
    ec = c->Run(config_.timeout, [&](auto handler) {
      http::async_read(c->stream, c->buffer, parser, std::move(handler));
    });
    if (ec) {
      if (reused && !parser.got_some() && IsStaleConnection(ec)) continue;
      return TransportError("reading from", host_header_, ec);
    }
    auto res = parser.release();
    HttpResponse out{static_cast<int>(res.result_int()), std::move(res.body())};
    if (res.keep_alive()) {
      c->reused = true;
      std::lock_guard lock(mu_);
      if (idle_.size() < config_.max_idle_connections) idle_.push_back(std::move(c));
    }
    return out;
  }
  return UnavailableError("the connection to " + host_header_ + " was closed by the server");
}

StatusOr<std::unique_ptr<HttpLineStream>> HttpTransport::Stream(const std::string& target,
                                                                int* status,
                                                                std::string* error_body) {
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, host_header_);
  req.set(http::field::user_agent, "kvol-client");
  req.set(http::field::accept, "application/json");
  if (!config_.token.empty()) req.set(http::field::authorization, "Bearer " + config_.token);
  auto conn = Connect();
  if (!conn.ok()) return conn.status();
  auto c = *std::move(conn);
  auto ec = c->Run(config_.timeout, [&](auto handler) {
    http::async_write(c->stream, req, std::move(handler));
  });
  if (ec) return TransportError("writing to", host_header_, ec);
  auto parser = std::make_unique<LineStream::Parser>();
  parser->body_limit(std::numeric_limits<uint64_t>::max());
  ec = c->Run(config_.timeout, [&](auto handler) {
    http::async_read_header(c->stream, c->buffer, *parser, std::move(handler));
  });
  if (ec) return TransportError("reading from", host_header_, ec);
  *status = parser->get().result_int();
  if (*status == 200) {
    return std::unique_ptr<HttpLineStream>(
        std::make_unique<LineStream>(std::move(c), std::move(parser)));
  }
  // An error: read its (short) body.
  error_body->clear();
  char buf[8192];
  while (!parser->is_done() && error_body->size() < kMaxErrorBodyBytes) {
    parser->get().body().data = buf;
    parser->get().body().size = sizeof(buf);
    ec = c->Run(config_.timeout, [&](auto handler) {
      http::async_read_some(c->stream, c->buffer, *parser, std::move(handler));
    });
    error_body->append(buf, sizeof(buf) - parser->get().body().size);
    if (ec == http::error::need_buffer) continue;
    if (ec) break;
  }
  return std::unique_ptr<HttpLineStream>();
}

}  // namespace kvol::client
