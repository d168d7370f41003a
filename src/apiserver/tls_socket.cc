// OpenSSL on a non-blocking descriptor.
#include "apiserver/tls_socket.h"

#include <openssl/err.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>

namespace kvol::apiserver {

using Clock = std::chrono::steady_clock;

void PrepareServerContext(SSL_CTX* ctx) {
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
}

TlsSocket::TlsSocket(SSL_CTX* ctx, int fd) : fd_(fd) {
  ssl_ = SSL_new(ctx);
  if (ssl_ != nullptr && SSL_set_fd(ssl_, fd) != 1) {
    SSL_free(ssl_);
    ssl_ = nullptr;
  }
  if (ssl_ != nullptr) SSL_set_accept_state(ssl_);
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
  if (ssl_ == nullptr) return TlsIo::kClosed;
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl_);
  return r == 1 ? TlsIo::kDone : Result(r);
}

TlsIo TlsSocket::Read(char* buf, size_t len, size_t* n) {
  if (ssl_ == nullptr) return TlsIo::kClosed;
  ERR_clear_error();
  const int r = SSL_read_ex(ssl_, buf, len, n);
  return r == 1 ? TlsIo::kDone : Result(r);
}

TlsIo TlsSocket::Write(std::string_view data, size_t* n) {
  if (ssl_ == nullptr) return TlsIo::kClosed;
  if (data.empty()) {
    *n = 0;
    return TlsIo::kDone;
  }
  ERR_clear_error();
  const int r = SSL_write_ex(ssl_, data.data(), data.size(), n);
  return r == 1 ? TlsIo::kDone : Result(r);
}

size_t TlsSocket::Pending() const {
  return ssl_ == nullptr ? 0 : static_cast<size_t>(std::max(SSL_pending(ssl_), 0));
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
