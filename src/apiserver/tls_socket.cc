// OpenSSL on a non-blocking descriptor.
#include "apiserver/tls_socket.h"

#include <openssl/err.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>

namespace kvol::apiserver {

using Clock = std::chrono::steady_clock;

// OpenSSL's callbacks into the TlsSocket that owns a connection (its app data).
struct TlsSocketCallbacks {
  static TlsSocket* Owner(const SSL* ssl) {
    return static_cast<TlsSocket*>(SSL_get_app_data(ssl));
  }

  // A line of the key log: "<label> <client random hex> <secret hex>". Only the two
  // application traffic secrets are kept.
  static void KeyLog(const SSL* ssl, const char* line) {
    TlsSocket* t = Owner(ssl);
    if (t == nullptr || t->handover_ == nullptr) return;
    const std::string_view text(line);
    std::string* into = nullptr;
    if (text.starts_with("CLIENT_TRAFFIC_SECRET_0 ")) into = &t->handover_->client_secret;
    if (text.starts_with("SERVER_TRAFFIC_SECRET_0 ")) into = &t->handover_->server_secret;
    if (into == nullptr) return;
    const size_t at = text.rfind(' ');
    if (!Unhex(text.substr(at + 1), into)) into->clear();
  }

  // Counts the records the server writes once its application secret is known (the session
  // tickets, however OpenSSL splits them): the sequence number its next record must take.
  static void Message(int write_p, int, int content_type, const void*, size_t, SSL* ssl, void*) {
    if (write_p == 0 || content_type != SSL3_RT_HEADER) return;
    if (TlsSocket* t = Owner(ssl);
        t != nullptr && t->handover_ != nullptr && !t->handover_->server_secret.empty()) {
      ++t->handover_->server_records;
    }
  }

  static bool Unhex(std::string_view hex, std::string* out) {
    if (hex.size() % 2 != 0) return false;
    out->assign(hex.size() / 2, '\0');
    for (size_t i = 0; i < out->size(); ++i) {
      int v = 0;
      for (const char c : hex.substr(2 * i, 2)) {
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return false;
      }
      (*out)[i] = static_cast<char>(v);
    }
    return true;
  }
};

void PrepareServerContext(SSL_CTX* ctx) {
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_keylog_callback(ctx, &TlsSocketCallbacks::KeyLog);
  SSL_CTX_set_msg_callback(ctx, &TlsSocketCallbacks::Message);
}

TlsSocket::TlsSocket(SSL_CTX* ctx, int fd) : fd_(fd) {
  ssl_ = SSL_new(ctx);
  if (ssl_ != nullptr && SSL_set_fd(ssl_, fd) != 1) {
    SSL_free(ssl_);
    ssl_ = nullptr;
  }
  if (ssl_ != nullptr) {
    SSL_set_accept_state(ssl_);
    SSL_set_app_data(ssl_, this);
    handover_ = std::make_unique<Tls13Handover>();
  }
}

void TlsSocket::HandOver() {
  std::unique_ptr<Tls13Handover> h = std::move(handover_);
  if (h == nullptr || SSL_version(ssl_) != TLS1_3_VERSION) return;
  // Nothing may be left in OpenSSL's hands: no record read ahead, no plaintext unread. A
  // client that asked for a smaller maximum fragment length keeps OpenSSL, which honours it.
  if (SSL_has_pending(ssl_) != 0 || h->client_secret.empty() || h->server_secret.empty()) return;
  if (SSL_SESSION_get_max_fragment_length(SSL_get_session(ssl_)) !=
      TLSEXT_max_fragment_length_DISABLED) {
    return;
  }
  const SSL_CIPHER* cipher = SSL_get_current_cipher(ssl_);
  switch (cipher == nullptr ? 0 : SSL_CIPHER_get_id(cipher)) {
    case TLS1_3_CK_AES_128_GCM_SHA256:
      h->suite = Tls13Suite::kAes128GcmSha256;
      break;
    case TLS1_3_CK_AES_256_GCM_SHA384:
      h->suite = Tls13Suite::kAes256GcmSha384;
      break;
    case TLS1_3_CK_CHACHA20_POLY1305_SHA256:
      h->suite = Tls13Suite::kChaCha20Poly1305Sha256;
      break;
    default:
      return;  // a suite this side does not frame stays with OpenSSL
  }
  records_ = Tls13Records::Create(*h, fd_);
  if (records_ == nullptr) return;
  SSL_free(ssl_);  // the descriptor is not OpenSSL's to close
  ssl_ = nullptr;
}

TlsSocket::~TlsSocket() {
  if (ssl_ != nullptr) SSL_free(ssl_);
}

TlsIo TlsSocket::Result(int ret) {
  switch (SSL_get_error(ssl_, ret)) {
    case SSL_ERROR_WANT_READ:
      return TlsIo::kWantRead;
    case SSL_ERROR_WANT_WRITE:
      return TlsIo::kWantWrite;
    case SSL_ERROR_SYSCALL:
      if (errno == EINTR) return TlsIo::kWantRead;  // nothing was lost: wait and try again
      [[fallthrough]];
    default:
      // Whatever OpenSSL queued about it is of no further use, and would confuse the next
      // SSL_get_error on this thread.
      ERR_clear_error();
      return TlsIo::kClosed;
  }
}

TlsIo TlsSocket::Handshake() {
  if (records_ != nullptr) return TlsIo::kDone;
  if (ssl_ == nullptr) return TlsIo::kClosed;
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl_);
  if (r != 1) return Result(r);
  HandOver();
  return TlsIo::kDone;
}

