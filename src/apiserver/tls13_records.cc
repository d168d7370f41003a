// TLS 1.3 records after the handshake: sealing, opening, key updates, alerts.
#include "apiserver/tls13_records.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace kvol::apiserver {
namespace {

// RFC 8446 §5.1, §5.2, §4.6.3, §6.
constexpr uint8_t kAlert = 21;
constexpr uint8_t kHandshake = 22;
constexpr uint8_t kApplicationData = 23;
constexpr uint8_t kKeyUpdate = 24;
constexpr uint8_t kUserCanceled = 90;
constexpr uint8_t kWarning = 1;
constexpr size_t kHeader = 5;
constexpr size_t kTag = 16;
constexpr size_t kMaxPlain = 16 * 1024;
constexpr size_t kMaxInner = kMaxPlain + 1;             // content and its type
constexpr size_t kMaxCiphertext = kMaxPlain + 256;       // what a peer may send
constexpr size_t kMaxHandshakeMessage = 1024;            // after the handshake: a KeyUpdate
// AES-GCM keys are changed well before 2^24.5 full records (§5.5); the same for every suite.
constexpr uint64_t kRecordsPerKey = uint64_t{1} << 24;

struct SuiteInfo {
  const char* cipher;
  const EVP_MD* (*digest)();
  size_t key_len;
};

SuiteInfo Info(Tls13Suite s) {
  switch (s) {
    case Tls13Suite::kAes128GcmSha256:
      return {"AES-128-GCM", EVP_sha256, 16};
    case Tls13Suite::kAes256GcmSha384:
      return {"AES-256-GCM", EVP_sha384, 32};
    case Tls13Suite::kChaCha20Poly1305Sha256:
      return {"ChaCha20-Poly1305", EVP_sha256, 32};
  }
  return {"AES-128-GCM", EVP_sha256, 16};
}

// The suite's AEAD, fetched once; null when this OpenSSL lacks it.
const EVP_CIPHER* Cipher(Tls13Suite s) {
  static const EVP_CIPHER* const kCiphers[] = {
      EVP_CIPHER_fetch(nullptr, Info(Tls13Suite::kAes128GcmSha256).cipher, nullptr),
      EVP_CIPHER_fetch(nullptr, Info(Tls13Suite::kAes256GcmSha384).cipher, nullptr),
      EVP_CIPHER_fetch(nullptr, Info(Tls13Suite::kChaCha20Poly1305Sha256).cipher, nullptr),
  };
  return kCiphers[static_cast<int>(s)];
}

// One cipher context per thread, re-keyed for every record: connections keep no OpenSSL state.
EVP_CIPHER_CTX* ThreadCipherContext() {
  struct Holder {
    EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
    ~Holder() { EVP_CIPHER_CTX_free(ctx); }
  };
  thread_local Holder holder;
  return holder.ctx;
}

// HKDF-Expand-Label(secret, label, "", length) for length up to the hash's size (§7.1), which
// is one HMAC block.
bool ExpandLabel(const EVP_MD* md, const uint8_t* secret, size_t secret_len, std::string_view label,
                 size_t length, uint8_t* out) {
  uint8_t info[2 + 1 + 6 + 32 + 1 + 1];
  const std::string_view prefix = "tls13 ";
  if (label.size() > 32 || length > static_cast<size_t>(EVP_MD_get_size(md))) return false;
  size_t n = 0;
  info[n++] = static_cast<uint8_t>(length >> 8);
  info[n++] = static_cast<uint8_t>(length);
  info[n++] = static_cast<uint8_t>(prefix.size() + label.size());
  std::memcpy(info + n, prefix.data(), prefix.size());
  n += prefix.size();
  std::memcpy(info + n, label.data(), label.size());
  n += label.size();
  info[n++] = 0;  // empty context
  info[n++] = 1;  // T(1)
  uint8_t block[EVP_MAX_MD_SIZE];
  unsigned int block_len = 0;
  if (HMAC(md, secret, static_cast<int>(secret_len), info, n, block, &block_len) == nullptr) {
    return false;
  }
  std::memcpy(out, block, length);
  OPENSSL_cleanse(block, sizeof block);
  return true;
}

// The per-record nonce: the IV xor the sequence number, right-aligned (§5.3).
void Nonce(const uint8_t iv[12], uint64_t sequence, uint8_t out[12]) {
  std::memcpy(out, iv, 12);
  for (int i = 0; i < 8; ++i) out[11 - i] ^= static_cast<uint8_t>(sequence >> (8 * i));
}

}  // namespace

