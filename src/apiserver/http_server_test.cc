// The HTTPS server's connection limits: a connection that does not finish its handshake, does
// not send a whole request, or does not take what is written to it, in time is closed; one
// busy answering is not.
#include "apiserver/http_server.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <filesystem>

#include "apiserver/tls.h"

namespace kvol::apiserver {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kHandshakeTimeout = 200ms;
constexpr auto kIdleTimeout = 300ms;
constexpr auto kHeaderTimeout = 100ms;
constexpr auto kWriteTimeout = 300ms;
// How long a test waits for the server to close a connection before it fails.
constexpr int kCloseWaitMs = 10'000;

// True once the peer has closed `fd` (end of stream or reset), waiting at most kCloseWaitMs.
// Whatever else arrives first is read and dropped.
bool ClosedByPeer(int fd) {
  const auto give_up = Clock::now() + std::chrono::milliseconds(kCloseWaitMs);
  char buf[4096];
  while (Clock::now() < give_up) {
    pollfd p{fd, POLLIN, 0};
    const int left =
        static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now()).count());
    if (::poll(&p, 1, std::max(left, 1)) <= 0) return false;
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
  }
  return false;
}

class HttpServerTimeoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/kvol-http-server-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    auto tls = EnsureTls(dir_, {"127.0.0.1"});
    ASSERT_TRUE(tls.ok()) << tls.status().ToString();
    HttpServerOptions o;
    o.port = 0;
    o.cert_pem = tls->server_cert_pem;
    o.key_pem = tls->server_key_pem;
    o.handshake_timeout = kHandshakeTimeout;
    o.idle_timeout = kIdleTimeout;
    o.header_timeout = kHeaderTimeout;
    o.write_timeout = kWriteTimeout;
    Tune(o);
    server_ = std::make_unique<HttpServer>(o, [this](const HttpRequest& r, ResponseWriter& w) {
      if (r.path == "/firehose") {
        // Writes until a write fails, as a watch does; 10 s at most.
        w.StartStream(200, "text/plain");
        const std::string chunk(64 * 1024, 'x');
        const auto give_up = Clock::now() + 10s;
        while (Clock::now() < give_up && w.WriteChunk(chunk)) {
        }
        firehose_ended_ = true;
        return;
      }
      if (r.path == "/upgrade-firehose") {
        // Takes the connection over, then writes until a write fails; 10 s at most.
        auto conn = w.Upgrade({{"Upgrade", "test"}, {"Connection", "Upgrade"}});
        if (!conn) return;
        const std::string chunk(64 * 1024, 'x');
        const auto give_up = Clock::now() + 10s;
        while (Clock::now() < give_up && conn->Write(chunk)) {
        }
        upgrade_firehose_ended_ = true;
        return;
      }
      if (r.path == "/upgrade-quiet") {
        // Takes the connection over, waits for input longer than every timeout, then echoes it.
        auto conn = w.Upgrade({{"Upgrade", "test"}, {"Connection", "Upgrade"}});
        if (!conn) return;
        std::string in;
        if (conn->ReadSome(&in)) conn->Write("echo:" + in);
        return;
      }
      if (r.path == "/auth") {
        w.Authenticated();
        w.Send(200, "text/plain", "ok\n");
        return;
      }
      if (r.path == "/detached") {
        // Streams what the test hands every source, from a source the server pulls.
        w.StartStream(200, "text/plain");
        auto source = std::make_shared<TestSource>(*this);
        if (!w.Detach(source)) w.EndStream();
        return;
      }
      if (r.path == "/slow-stream") {
        // Streams for longer than the idle timeout, with a pause longer than it.
        w.StartStream(200, "text/plain");
        w.WriteChunk("one\n");
        std::this_thread::sleep_for(kIdleTimeout * 2);
        w.WriteChunk("two\n");
        w.EndStream();
        return;
      }
      w.Send(200, "text/plain", "ok\n");
    });
    ASSERT_TRUE(server_->Start().ok());
  }

  virtual void Tune(HttpServerOptions& /*o*/) {}

  // A stream the server pulls: it gives whatever the test has published since its last pull.
  struct TestSource final : StreamSource {
    explicit TestSource(HttpServerTimeoutTest& t) : t(t) {}
    void Start(std::function<void()> wake) override {
      std::lock_guard l(t.sources_mu_);
      t.wakes_.push_back(std::move(wake));
    }
    bool Pull(std::string* out, std::chrono::milliseconds* again) override {
      std::lock_guard l(t.sources_mu_);
      *out = t.published_.substr(taken);
      taken = t.published_.size();
      *again = 1h;
      return true;
    }
    void Close() override { ++t.sources_closed_; }
    HttpServerTimeoutTest& t;
    size_t taken = 0;
  };

  // Hands `data` to every detached stream.
  void Publish(const std::string& data) {
    std::vector<std::function<void()>> wakes;
    {
      std::lock_guard l(sources_mu_);
      published_ += data;
      wakes = wakes_;
    }
    for (auto& w : wakes) w();
  }

  void TearDown() override {
    if (server_) server_->Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  tcp::endpoint Endpoint() const {
    return {net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(server_->port())};
  }

  // A TLS connection to the server, handshake done.
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> Connect() {
    auto s = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(io_, client_tls_);
    s->next_layer().connect(Endpoint());
    s->handshake(ssl::stream_base::client);
    return s;
  }

  static std::string Get(beast::ssl_stream<beast::tcp_stream>& s, beast::flat_buffer& buffer,
                         const std::string& path) {
    http::request<http::empty_body> req{http::verb::get, path, 11};
    req.set(http::field::host, "127.0.0.1");
    http::write(s, req);
    http::response<http::string_body> res;
    http::read(s, buffer, res);
    EXPECT_EQ(res.result_int(), 200);
    return res.body();
  }

  static int Fd(beast::ssl_stream<beast::tcp_stream>& s) {
    return s.next_layer().socket().native_handle();
  }

  std::mutex sources_mu_;
  std::vector<std::function<void()>> wakes_;
  std::string published_;
  std::atomic<int> sources_closed_{0};
  std::string dir_;
  std::atomic<bool> firehose_ended_{false};
  std::atomic<bool> upgrade_firehose_ended_{false};
  std::unique_ptr<HttpServer> server_;
  net::io_context io_;
  ssl::context client_tls_{ssl::context::tls_client};
};

