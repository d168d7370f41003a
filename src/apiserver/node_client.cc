// Dialling a node agent: TLS with a pinned certificate, a log as a chunked response read a
// piece at a time, exec as a WebSocket client whose channels become an ExecProcess.
#include "apiserver/node_client.h"

#include <poll.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <limits>

#include "api/well_known.h"
#include "apiserver/streaming.h"
#include "apiserver/tls.h"
#include "apiserver/tls_stream.h"
#include "apiserver/websocket.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/strings.h"

namespace kvol::apiserver {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using namespace std::chrono_literals;

// Dialling, the handshake, the request and the response's header each get this long.
constexpr auto kTimeout = 10s;

std::string Where(const NodeEndpoint& ep) {
  return "the node agent of node \"" + ep.node + "\" at " + ep.host + ":" + std::to_string(ep.port);
}

// One connection to an agent: synchronous use, with each step run asynchronously under a
// timeout.
struct AgentConnection {
  AgentConnection() : stream(ioc, ctx) {}

  template <class Start>
  beast::error_code Run(std::chrono::milliseconds timeout, Start&& start) {
    beast::error_code result = net::error::would_block;
    beast::get_lowest_layer(stream).expires_after(timeout);
    start([&result](beast::error_code ec, auto&&...) { result = ec; });
    ioc.restart();
    ioc.run();
    return result;
  }
  void Close() {
    beast::error_code ec;
    beast::get_lowest_layer(stream).socket().close(ec);
  }

  net::io_context ioc;
  ssl::context ctx{ssl::context::tls_client};
  SslStream stream;
  beast::flat_buffer buffer;
};

ApiOr<std::unique_ptr<AgentConnection>> Dial(const NodeEndpoint& ep) {
  auto c = std::make_unique<AgentConnection>();
  // The agent's certificate is self-signed: it is pinned below rather than verified.
  c->ctx.set_verify_mode(ssl::verify_none);
  beast::error_code ec;
  tcp::resolver resolver(c->ioc);
  auto endpoints = resolver.resolve(ep.host, std::to_string(ep.port), ec);
  if (ec) return Unavailable("cannot look up " + Where(ep) + ": " + ec.message());
  ec = c->Run(kTimeout, [&](auto handler) {
    beast::get_lowest_layer(c->stream).async_connect(endpoints, std::move(handler));
  });
  if (ec) return Unavailable("cannot reach " + Where(ep) + ": " + ec.message());
  SetCloseOnExec(beast::get_lowest_layer(c->stream).socket().native_handle());
  ec = c->Run(kTimeout, [&](auto handler) {
    c->stream.async_handshake(ssl::stream_base::client, std::move(handler));
  });
  if (ec) return Unavailable("TLS handshake with " + Where(ep) + ": " + ec.message());
  X509* cert = SSL_get1_peer_certificate(c->stream.native_handle());
  if (!cert) return Unavailable(Where(ep) + " presented no certificate");
  unsigned char* der = nullptr;
  const int n = i2d_X509(cert, &der);
  X509_free(cert);
  if (n <= 0) return Internal("cannot encode the certificate of " + Where(ep));
  const std::string sha = Sha256Hex(std::string_view(reinterpret_cast<const char*>(der), n));
  OPENSSL_free(der);
  if (sha != ep.certificate_sha256) {
    return Unavailable(Where(ep) + " presented a certificate with SHA-256 " + sha +
                       ", not the one its Node's " + std::string(api::kAnnAgentCertificateSha256) +
                       " annotation names");
  }
  return c;
}

std::string PodPath(std::string_view prefix, const api::Pod& pod, const std::string& container) {
  return std::string(prefix) + QueryEscape(pod.metadata.namespace_) + "/" +
         QueryEscape(pod.metadata.name) + "/" + QueryEscape(pod.metadata.uid) + "/" +
         QueryEscape(container);
}

template <class Body>
void SetHeaders(http::request<Body>& req, const NodeEndpoint& ep, const std::string& token) {
  req.set(http::field::host, ep.host + ":" + std::to_string(ep.port));
  req.set(http::field::user_agent, "kvol-apiserver");
  req.set(http::field::authorization, "Bearer " + token);
}

// Dials the agent and sends `req`, with its host, user agent and token set here.
ApiOr<std::unique_ptr<AgentConnection>> Send(const NodeEndpoint& ep, const std::string& token,
                                             http::request<http::empty_body>& req) {
  auto c = Dial(ep);
  if (!c.ok()) return c.error();
  AgentConnection& conn = **c;
  SetHeaders(req, ep, token);
  auto ec = conn.Run(
      kTimeout, [&](auto handler) { http::async_write(conn.stream, req, std::move(handler)); });
  if (ec) return Unavailable("writing to " + Where(ep) + ": " + ec.message());
  return c;
}

// The error an agent answered with: its Status, or its words.
ApiError ErrorOf(int code, const std::string& body) {
  auto j = api::ParseJson(body);
  if (j.ok() && j->is_object()) return ApiError::FromStatusJson(*j, code);
  ApiError e;
  e.code = code;
  e.reason = code == 401 ? "Unauthorized" : "InternalError";
  e.message = body.empty() ? "the node agent answered " + std::to_string(code) : body;
  return e;
}

// The response's body, read in pieces; a Next that finds nothing within a second returns an
// empty chunk, so the caller can notice the server stopping. A read in flight survives it.
class RemoteLogStream final : public LogStream {
 public:
  using Parser = http::response_parser<http::buffer_body>;
  RemoteLogStream(std::unique_ptr<AgentConnection> c, std::unique_ptr<Parser> p)
      : c_(std::move(c)), parser_(std::move(p)) {
    beast::get_lowest_layer(c_->stream).expires_never();
  }
  ~RemoteLogStream() override { c_->Close(); }