Tls13Handover::~Tls13Handover() {
  OPENSSL_cleanse(client_secret.data(), client_secret.size());
  OPENSSL_cleanse(server_secret.data(), server_secret.size());
}

Tls13Records::Direction::~Direction() {
  OPENSSL_cleanse(secret, sizeof secret);
  OPENSSL_cleanse(key, sizeof key);
  OPENSSL_cleanse(iv, sizeof iv);
}

Tls13Records::Tls13Records(Tls13Suite suite, int fd) : suite_(suite), fd_(fd) {}

Tls13Records::~Tls13Records() = default;

std::unique_ptr<Tls13Records> Tls13Records::Create(const Tls13Handover& h, int fd) {
  if (Cipher(h.suite) == nullptr) return nullptr;
  std::unique_ptr<Tls13Records> r(new Tls13Records(h.suite, fd));
  if (!r->Derive(&r->read_, h.client_secret) || !r->Derive(&r->write_, h.server_secret)) {
    return nullptr;
  }
  r->write_.sequence = h.server_records;
  return r;
}

bool Tls13Records::Derive(Direction* d, std::string_view secret) const {
  const SuiteInfo info = Info(suite_);
  const EVP_MD* md = info.digest();
  if (secret.size() != static_cast<size_t>(EVP_MD_get_size(md))) return false;
  std::memcpy(d->secret, secret.data(), secret.size());
  d->secret_len = secret.size();
  d->sequence = 0;
  return ExpandLabel(md, d->secret, d->secret_len, "key", info.key_len, d->key) &&
         ExpandLabel(md, d->secret, d->secret_len, "iv", sizeof d->iv, d->iv);
}

bool Tls13Records::Update(Direction* d) const {
  uint8_t next[48];
  const EVP_MD* md = Info(suite_).digest();
  if (!ExpandLabel(md, d->secret, d->secret_len, "traffic upd", d->secret_len, next)) return false;
  const bool ok = Derive(d, std::string_view(reinterpret_cast<const char*>(next), d->secret_len));
  OPENSSL_cleanse(next, sizeof next);
  return ok;
}

bool Tls13Records::Pending() { return OpenReceived() != TlsIo::kWantRead; }

bool Tls13Records::Seal(uint8_t type, std::string_view plain) {
  const size_t length = plain.size() + 1 + kTag;
  const size_t at = out_.size();
  out_.resize(at + kHeader + length);
  auto* rec = reinterpret_cast<uint8_t*>(out_.data() + at);
  rec[0] = kApplicationData;  // every protected record's outer type
  rec[1] = 0x03;
  rec[2] = 0x03;
  rec[3] = static_cast<uint8_t>(length >> 8);
  rec[4] = static_cast<uint8_t>(length);
  uint8_t nonce[12];
  Nonce(write_.iv, write_.sequence, nonce);
  EVP_CIPHER_CTX* ctx = ThreadCipherContext();
  uint8_t* body = rec + kHeader;
  int len = 0;
  const bool ok =
      ctx != nullptr && EVP_EncryptInit_ex2(ctx, Cipher(suite_), write_.key, nonce, nullptr) == 1 &&
      EVP_EncryptUpdate(ctx, nullptr, &len, rec, kHeader) == 1 &&
      (plain.empty() || EVP_EncryptUpdate(ctx, body, &len, reinterpret_cast<const uint8_t*>(plain.data()),
                                          static_cast<int>(plain.size())) == 1) &&
      EVP_EncryptUpdate(ctx, body + plain.size(), &len, &type, 1) == 1 &&
      EVP_EncryptFinal_ex(ctx, body + plain.size() + 1, &len) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, kTag, body + plain.size() + 1) == 1;
  if (!ok) return false;
  ++write_.sequence;
  return true;
}

