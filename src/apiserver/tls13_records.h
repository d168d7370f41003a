// TLS 1.3 record protection (RFC 8446 §5, §7) for a server connection once OpenSSL has finished
// its handshake: the traffic secrets are taken over and OpenSSL's connection state, about 14 KiB,
// is freed. What stays is a few hundred bytes of keys and, only while data is in flight, the
// buffers of one record each way; an idle watch holds nothing else. The handshake, certificates
// and every cryptographic primitive stay OpenSSL's; this is only framing, nonces and key updates.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace kvol::apiserver {

// What one step did: done, or it must wait for the socket to be readable or writable, or the
// connection is over (end of stream, reset, a close_notify, or a record that fails to verify).
enum class TlsIo { kDone, kWantRead, kWantWrite, kClosed };

// The TLS 1.3 cipher suites a connection can be handed over with: the three OpenSSL enables.
enum class Tls13Suite { kAes128GcmSha256, kAes256GcmSha384, kChaCha20Poly1305Sha256 };

// What the handshake leaves for the record layer: the suite, both application traffic secrets
// (from OpenSSL's key log callback), and how many records the server has already written under
// its secret (its session tickets, counted as OpenSSL writes them).
struct Tls13Handover {
  Tls13Suite suite = Tls13Suite::kAes128GcmSha256;
  std::string client_secret;  // client_application_traffic_secret_0, raw bytes
  std::string server_secret;  // server_application_traffic_secret_0, raw bytes
  uint64_t server_records = 0;
  ~Tls13Handover();  // wipes the secrets
};

// One server connection's records on a non-blocking socket that it reads and writes itself.
// Not thread-safe: one user at a time, as the connection it belongs to.
class Tls13Records {
 public:
  // Null when the suite's primitives are missing from OpenSSL or the secrets have the wrong size.
  static std::unique_ptr<Tls13Records> Create(const Tls13Handover& h, int fd);
  ~Tls13Records();  // wipes the keys
  Tls13Records(const Tls13Records&) = delete;
  Tls13Records& operator=(const Tls13Records&) = delete;

  // Up to `len` bytes of application data; `*n` is set on kDone. A key update from the client
  // is applied (and answered before the next write when it asks for one); a close_notify or any
  // error is kClosed, and so is every later call.
  TlsIo Read(char* buf, size_t len, size_t* n);
  // Some of `data`, one record; `*n` is set on kDone. After kWantWrite the next call must pass
  // the same bytes again (as with OpenSSL), which are not sealed twice.
  TlsIo Write(std::string_view data, size_t* n);
  // Opens the whole records already received; true if a Read returns without waiting for the
  // socket: application data is ready, or the connection is over.
  bool Pending();

 private:
  // One direction's traffic secret and what is derived from it (RFC 8446 §7.3).
  struct Direction {
    uint8_t secret[48];
    uint8_t key[32];
    uint8_t iv[12];
    size_t secret_len = 0;
    uint64_t sequence = 0;
    ~Direction();
  };
  Tls13Records(Tls13Suite suite, int fd);

  bool Derive(Direction* d, std::string_view secret) const;
  bool Update(Direction* d) const;  // the next generation ("traffic upd"), sequence 0

  // Opens the whole records at the front of in_ until application data is in plain_: kDone
  // when it is, kWantRead when a record is still incomplete, kClosed at an error or the end.
  TlsIo OpenReceived();
  // Opens the whole record at the front of in_ into plain_, or acts on what it carries.
  TlsIo OpenRecord(size_t length);
  TlsIo HandleHandshake(std::string_view bytes);
  TlsIo HandleAlert(std::string_view bytes);
  // Appends `plain` as one record of inner content `type` to out_. False if the cipher fails.
  bool Seal(uint8_t type, std::string_view plain);

  const Tls13Suite suite_;
  const int fd_;
  Direction read_;
  Direction write_;
  std::string in_;      // received, not yet opened
  std::string plain_;   // opened application data not yet read, from plain_pos_
  size_t plain_pos_ = 0;
  std::string out_;     // sealed, not yet sent, from out_sent_
  size_t out_sent_ = 0;
  size_t out_plain_ = 0;  // how many of the caller's bytes out_ carries
  std::string handshake_;  // a post-handshake message split across records
  bool answer_key_update_ = false;
  bool failed_ = false;  // sticky: a connection that failed once is over
};

}  // namespace kvol::apiserver
