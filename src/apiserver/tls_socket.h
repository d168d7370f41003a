// TLS over a non-blocking socket with OpenSSL reading and writing the descriptor itself: no
// buffers in between, and none in OpenSSL while a connection is idle (SSL_MODE_RELEASE_BUFFERS),
// so that an open watch costs little more than OpenSSL's session state. One user at a time: the
// HTTP server's I/O thread that holds the connection, or the thread that runs its handler.
#pragma once

#include <openssl/ssl.h>

#include <chrono>
#include <string>
#include <string_view>

namespace kvol::apiserver {

// What one step did: done, or it must wait for the socket to be readable or writable, or the
// connection is over (end of stream, reset or a TLS error).
enum class TlsIo { kDone, kWantRead, kWantWrite, kClosed };

// The modes and settings a server context needs for TlsSocket: released buffers, partial
// writes from a buffer that may move, and no session cache (each cached session would cost
// memory; clients that resume do so with the stateless tickets the server still sends, which
// also acknowledge a client's last handshake message at once, so that a client without
// TCP_NODELAY does not hold its first request for a delayed ACK).
void PrepareServerContext(SSL_CTX* ctx);

class TlsSocket {
 public:
  // `fd` is a connected, non-blocking socket; it stays the caller's to close.
  TlsSocket(SSL_CTX* ctx, int fd);
  ~TlsSocket();
  TlsSocket(const TlsSocket&) = delete;
  TlsSocket& operator=(const TlsSocket&) = delete;

  bool valid() const { return ssl_ != nullptr; }
  int fd() const { return fd_; }

  TlsIo Handshake();
  // Up to `len` bytes of what has arrived into `buf`; `*n` is set on kDone.
  TlsIo Read(char* buf, size_t len, size_t* n);
  // Some of `data` (at least one TLS record's worth when done); `*n` is set on kDone.
  TlsIo Write(std::string_view data, size_t* n);
  // Decrypted bytes OpenSSL holds that a Read returns without waiting.
  size_t Pending() const;

  // Blocking forms, for a handler's thread. All of `data`, waiting for the socket with poll for
  // at most `timeout` in all; false if the connection ends or the time runs out.
  bool WriteAll(std::string_view data, std::chrono::milliseconds timeout);
  // Whatever arrives next, waiting without limit (a shutdown of the socket ends the wait);
  // false at the end of the stream.
  bool ReadSome(std::string* out);

 private:
  TlsIo Result(int ret);

  SSL* ssl_ = nullptr;
  int fd_;
};

}  // namespace kvol::apiserver