TEST_F(HttpServerTimeoutTest, ConnectionWithoutAHandshakeIsClosedAfterTheHandshakeTimeout) {
  tcp::socket raw(io_);
  const auto start = Clock::now();  // before the server can have accepted
  raw.connect(Endpoint());
  EXPECT_TRUE(ClosedByPeer(raw.native_handle()));
  EXPECT_GE(Clock::now() - start, kHandshakeTimeout);
}

TEST_F(HttpServerTimeoutTest, IdleKeepAliveConnectionIsClosedAfterTheIdleTimeout) {
  auto s = Connect();
  beast::flat_buffer buffer;
  const auto asked = Clock::now();  // before the server can have answered
  EXPECT_EQ(Get(*s, buffer, "/"), "ok\n");
  EXPECT_TRUE(ClosedByPeer(Fd(*s)));
  EXPECT_GE(Clock::now() - asked, kIdleTimeout);
}

TEST_F(HttpServerTimeoutTest, RequestThatStallsHalfwayIsClosed) {
  auto s = Connect();
  const std::string half = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  net::write(*s, net::buffer(half));
  EXPECT_TRUE(ClosedByPeer(Fd(*s)));
}

// A header trickled a byte at a time is cut at the header timeout, counted from its first
// bytes, well before the idle timeout.
TEST_F(HttpServerTimeoutTest, HeaderTrickledByteByByteIsClosedAtTheHeaderTimeout) {
  auto s = Connect();
  const auto start = Clock::now();
  net::write(*s, net::buffer(std::string("GET / HTTP/1.1\r\n")));
  // A byte every 10 ms until the server closes (recv sees the end) or 1 s has passed.
  bool closed = false;
  while (!closed && Clock::now() - start < 1s) {
    std::this_thread::sleep_for(10ms);
    char buf[4096];  // what the server sent after the handshake (session tickets), then the end
    ssize_t n;
    while ((n = ::recv(Fd(*s), buf, sizeof buf, MSG_DONTWAIT)) > 0) {
    }
    closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    beast::error_code ec;
    if (!closed) net::write(*s, net::buffer(std::string("X")), ec);
  }
  EXPECT_TRUE(closed);
  const auto took = Clock::now() - start;
  EXPECT_GE(took, kHeaderTimeout);
  EXPECT_LT(took, kIdleTimeout);
}

