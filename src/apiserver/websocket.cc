// WebSocket framing: parse what arrived, answer control frames, write frames (masked when
// sent by the client side).
#include "apiserver/websocket.h"

#include <openssl/rand.h>
#include <openssl/sha.h>

#include "base/strings.h"

namespace kvol::apiserver {

std::string WebSocketAccept(std::string_view key) {
  const std::string text = std::string(key) + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return Base64Encode(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

std::string WebSocketKey() {
  unsigned char raw[16];
  RAND_bytes(raw, sizeof raw);
  return Base64Encode(std::string_view(reinterpret_cast<const char*>(raw), sizeof raw));
}

bool WebSocket::SendFrame(uint8_t opcode, std::string_view payload) {
  const bool mask = side_ == Side::kClient;
  const char mask_bit = mask ? static_cast<char>(0x80) : 0;
  std::string frame;
  frame.reserve(payload.size() + 14);
  frame += static_cast<char>(0x80 | opcode);  // FIN
  const uint64_t n = payload.size();
  if (n < 126) {
    frame += static_cast<char>(mask_bit | static_cast<char>(n));
  } else if (n <= 0xFFFF) {
    frame += static_cast<char>(mask_bit | 126);
    frame += static_cast<char>(n >> 8);
    frame += static_cast<char>(n & 0xFF);
  } else {
    frame += static_cast<char>(mask_bit | 127);
    for (int shift = 56; shift >= 0; shift -= 8) frame += static_cast<char>((n >> shift) & 0xFF);
  }
  if (!mask) {
    frame.append(payload);
    return conn_.Write(frame);
  }
  unsigned char key[4];
  RAND_bytes(key, sizeof key);
  frame.append(reinterpret_cast<const char*>(key), sizeof key);
  const size_t at = frame.size();
  frame.append(payload);
  for (size_t i = 0; i < payload.size(); ++i) frame[at + i] ^= static_cast<char>(key[i % 4]);
  return conn_.Write(frame);
}

bool WebSocket::SendBinary(std::string_view data) { return SendFrame(0x2, data); }

void WebSocket::Close() {
  if (closed_) return;
  closed_ = true;
  SendFrame(0x8, std::string_view("\x03\xe8", 2));  // 1000: normal closure
}

bool WebSocket::Receive(std::vector<std::string>* messages) {
  std::string data;
  if (!conn_.ReadSome(&data)) return false;
  in_ += data;
  while (true) {
    if (in_.size() < 2) return true;
    const auto* b = reinterpret_cast<const unsigned char*>(in_.data());
    const bool fin = b[0] & 0x80;
    const uint8_t opcode = b[0] & 0x0F;
    const bool masked = b[1] & 0x80;
    uint64_t len = b[1] & 0x7F;
    size_t pos = 2;
    if (len == 126) {
      if (in_.size() < 4) return true;
      len = (uint64_t{b[2]} << 8) | b[3];
      pos = 4;
    } else if (len == 127) {
      if (in_.size() < 10) return true;
      len = 0;
      for (int i = 0; i < 8; ++i) len = (len << 8) | b[2 + i];
      pos = 10;
    }
    if (len > (64u << 20)) return false;  // no message that large is sent on these protocols
    const size_t need = pos + (masked ? 4 : 0) + len;
    if (in_.size() < need) return true;
    std::string payload = in_.substr(pos + (masked ? 4 : 0), len);
    if (masked) {
      for (size_t i = 0; i < payload.size(); ++i) payload[i] ^= in_[pos + (i % 4)];
    }
    in_.erase(0, need);
    switch (opcode) {
      case 0x8:  // close: answered, then the end
        Close();
        return false;
      case 0x9:  // ping
        SendFrame(0xA, payload);
        break;
      case 0xA:  // pong
        break;
      case 0x0:  // continuation
      case 0x1:  // text
      case 0x2:  // binary
        partial_ += payload;
        if (fin) {
          messages->push_back(std::move(partial_));
          partial_.clear();
        }
        break;
      default:
        return false;
    }
  }
}

}  // namespace kvol::apiserver