TlsIo Tls13Records::Write(std::string_view data, size_t* n) {
  if (failed_) return TlsIo::kClosed;
  if (out_.empty()) {
    if (data.empty()) {
      *n = 0;
      return TlsIo::kDone;
    }
    if (answer_key_update_ || write_.sequence >= kRecordsPerKey) {
      // Under the old key, then every later record under the new one (§4.6.3).
      const char update[] = {static_cast<char>(kKeyUpdate), 0, 0, 1, 0 /* update_not_requested */};
      if (!Seal(kHandshake, std::string_view(update, sizeof update)) || !Update(&write_)) {
        failed_ = true;
        return TlsIo::kClosed;
      }
      answer_key_update_ = false;
    }
    // One record at a time, as OpenSSL writes: a reader that stalls holds one record's buffer.
    const size_t take = std::min(data.size(), kMaxPlain);
    if (!Seal(kApplicationData, data.substr(0, take))) {
      failed_ = true;
      return TlsIo::kClosed;
    }
    out_plain_ = take;
    out_sent_ = 0;
  }
  while (out_sent_ < out_.size()) {
    const ssize_t r = ::send(fd_, out_.data() + out_sent_, out_.size() - out_sent_, MSG_NOSIGNAL);
    if (r >= 0) {
      out_sent_ += static_cast<size_t>(r);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return TlsIo::kWantWrite;
    } else if (errno != EINTR) {
      failed_ = true;
      return TlsIo::kClosed;
    }
  }
  *n = std::min(out_plain_, data.size());  // the caller passed the same bytes again
  std::string().swap(out_);  // an idle connection keeps no buffer
  out_sent_ = 0;
  out_plain_ = 0;
  return TlsIo::kDone;
}

TlsIo Tls13Records::Read(char* buf, size_t len, size_t* n) {
  thread_local char chunk[2 * (kHeader + kMaxCiphertext)];
  while (true) {
    const TlsIo opened = OpenReceived();
    if (opened == TlsIo::kClosed) return TlsIo::kClosed;
    if (opened == TlsIo::kDone) {
      const size_t k = std::min(len, plain_.size() - plain_pos_);
      std::memcpy(buf, plain_.data() + plain_pos_, k);
      plain_pos_ += k;
      if (plain_pos_ == plain_.size()) {
        std::string().swap(plain_);
        plain_pos_ = 0;
      }
      *n = k;
      return TlsIo::kDone;
    }
    const ssize_t r = ::recv(fd_, chunk, sizeof chunk, 0);
    if (r > 0) {
      in_.append(chunk, static_cast<size_t>(r));
    } else if (r == 0) {
      failed_ = true;  // the end of the stream
      return TlsIo::kClosed;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return TlsIo::kWantRead;
    } else if (errno != EINTR) {
      failed_ = true;
      return TlsIo::kClosed;
    }
  }
}

TlsIo Tls13Records::OpenReceived() {
  while (!failed_ && plain_pos_ >= plain_.size()) {
    if (in_.size() < kHeader) return TlsIo::kWantRead;
    const size_t length = (static_cast<uint8_t>(in_[3]) << 8) | static_cast<uint8_t>(in_[4]);
    if (static_cast<uint8_t>(in_[0]) != kApplicationData || length > kMaxCiphertext ||
        length < 1 + kTag) {
      failed_ = true;  // after the handshake every record is protected (§5.2)
      break;
    }
    if (in_.size() < kHeader + length) return TlsIo::kWantRead;
    if (OpenRecord(length) != TlsIo::kDone) failed_ = true;
    in_.erase(0, kHeader + length);
    if (in_.empty()) {
      std::string().swap(in_);
    } else if (in_.capacity() > 2 * (kHeader + kMaxCiphertext) && in_.size() < in_.capacity() / 4) {
      in_.shrink_to_fit();
    }
  }
  return failed_ ? TlsIo::kClosed : TlsIo::kDone;
}