TEST_F(HttpServerTimeoutTest, RequestsWithinTheIdleTimeoutKeepTheConnection) {
  auto s = Connect();
  beast::flat_buffer buffer;
  // Together longer than the idle timeout; each gap much shorter.
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(Get(*s, buffer, "/"), "ok\n");
    std::this_thread::sleep_for(kIdleTimeout / 6);
  }
  EXPECT_EQ(Get(*s, buffer, "/"), "ok\n");
}

TEST_F(HttpServerTimeoutTest, StreamLongerThanTheIdleTimeoutIsNotCut) {
  auto s = Connect();
  beast::flat_buffer buffer;
  EXPECT_EQ(Get(*s, buffer, "/slow-stream"), "one\ntwo\n");
  // The connection is still good for the next request.
  EXPECT_EQ(Get(*s, buffer, "/"), "ok\n");
}

TEST_F(HttpServerTimeoutTest, StreamToAClientThatStopsReadingIsEnded) {
  auto s = Connect();
  http::request<http::empty_body> req{http::verb::get, "/firehose", 11};
  req.set(http::field::host, "127.0.0.1");
  http::write(*s, req);
  // Nothing is read: once the socket buffers are full the server's write waits, until the
  // write timeout ends the connection and the handler's next write fails.
  const auto give_up = Clock::now() + std::chrono::milliseconds(kCloseWaitMs);
  while (!firehose_ended_ && Clock::now() < give_up) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(firehose_ended_);
}

// Sends `path` asking for an upgrade and reads the 101 answer.
void Upgrade(beast::ssl_stream<beast::tcp_stream>& s, beast::flat_buffer& buffer,
             const std::string& path) {
  http::request<http::empty_body> req{http::verb::get, path, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::upgrade, "test");
  req.set(http::field::connection, "Upgrade");
  http::write(s, req);
  http::response_parser<http::empty_body> res;
  http::read_header(s, buffer, res);
  EXPECT_EQ(res.get().result_int(), 101);
}

TEST_F(HttpServerTimeoutTest, UpgradedConnectionToAClientThatStopsReadingIsEnded) {
  auto s = Connect();
  beast::flat_buffer buffer;
  Upgrade(*s, buffer, "/upgrade-firehose");
  const auto give_up = Clock::now() + std::chrono::milliseconds(kCloseWaitMs);
  while (!upgrade_firehose_ended_ && Clock::now() < give_up) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(upgrade_firehose_ended_);
}