TlsIo TlsSocket::Read(char* buf, size_t len, size_t* n) {
  if (records_ != nullptr) return records_->Read(buf, len, n);
  if (ssl_ == nullptr) return TlsIo::kClosed;
  ERR_clear_error();
  const int r = SSL_read_ex(ssl_, buf, len, n);
  return r == 1 ? TlsIo::kDone : Result(r);
}

TlsIo TlsSocket::Write(std::string_view data, size_t* n) {
  if (records_ != nullptr) return records_->Write(data, n);
  if (ssl_ == nullptr) return TlsIo::kClosed;
  if (data.empty()) {
    *n = 0;
    return TlsIo::kDone;
  }
  ERR_clear_error();
  const int r = SSL_write_ex(ssl_, data.data(), data.size(), n);
  return r == 1 ? TlsIo::kDone : Result(r);
}

bool TlsSocket::Pending() {
  if (records_ != nullptr) return records_->Pending();
  return ssl_ != nullptr && SSL_pending(ssl_) > 0;
}

namespace {

// Waits for `events` on `fd` until `deadline` (none when nullopt). False on time out.
bool WaitFor(int fd, short events, const Clock::time_point* deadline) {
  while (true) {
    int ms = -1;
    if (deadline != nullptr) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
      if (left.count() <= 0) return false;
      ms = static_cast<int>(std::min<int64_t>(left.count(), 60'000));
    }
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, ms);
    if (r > 0) return true;  // ready, or an error the next step reports
    if (r < 0 && errno != EINTR) return true;
  }
}

}  // namespace

bool TlsSocket::WriteAll(std::string_view data, std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (!data.empty()) {
    size_t n = 0;
    switch (Write(data, &n)) {
      case TlsIo::kDone:
        data.remove_prefix(n);
        break;
      case TlsIo::kWantWrite:
        if (!WaitFor(fd_, POLLOUT, &deadline)) return false;
        break;
      case TlsIo::kWantRead:
        if (!WaitFor(fd_, POLLIN, &deadline)) return false;
        break;
      case TlsIo::kClosed:
        return false;
    }
  }
  return true;
}

bool TlsSocket::ReadSome(std::string* out) {
  char buf[16 * 1024];
  while (true) {
    size_t n = 0;
    switch (Read(buf, sizeof buf, &n)) {
      case TlsIo::kDone:
        out->assign(buf, n);
        return true;
      case TlsIo::kWantRead:
        WaitFor(fd_, POLLIN, nullptr);
        break;
      case TlsIo::kWantWrite:
        WaitFor(fd_, POLLOUT, nullptr);
        break;
      case TlsIo::kClosed:
        out->clear();
        return false;
    }
  }
}

}  // namespace kvol::apiserver
