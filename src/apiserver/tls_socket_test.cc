// TlsSocket against a real OpenSSL client over a socket pair: TLS 1.3 connections are handed over
// to Tls13Records after the handshake and carry data both ways under every suite, through key
// updates, session resumption and back-pressure; TLS 1.2 stays with OpenSSL; a close_notify or a
// forged record ends the connection.
#include "apiserver/tls_socket.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <thread>

#include "apiserver/tls.h"

namespace kvol::apiserver {
namespace {

using namespace std::chrono_literals;

std::string Pattern(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 7 % 251);
  return s;
}

// Reads exactly `n` bytes with the blocking client.
std::string ClientRead(SSL* ssl, size_t n) {
  std::string out;
  char buf[16 * 1024];
  while (out.size() < n) {
    size_t got = 0;
    if (SSL_read_ex(ssl, buf, std::min(sizeof buf, n - out.size()), &got) != 1) break;
    out.append(buf, got);
  }
  return out;
}

bool ClientWrite(SSL* ssl, std::string_view data) {
  size_t n = 0;
  return SSL_write_ex(ssl, data.data(), data.size(), &n) == 1 && n == data.size();
}

// Without printing megabytes when they differ.
void ExpectSame(const std::string& got, const std::string& want) {
  EXPECT_TRUE(got == want) << "got " << got.size() << " bytes, want " << want.size();
}

class TlsSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/kvol-tls-socket-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    auto tls = EnsureTls(dir_, {"127.0.0.1"});
    ASSERT_TRUE(tls.ok()) << tls.status().ToString();
    server_ctx_ = SSL_CTX_new(TLS_server_method());
    BIO* cert = BIO_new_mem_buf(tls->server_cert_pem.data(), static_cast<int>(tls->server_cert_pem.size()));
    BIO* key = BIO_new_mem_buf(tls->server_key_pem.data(), static_cast<int>(tls->server_key_pem.size()));
    X509* x = PEM_read_bio_X509(cert, nullptr, nullptr, nullptr);
    EVP_PKEY* k = PEM_read_bio_PrivateKey(key, nullptr, nullptr, nullptr);
    ASSERT_EQ(SSL_CTX_use_certificate(server_ctx_, x), 1);
    ASSERT_EQ(SSL_CTX_use_PrivateKey(server_ctx_, k), 1);
    X509_free(x);
    EVP_PKEY_free(k);
    BIO_free(cert);
    BIO_free(key);
    PrepareServerContext(server_ctx_);
    client_ctx_ = SSL_CTX_new(TLS_client_method());
  }

  void TearDown() override {
    CloseConnection();
    SSL_SESSION_free(session_);
    SSL_CTX_free(client_ctx_);
    SSL_CTX_free(server_ctx_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // A connection: the client blocking on its own thread, the server's end non-blocking.
  void Connect() {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    client_fd_ = sv[0];
    server_fd_ = sv[1];
    ASSERT_EQ(::fcntl(server_fd_, F_SETFL, O_NONBLOCK), 0);
    const timeval limit{.tv_sec = 10, .tv_usec = 0};  // a client that cannot read fails, not hangs
    ASSERT_EQ(::setsockopt(client_fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit), 0);
    client_ = SSL_new(client_ctx_);
    SSL_set_fd(client_, client_fd_);
    if (session_ != nullptr) SSL_set_session(client_, session_);
    server_ = std::make_unique<TlsSocket>(server_ctx_, server_fd_);
    ASSERT_TRUE(server_->valid());
    auto connected = std::async(std::launch::async, [this] { return SSL_connect(client_) == 1; });
    TlsIo r = TlsIo::kWantRead;
    for (int i = 0; i < 1000 && r != TlsIo::kDone && r != TlsIo::kClosed; ++i) {
      r = server_->Handshake();
      pollfd p{server_fd_, static_cast<short>(r == TlsIo::kWantWrite ? POLLOUT : POLLIN), 0};
      if (r != TlsIo::kDone) ::poll(&p, 1, 1000);
    }
    ASSERT_EQ(r, TlsIo::kDone);
    ASSERT_TRUE(connected.get());
  }

  // Keeps the client's session for the next Connect, once it has its tickets. The client
  // closes cleanly: OpenSSL does not resume a session whose connection was dropped.
  void KeepSession() {
    SSL_SESSION_free(session_);
    session_ = SSL_get1_session(client_);
    ASSERT_GE(SSL_shutdown(client_), 0);
  }

  void CloseConnection() {
    server_.reset();
    if (client_ != nullptr) SSL_free(client_);
    client_ = nullptr;
    if (client_fd_ >= 0) ::close(client_fd_);
    if (server_fd_ >= 0) ::close(server_fd_);
    client_fd_ = server_fd_ = -1;
  }

  // Reads exactly `n` bytes on the server's end.
  std::string ServerRead(size_t n) {
    std::string all;
    std::string some;
    while (all.size() < n && server_->ReadSome(&some)) all += some;
    return all;
  }

  // Sends `request` from the client and `answer` back, checking both arrive whole.
  void Exchange(const std::string& request, const std::string& answer) {
    auto sent = std::async(std::launch::async, [&] { return ClientWrite(client_, request); });
    ExpectSame(ServerRead(request.size()), request);
    EXPECT_TRUE(sent.get());
    auto read = std::async(std::launch::async, [&] { return ClientRead(client_, answer.size()); });
    EXPECT_TRUE(server_->WriteAll(answer, 10s));
    ExpectSame(read.get(), answer);
  }

  std::string dir_;
  SSL_CTX* server_ctx_ = nullptr;
  SSL_CTX* client_ctx_ = nullptr;
  SSL_SESSION* session_ = nullptr;
  int client_fd_ = -1;
  int server_fd_ = -1;
  SSL* client_ = nullptr;
  std::unique_ptr<TlsSocket> server_;
};

struct SuiteCase {
  const char* name;
  int max_version;
  const char* suites;  // TLS 1.3 suites the client offers; null for OpenSSL's default
  uint8_t max_fragment_length = TLSEXT_max_fragment_length_DISABLED;
  bool handed_over;
};

TEST_F(TlsSocketTest, ConnectionsCarryDataBothWaysUnderEverySuite) {
  const SuiteCase cases[] = {
      {.name = "TLS 1.3 default suite", .max_version = TLS1_3_VERSION, .suites = nullptr, .handed_over = true},
      {.name = "TLS_AES_128_GCM_SHA256", .max_version = TLS1_3_VERSION, .suites = "TLS_AES_128_GCM_SHA256", .handed_over = true},
      {.name = "TLS_AES_256_GCM_SHA384", .max_version = TLS1_3_VERSION, .suites = "TLS_AES_256_GCM_SHA384", .handed_over = true},
      {.name = "TLS_CHACHA20_POLY1305_SHA256", .max_version = TLS1_3_VERSION, .suites = "TLS_CHACHA20_POLY1305_SHA256", .handed_over = true},
      {.name = "TLS 1.2 stays with OpenSSL", .max_version = TLS1_2_VERSION, .suites = nullptr, .handed_over = false},
      // OpenSSL splits what it writes into 512-byte records for such a client, tickets included.
      {.name = "a maximum fragment length stays with OpenSSL", .max_version = TLS1_3_VERSION, .suites = nullptr,
       .max_fragment_length = TLSEXT_max_fragment_length_512, .handed_over = false},
  };
  for (const SuiteCase& c : cases) {
    SCOPED_TRACE(c.name);
    SSL_CTX_set_max_proto_version(client_ctx_, c.max_version);
    if (c.suites != nullptr) SSL_CTX_set_ciphersuites(client_ctx_, c.suites);
    SSL_CTX_set_tlsext_max_fragment_length(client_ctx_, c.max_fragment_length);
    Connect();
    EXPECT_EQ(server_->handed_over(), c.handed_over);
    Exchange("GET / HTTP/1.1\r\n\r\n", Pattern(200'000, 'a'));  // many records at once
    Exchange(Pattern(70'000, 'b'), "small");
    CloseConnection();
    SSL_CTX_free(client_ctx_);
    client_ctx_ = SSL_CTX_new(TLS_client_method());
  }
}

TEST_F(TlsSocketTest, KeyUpdatesFromTheClientAreFollowedAndAnswered) {
  Connect();
  ASSERT_TRUE(server_->handed_over());
  for (const int kind : {SSL_KEY_UPDATE_NOT_REQUESTED, SSL_KEY_UPDATE_REQUESTED, SSL_KEY_UPDATE_REQUESTED}) {
    SCOPED_TRACE(kind);
    // The client sends its KeyUpdate with its next write; when it asks for one, the server must
    // send its own before its next record, or the client cannot read that record.
    ASSERT_EQ(SSL_key_update(client_, kind), 1);
    Exchange("after an update", Pattern(40'000, 'c'));
  }
}

TEST_F(TlsSocketTest, ResumedSessionsAreHandedOverToo) {
  Connect();
  Exchange("first", "answer");  // the client has read the tickets sent before the answer
  KeepSession();
  CloseConnection();
  Connect();
  EXPECT_EQ(SSL_session_reused(client_), 1);
  EXPECT_TRUE(server_->handed_over());
  Exchange("resumed", Pattern(20'000, 'd'));
}

TEST_F(TlsSocketTest, CloseNotifyEndsTheConnection) {
  Connect();
  Exchange("hello", "hi");
  ASSERT_GE(SSL_shutdown(client_), 0);
  std::string got;
  EXPECT_FALSE(server_->ReadSome(&got));
}

TEST_F(TlsSocketTest, ForgedRecordEndsTheConnection) {
  Connect();
  Exchange("hello", "hi");
  // A well-formed application record whose tag cannot verify.
  std::string record = {23, 3, 3, 0, 40};
  record += std::string(40, 'z');
  ASSERT_EQ(::write(client_fd_, record.data(), record.size()), static_cast<ssize_t>(record.size()));
  char buf[64];
  size_t n = 0;
  TlsIo r = TlsIo::kWantRead;
  for (int i = 0; i < 100 && r == TlsIo::kWantRead; ++i) {
    r = server_->Read(buf, sizeof buf, &n);
    if (r == TlsIo::kWantRead) std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(r, TlsIo::kClosed);
  // And stays closed: nothing after a forged record is read, nothing more is written.
  EXPECT_EQ(server_->Read(buf, sizeof buf, &n), TlsIo::kClosed);
  EXPECT_EQ(server_->Write("more", &n), TlsIo::kClosed);
}

TEST_F(TlsSocketTest, WriteThatMustWaitForTheReaderSendsEveryByteOnce) {
  Connect();
  ASSERT_TRUE(server_->handed_over());
  const std::string big = Pattern(4 << 20, 'e');
  // Nobody reads yet: the socket fills and a write must wait, then go on with the same bytes.
  size_t written = 0;
  TlsIo r = TlsIo::kDone;
  while (written < big.size() && r != TlsIo::kWantWrite) {
    size_t n = 0;
    r = server_->Write(std::string_view(big).substr(written), &n);
    if (r == TlsIo::kDone) written += n;
  }
  ASSERT_EQ(r, TlsIo::kWantWrite);
  auto read = std::async(std::launch::async, [&] { return ClientRead(client_, big.size()); });
  EXPECT_TRUE(server_->WriteAll(std::string_view(big).substr(written), 10s));
  ExpectSame(read.get(), big);
}

TEST_F(TlsSocketTest, PendingCountsRecordsReceivedAndNotYetRead) {
  Connect();
  ASSERT_TRUE(server_->handed_over());
  ASSERT_TRUE(ClientWrite(client_, "one"));
  ASSERT_TRUE(ClientWrite(client_, "two"));
  pollfd p{server_fd_, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);  // both records are in the socket: written before
  char buf[2];
  size_t n = 0;
  ASSERT_EQ(server_->Read(buf, sizeof buf, &n), TlsIo::kDone);
  EXPECT_EQ(std::string(buf, n), "on");
  EXPECT_TRUE(server_->Pending());  // "e" of the first record
  ASSERT_EQ(server_->Read(buf, 1, &n), TlsIo::kDone);
  EXPECT_TRUE(server_->Pending());  // the second record, read from the socket with the first
  ASSERT_EQ(server_->Read(buf, sizeof buf, &n), TlsIo::kDone);
  EXPECT_EQ(std::string(buf, n), "tw");
  ASSERT_EQ(server_->Read(buf, sizeof buf, &n), TlsIo::kDone);
  EXPECT_FALSE(server_->Pending());
  EXPECT_EQ(server_->Read(buf, sizeof buf, &n), TlsIo::kWantRead);
}

TEST_F(TlsSocketTest, RecordWithoutDataIsNotPending) {
  Connect();
  ASSERT_TRUE(server_->handed_over());
  ASSERT_TRUE(ClientWrite(client_, "x"));
  ASSERT_EQ(SSL_key_update(client_, SSL_KEY_UPDATE_NOT_REQUESTED), 1);
  ASSERT_EQ(SSL_do_handshake(client_), 1);  // sends the KeyUpdate alone, after "x"
  char buf[8];
  size_t n = 0;
  ASSERT_EQ(server_->Read(buf, sizeof buf, &n), TlsIo::kDone);  // reads both records
  EXPECT_EQ(std::string(buf, n), "x");
  EXPECT_FALSE(server_->Pending());  // the KeyUpdate is opened, and carries nothing to read
  Exchange("after the update", "answer");
}

}  // namespace
}  // namespace kvol::apiserver