  bool Next(std::string* chunk) override {
    chunk->clear();
    if (failed_ || (parser_->is_done() && !reading_)) return false;
    if (!reading_) {
      reading_ = true;
      parser_->get().body().data = buf_;
      parser_->get().body().size = sizeof buf_;
      http::async_read_some(c_->stream, c_->buffer, *parser_, [this](beast::error_code ec, size_t) {
        reading_ = false;
        if (ec && ec != http::error::need_buffer) failed_ = true;
      });
    }
    c_->ioc.restart();
    c_->ioc.run_for(1s);
    if (reading_) return true;
    chunk->assign(buf_, sizeof buf_ - parser_->get().body().size);
    return !failed_ || !chunk->empty();
  }

 private:
  std::unique_ptr<AgentConnection> c_;
  std::unique_ptr<Parser> parser_;
  char buf_[16 * 1024];
  bool reading_ = false;
  bool failed_ = false;
};

// A process on the agent's node, through its exec WebSocket.
class RemoteExecProcess final : public ExecProcess {
 public:
  RemoteExecProcess(std::unique_ptr<AgentConnection> c, std::string where)
      : c_(std::move(c)),
        conn_(c_->stream, c_->buffer),
        ws_(conn_, WebSocket::Side::kClient),
        where_(std::move(where)) {
    beast::get_lowest_layer(c_->stream).expires_never();
  }
  ~RemoteExecProcess() override { c_->Close(); }

  int fd() const override { return conn_.fd(); }

  std::optional<int> Collect(std::vector<std::pair<int, std::string>>* out) override {
    out->clear();
    std::vector<std::string> messages;
    while (!ended_ && !outcome_) {
      if (!conn_.Buffered()) {
        pollfd p{conn_.fd(), POLLIN, 0};
        if (poll(&p, 1, 0) <= 0) break;
      }
      messages.clear();
      if (!ws_.Receive(&messages)) ended_ = true;
      for (const auto& m : messages) {
        if (m.empty()) continue;
        const int channel = static_cast<unsigned char>(m[0]);
        if (channel == 1 || channel == 2) out->emplace_back(channel, m.substr(1));
        if (channel == 3) {
          outcome_ = ExitCodeOf(std::string_view(m).substr(1));
          if (!outcome_) {
            log::Warn(where_ + ": exec ended with " + m.substr(1));
            outcome_ = 1;
          }
        }
      }
    }
    if (outcome_) return outcome_;
    if (ended_) {
      log::Warn(where_ + " closed an exec stream without its outcome");
      return 1;
    }
    return std::nullopt;
  }
  void WriteStdin(std::string_view data) override {
    ws_.SendBinary(std::string(1, '\0') + std::string(data));
  }
  void CloseStdin() override { ws_.SendBinary(std::string_view("\xff\0", 2)); }
  void Resize(uint16_t cols, uint16_t rows) override {
    ws_.SendBinary("\x04{\"Width\":" + std::to_string(cols) +
                   ",\"Height\":" + std::to_string(rows) + "}");
  }
  void Kill() override {
    ws_.Close();
    c_->Close();
  }

 private:
  std::unique_ptr<AgentConnection> c_;
  UpgradedStream conn_;
  WebSocket ws_;
  const std::string where_;
  bool ended_ = false;
  std::optional<int> outcome_;
};

}  // namespace

ApiOr<NodeEndpoint> NodeEndpointOf(const api::Node& node) {
  NodeEndpoint ep;
  ep.node = node.metadata.name;
  for (const char* type : {"InternalIP", "ExternalIP", "Hostname"}) {
    for (const auto& a : node.status.addresses) {
      if (ep.host.empty() && a.type == type) ep.host = a.address;
    }
  }
  const auto& extra = node.status.unknown_fields;
  if (extra.is_object()) {
    auto endpoints = extra.find("daemonEndpoints");
    if (endpoints != extra.end() && endpoints->is_object()) {
      auto kubelet = endpoints->find("kubeletEndpoint");
      if (kubelet != endpoints->end() && kubelet->is_object()) {
        auto port = kubelet->find("Port");
        if (port != kubelet->end() && port->is_number_integer()) ep.port = port->get<int>();
      }
    }
  }
  auto pin = node.metadata.annotations.find(std::string(api::kAnnAgentCertificateSha256));
  if (pin != node.metadata.annotations.end()) ep.certificate_sha256 = pin->second;
  auto lacks = [&](const std::string& what) {
    return Unavailable("the node agent of node \"" + ep.node +
                       "\" cannot be reached for logs and exec: its Node has no " + what);
  };
  if (ep.host.empty()) return lacks("address");
  if (ep.port <= 0) return lacks("status.daemonEndpoints.kubeletEndpoint.Port");
  if (ep.certificate_sha256.empty()) {
    return lacks(std::string(api::kAnnAgentCertificateSha256) + " annotation");
  }
  return ep;
}

