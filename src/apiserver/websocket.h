// WebSocket (RFC 6455) over an upgraded connection, as much as Kubernetes' streaming
// subprotocols need: the handshake's keys, binary and text messages in (masked or not, possibly
// fragmented), binary messages out (masked from a client, as the RFC requires), ping answered,
// close. The API server is the server side towards kubectl and the client side towards a
// remote node agent.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/http_server.h"

namespace kvol::apiserver {

// Sec-WebSocket-Accept for a client's Sec-WebSocket-Key.
std::string WebSocketAccept(std::string_view key);
// A fresh Sec-WebSocket-Key (16 random bytes, base64).
std::string WebSocketKey();

class WebSocket {
 public:
  enum class Side { kServer, kClient };
  explicit WebSocket(UpgradedConnection& conn, Side side = Side::kServer)
      : conn_(conn), side_(side) {}

  // Reads what the connection has (call when it is readable or Buffered) and appends the
  // messages it completes. False once the peer has closed or the connection is gone.
  bool Receive(std::vector<std::string>* messages);
  bool SendBinary(std::string_view data);
  // Sends a close frame (normal closure).
  void Close();

 private:
  bool SendFrame(uint8_t opcode, std::string_view payload);

  UpgradedConnection& conn_;
  const Side side_;
  std::string in_;       // received bytes not yet parsed
  std::string partial_;  // a fragmented message so far
  bool closed_ = false;
};

}  // namespace kvol::apiserver