TEST_F(HttpServerTimeoutTest, QuietUpgradedConnectionIsNotCut) {
  auto s = Connect();
  beast::flat_buffer buffer;
  Upgrade(*s, buffer, "/upgrade-quiet");
  std::this_thread::sleep_for(std::max({kHandshakeTimeout, kIdleTimeout, kWriteTimeout}) * 2);
  net::write(*s, net::buffer(std::string("hello")));
  std::string got(10, '\0');
  beast::error_code ec;
  net::read(*s, net::buffer(got), ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(got, "echo:hello");
}

// Detached streams hold no thread: many stay open on the server's few I/O threads, get what is
// published at once, and end within a second of their clients going.
class HttpServerStreamTest : public HttpServerTimeoutTest {
 protected:
  static constexpr size_t kIoThreads = 2;
  static constexpr size_t kHandlerThreads = 4;
  void Tune(HttpServerOptions& o) override {
    o.io_threads = kIoThreads;
    o.max_handler_threads = kHandlerThreads;
  }
};

TEST_F(HttpServerStreamTest, ManyDetachedStreamsOnBoundedThreads) {
  constexpr size_t kStreams = 200;
  std::vector<std::unique_ptr<beast::ssl_stream<beast::tcp_stream>>> clients;
  std::vector<beast::flat_buffer> buffers(kStreams);
  std::vector<std::unique_ptr<http::response_parser<http::string_body>>> parsers;
  for (size_t i = 0; i < kStreams; ++i) {
    clients.push_back(Connect());
    http::request<http::empty_body> req{http::verb::get, "/detached", 11};
    req.set(http::field::host, "127.0.0.1");
    http::write(*clients.back(), req);
    parsers.push_back(std::make_unique<http::response_parser<http::string_body>>());
    http::read_header(*clients.back(), buffers[i], *parsers.back());
    ASSERT_EQ(parsers.back()->get().result_int(), 200);
  }
  const auto waiting = [&] { return server_->stats().detached_streams == kStreams; };
  for (int i = 0; i < 1000 && !waiting(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(server_->stats().detached_streams, kStreams);
  EXPECT_LE(server_->stats().threads, kIoThreads + kHandlerThreads);

  Publish("event\n");
  for (size_t i = 0; i < kStreams; ++i) {
    // One chunk: read until the body has it.
    beast::error_code ec;
    while (parsers[i]->get().body().size() < 6 && !ec) {
      http::read_some(*clients[i], buffers[i], *parsers[i], ec);
    }
    ASSERT_FALSE(ec) << "stream " << i << ": " << ec.message();
    EXPECT_EQ(parsers[i]->get().body(), "event\n");
  }

  const auto closed_at = Clock::now();
  for (auto& c : clients) beast::get_lowest_layer(*c).socket().close();
  // A stream's end is counted a moment before its connection's.
  const auto gone = [&] {
    return server_->stats().detached_streams == 0 && server_->stats().connections == 0;
  };
  while (!gone() && Clock::now() - closed_at < 5s) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(server_->stats().detached_streams, 0u);
  EXPECT_EQ(server_->stats().connections, 0u);
  EXPECT_LT(Clock::now() - closed_at, 1s);
  EXPECT_EQ(sources_closed_.load(), static_cast<int>(kStreams));
}

TEST_F(HttpServerStreamTest, DetachedStreamEndsWhenTheServerStops) {
  auto s = Connect();
  http::request<http::empty_body> req{http::verb::get, "/detached", 11};
  req.set(http::field::host, "127.0.0.1");
  http::write(*s, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> res;
  http::read_header(*s, buffer, res);
  for (int i = 0; i < 1000 && server_->stats().detached_streams == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  const auto start = Clock::now();
  server_->Stop();
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_EQ(sources_closed_.load(), 1);
  EXPECT_TRUE(ClosedByPeer(Fd(*s)));
}

// Past the limit of unauthenticated connections, the oldest that waits for input is closed;
// authenticated connections are not counted and keep working.
class HttpServerUnauthenticatedTest : public HttpServerTimeoutTest {
 protected:
  static constexpr size_t kLimit = 4;
  void Tune(HttpServerOptions& o) override {
    o.max_unauthenticated = kLimit;
    // Longer than the test: only the limit closes connections here.
    o.handshake_timeout = o.idle_timeout = o.header_timeout = 30s;
  }
};

TEST_F(HttpServerUnauthenticatedTest, OldestUnauthenticatedConnectionsAreClosedFirst) {
  std::vector<std::unique_ptr<beast::ssl_stream<beast::tcp_stream>>> authed;
  std::vector<beast::flat_buffer> authed_buffers(3);
  for (int i = 0; i < 3; ++i) {
    authed.push_back(Connect());
    EXPECT_EQ(Get(*authed.back(), authed_buffers[i], "/auth"), "ok\n");
  }
  // Ten that finish the handshake and say nothing, one after the other.
  std::vector<std::unique_ptr<beast::ssl_stream<beast::tcp_stream>>> quiet;
  for (int i = 0; i < 10; ++i) quiet.push_back(Connect());  // accepted in this order
  // The six oldest are closed, the four newest stay.
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(ClosedByPeer(Fd(*quiet[i]))) << "quiet " << i;
  std::this_thread::sleep_for(200ms);
  for (int i = 6; i < 10; ++i) {
    pollfd p{Fd(*quiet[i]), POLLIN | POLLRDHUP, 0};
    ::poll(&p, 1, 0);
    EXPECT_EQ(p.revents & (POLLRDHUP | POLLHUP), 0) << "quiet " << i << " was closed";
  }
  EXPECT_EQ(server_->stats().unauthenticated, kLimit);
  // Authenticated connections were not touched.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Get(*authed[i], authed_buffers[i], "/"), "ok\n");
}

}  // namespace
}  // namespace kvol::apiserver