ApiOr<std::unique_ptr<LogStream>> RemoteNodeConnection::Logs(const api::Pod& pod,
                                                             const PodLogOptions& opts) {
  std::string target = PodPath(kAgentLogPath, pod, opts.container);
  std::string query;
  auto add = [&](std::string_view key, const std::string& value) {
    query += (query.empty() ? "?" : "&") + std::string(key) + "=" + QueryEscape(value);
  };
  if (opts.follow) add("follow", "true");
  if (opts.previous) add("previous", "true");
  if (opts.tail_lines) add("tailLines", std::to_string(*opts.tail_lines));
  if (opts.limit_bytes) add("limitBytes", std::to_string(*opts.limit_bytes));
  target += query;

  http::request<http::empty_body> req{http::verb::get, target, 11};
  auto c = Send(endpoint_, token_, req);
  if (!c.ok()) return c.error();
  AgentConnection& conn = **c;
  auto parser = std::make_unique<RemoteLogStream::Parser>();
  // A followed log has no end; (boost::none would be taken for 0 by this Beast.)
  parser->body_limit(std::numeric_limits<std::uint64_t>::max());
  auto ec = conn.Run(kTimeout, [&](auto handler) {
    http::async_read_header(conn.stream, conn.buffer, *parser, std::move(handler));
  });
  if (ec) return Unavailable("reading from " + Where(endpoint_) + ": " + ec.message());
  const int code = parser->get().result_int();
  auto stream = std::make_unique<RemoteLogStream>(*std::move(c), std::move(parser));
  if (code == 200) return std::unique_ptr<LogStream>(std::move(stream));
  std::string body, chunk;
  for (int waits = 0; waits < 10 && body.size() < (1 << 20) && stream->Next(&chunk); ++waits) {
    body += chunk;
  }
  return ErrorOf(code, body);
}

ApiOr<ProxyResponse> RemoteNodeConnection::Get(const std::string& path) {
  http::request<http::empty_body> req{http::verb::get, path, 11};
  auto c = Send(endpoint_, token_, req);
  if (!c.ok()) return c.error();
  AgentConnection& conn = **c;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  auto ec = conn.Run(kTimeout, [&](auto handler) {
    http::async_read(conn.stream, conn.buffer, parser, std::move(handler));
  });
  conn.Close();
  if (ec) return Unavailable("reading from " + Where(endpoint_) + ": " + ec.message());
  ProxyResponse out;
  out.code = parser.get().result_int();
  out.content_type = std::string(parser.get()[http::field::content_type]);
  out.body = std::move(parser.get().body());
  return out;
}

ApiOr<std::unique_ptr<ExecProcess>> RemoteNodeConnection::Exec(const api::Pod& pod,
                                                               const ExecOptions& opts) {
  std::string target = PodPath(kAgentExecPath, pod, opts.container);
  char sep = '?';
  for (const auto& c : opts.command) {
    target += sep + std::string("command=") + QueryEscape(c);
    sep = '&';
  }
  if (opts.stdin) target += "&stdin=true";
  if (opts.tty) target += "&tty=true";

  const std::string key = WebSocketKey();
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::connection, "Upgrade");
  req.set(http::field::upgrade, "websocket");
  req.set(http::field::sec_websocket_version, "13");
  req.set(http::field::sec_websocket_key, key);
  req.set(http::field::sec_websocket_protocol, "v5.channel.k8s.io");
  auto c = Send(endpoint_, token_, req);
  if (!c.ok()) return c.error();
  AgentConnection& conn = **c;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1 << 20);
  auto ec = conn.Run(kTimeout, [&](auto handler) {
    http::async_read_header(conn.stream, conn.buffer, parser, std::move(handler));
  });
  if (ec) return Unavailable("reading from " + Where(endpoint_) + ": " + ec.message());
  const int code = parser.get().result_int();
  if (code != 101) {
    ec = conn.Run(kTimeout, [&](auto handler) {
      http::async_read(conn.stream, conn.buffer, parser, std::move(handler));
    });
    return ErrorOf(code, ec ? ec.message() : parser.get().body());
  }
  const auto accept = parser.get()[http::field::sec_websocket_accept];
  if (std::string_view(accept.data(), accept.size()) != WebSocketAccept(key)) {
    return Unavailable(Where(endpoint_) + " answered the exec upgrade with a wrong accept key");
  }
  return std::unique_ptr<ExecProcess>(
      std::make_unique<RemoteExecProcess>(*std::move(c), Where(endpoint_)));
}

}  // namespace kvol::apiserver
