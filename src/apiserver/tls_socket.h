// TLS over a non-blocking socket, read and written directly: no buffers in between. OpenSSL does
// the handshake; a TLS 1.3 connection is then handed to Tls13Records and OpenSSL's state for it
// freed, so that an open watch costs a few hundred bytes of TLS state rather than about 14 KiB.
// TLS 1.2 stays with OpenSSL, holding no buffers while idle (SSL_MODE_RELEASE_BUFFERS). One user
// at a time: the HTTP server's I/O thread that holds the connection, or the thread that runs its
// handler.
#pragma once

#include <openssl/ssl.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "apiserver/tls13_records.h"

namespace kvol::apiserver {

// The modes and settings a server context needs for TlsSocket: released buffers, partial
// writes from a buffer that may move, and no session cache (each cached session would cost
// memory; clients that resume do so with the stateless tickets the server still sends, which
// also acknowledge a client's last handshake message at once, so that a client without
// TCP_NODELAY does not hold its first request for a delayed ACK), and the callbacks through
// which a TlsSocket learns what it needs to take a TLS 1.3 connection over (the key log for
// the traffic secrets, the message callback for the records already written).
void PrepareServerContext(SSL_CTX* ctx);

class TlsSocket {
 public:
  // `fd` is a connected, non-blocking socket; it stays the caller's to close.
  TlsSocket(SSL_CTX* ctx, int fd);
  ~TlsSocket();
  TlsSocket(const TlsSocket&) = delete;
  TlsSocket& operator=(const TlsSocket&) = delete;

  bool valid() const { return ssl_ != nullptr || records_ != nullptr; }
  // Whether OpenSSL has handed the connection over to Tls13Records.
  bool handed_over() const { return records_ != nullptr; }
  int fd() const { return fd_; }

  TlsIo Handshake();
  // Up to `len` bytes of what has arrived into `buf`; `*n` is set on kDone.
  TlsIo Read(char* buf, size_t len, size_t* n);
  // Some of `data` (at least one TLS record's worth when done); `*n` is set on kDone.
  TlsIo Write(std::string_view data, size_t* n);
  // Whether a Read returns without waiting for the socket (application data, or the end).
  bool Pending();

  // Blocking forms, for a handler's thread. All of `data`, waiting for the socket with poll for
  // at most `timeout` in all; false if the connection ends or the time runs out.
  bool WriteAll(std::string_view data, std::chrono::milliseconds timeout);
  // Whatever arrives next, waiting without limit (a shutdown of the socket ends the wait);
  // false at the end of the stream.
  bool ReadSome(std::string* out);

 private:
  friend struct TlsSocketCallbacks;
  TlsIo Result(int ret);
  // After the handshake: hands a TLS 1.3 connection over when everything it needs is known.
  void HandOver();

  SSL* ssl_ = nullptr;  // null once handed over
  std::unique_ptr<Tls13Handover> handover_;  // during the handshake
  std::unique_ptr<Tls13Records> records_;
  int fd_;
};

}  // namespace kvol::apiserver