TlsIo Tls13Records::OpenRecord(size_t length) {
  const auto* rec = reinterpret_cast<const uint8_t*>(in_.data());
  const size_t inner_len = length - kTag;
  if (inner_len > kMaxInner || read_.sequence == UINT64_MAX) return TlsIo::kClosed;
  uint8_t tag[kTag];
  std::memcpy(tag, rec + kHeader + inner_len, kTag);
  uint8_t nonce[12];
  Nonce(read_.iv, read_.sequence, nonce);
  plain_.resize(inner_len);
  plain_pos_ = 0;
  auto* out = reinterpret_cast<uint8_t*>(plain_.data());
  EVP_CIPHER_CTX* ctx = ThreadCipherContext();
  int len = 0;
  const bool ok =
      ctx != nullptr && EVP_DecryptInit_ex2(ctx, Cipher(suite_), read_.key, nonce, nullptr) == 1 &&
      EVP_DecryptUpdate(ctx, nullptr, &len, rec, kHeader) == 1 &&
      EVP_DecryptUpdate(ctx, out, &len, rec + kHeader, static_cast<int>(inner_len)) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, kTag, tag) == 1 &&
      EVP_DecryptFinal_ex(ctx, out + inner_len, &len) == 1;
  if (!ok) {
    std::string().swap(plain_);
    return TlsIo::kClosed;  // bad_record_mac
  }
  ++read_.sequence;
  // The content type is the last byte that is not zero padding (§5.4).
  size_t end = inner_len;
  while (end > 0 && plain_[end - 1] == 0) --end;
  if (end == 0) {
    std::string().swap(plain_);
    return TlsIo::kClosed;
  }
  const auto type = static_cast<uint8_t>(plain_[end - 1]);
  plain_.resize(end - 1);
  if (type == kApplicationData) {
    // Application data may not come between the fragments of a handshake message (§5.1).
    return handshake_.empty() ? TlsIo::kDone : TlsIo::kClosed;
  }
  // Handshake and alert records are never empty (§5.1).
  if (plain_.empty()) return TlsIo::kClosed;
  std::string content;
  content.swap(plain_);
  TlsIo r = TlsIo::kClosed;
  if (type == kHandshake) r = HandleHandshake(content);
  if (type == kAlert) r = HandleAlert(content);
  OPENSSL_cleanse(content.data(), content.size());
  return r;
}

TlsIo Tls13Records::HandleHandshake(std::string_view bytes) {
  handshake_.append(bytes);
  while (handshake_.size() >= 4) {
    const auto* h = reinterpret_cast<const uint8_t*>(handshake_.data());
    const size_t length = (size_t{h[1]} << 16) | (size_t{h[2]} << 8) | h[3];
    if (length > kMaxHandshakeMessage) return TlsIo::kClosed;
    if (handshake_.size() < 4 + length) break;
    // A client sends nothing after its Finished but KeyUpdate, which must end its record.
    if (h[0] != kKeyUpdate || length != 1 || h[4] > 1 || handshake_.size() != 5) {
      return TlsIo::kClosed;
    }
    if (h[4] == 1) answer_key_update_ = true;  // update_requested
    handshake_.clear();
    if (!Update(&read_)) return TlsIo::kClosed;
  }
  if (handshake_.empty()) std::string().swap(handshake_);
  return TlsIo::kDone;
}

TlsIo Tls13Records::HandleAlert(std::string_view bytes) {
  if (bytes.size() != 2) return TlsIo::kClosed;
  const auto level = static_cast<uint8_t>(bytes[0]);
  const auto description = static_cast<uint8_t>(bytes[1]);
  if (level == kWarning && description == kUserCanceled) return TlsIo::kDone;  // close_notify next
  return TlsIo::kClosed;  // close_notify, or an error: either ends the connection
}

}  // namespace kvol::apiserver
