#include "apiserver/node_client.h"

#include <gtest/gtest.h>

#include <map>

#include "api/well_known.h"
#include "apiserver/streaming.h"
#include "apiserver/websocket.h"

namespace kvol::apiserver {
namespace {

api::Node AgentNode() {
  api::Node n;
  n.metadata.name = "n2";
  n.metadata.annotations[std::string(api::kAnnAgentCertificateSha256)] = "ab12";
  n.status.addresses = {{"Hostname", "n2"}, {"InternalIP", "10.0.0.2"}};
  n.status.unknown_fields = {{"daemonEndpoints", {{"kubeletEndpoint", {{"Port", 10250}}}}}};
  return n;
}

TEST(NodeEndpointTest, FromWhatTheNodePublishes) {
  auto ep = NodeEndpointOf(AgentNode());
  ASSERT_TRUE(ep.ok()) << ep.error().message;
  EXPECT_EQ(ep->node, "n2");
  EXPECT_EQ(ep->host, "10.0.0.2");  // InternalIP before Hostname
  EXPECT_EQ(ep->port, 10250);
  EXPECT_EQ(ep->certificate_sha256, "ab12");
}

TEST(NodeEndpointTest, SaysWhatTheNodeLacks) {
  api::Node no_port = AgentNode();
  no_port.status.unknown_fields = api::Json::object();
  auto ep = NodeEndpointOf(no_port);
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.error().code, 503);
  EXPECT_EQ(ep.error().message,
            "the node agent of node \"n2\" cannot be reached for logs and exec: its Node has no "
            "status.daemonEndpoints.kubeletEndpoint.Port");
  api::Node no_pin = AgentNode();
  no_pin.metadata.annotations.clear();
  ep = NodeEndpointOf(no_pin);
  ASSERT_FALSE(ep.ok());
  EXPECT_NE(ep.error().message.find("no kvol.io/agent-certificate-sha256 annotation"),
            std::string::npos);
  api::Node no_address = AgentNode();
  no_address.status.addresses.clear();
  ep = NodeEndpointOf(no_address);
  ASSERT_FALSE(ep.ok());
  EXPECT_NE(ep.error().message.find("its Node has no address"), std::string::npos);
}

TEST(ExecOutcomeTest, ExitCodesSurviveTheStatus) {
  EXPECT_EQ(ExecOutcome({"true"}, 0), R"({"metadata":{},"status":"Success"})");
  for (int code : {0, 1, 3, 127, 255}) {
    EXPECT_EQ(ExitCodeOf(ExecOutcome({"sh", "-c", "exit"}, code)), code);
  }
  EXPECT_NE(ExecOutcome({"sh", "-c", "exit 3"}, 3)
                .find("command terminated with non-zero exit code: error executing command "
                      "[sh -c exit 3], exit code 3"),
            std::string::npos);
  EXPECT_EQ(ExitCodeOf("not json"), std::nullopt);
  EXPECT_EQ(ExitCodeOf(R"({"status":"Failure","message":"no code"})"), std::nullopt);
}

struct UpgradeRow {
  const char* name;
  std::map<std::string, std::string> headers;
  std::string want;  // "websocket v5.channel.k8s.io", "spdy v4.channel.k8s.io", or the error
};

TEST(ExecUpgradeTest, TheTransportAndTheNewestStreamProtocolBothSpeak) {
  const std::string ws_key = "k";
  const UpgradeRow rows[] = {
      {.name = "WebSocket, v5 and v4 offered",
       .headers = {{"upgrade", "websocket"},
                   {"sec-websocket-key", ws_key},
                   {"sec-websocket-protocol", "v5.channel.k8s.io, v4.channel.k8s.io"}},
       .want = "websocket v5.channel.k8s.io"},
      {.name = "WebSocket, v4",
       .headers = {{"upgrade", "websocket"},
                   {"sec-websocket-key", ws_key},
                   {"sec-websocket-protocol", "v4.channel.k8s.io"}},
       .want = "websocket v4.channel.k8s.io"},
      {.name = "WebSocket, only v1",
       .headers = {{"upgrade", "websocket"},
                   {"sec-websocket-key", ws_key},
                   {"sec-websocket-protocol", "channel.k8s.io"}},
       .want = "no supported WebSocket subprotocol in \"channel.k8s.io\" (v5.channel.k8s.io, "
               "v4.channel.k8s.io)"},
      {.name = "SPDY, as client-go 1.20 offers (headers joined by the server)",
       .headers = {{"upgrade", "SPDY/3.1"},
                   {"x-stream-protocol-version",
                    "v4.channel.k8s.io, v3.channel.k8s.io, v2.channel.k8s.io, channel.k8s.io"}},
       .want = "spdy v4.channel.k8s.io"},
      {.name = "SPDY has no v5",
       .headers = {{"upgrade", "spdy/3.1"}, {"x-stream-protocol-version", "v5.channel.k8s.io"}},
       .want = "no supported stream protocol in \"v5.channel.k8s.io\" (SPDY/3.1: "
               "v4.channel.k8s.io)"},
      {.name = "no upgrade",
       .headers = {{"sec-websocket-protocol", "v5.channel.k8s.io"}},
       .want = "Upgrade request required (WebSocket: v5.channel.k8s.io or v4.channel.k8s.io; "
               "SPDY/3.1: v4.channel.k8s.io)"},
      {.name = "WebSocket without its key",
       .headers = {{"upgrade", "websocket"}, {"sec-websocket-protocol", "v5.channel.k8s.io"}},
       .want = "Upgrade request required (WebSocket: v5.channel.k8s.io or v4.channel.k8s.io; "
               "SPDY/3.1: v4.channel.k8s.io)"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    HttpRequest req;
    req.headers = row.headers;
    auto u = ExecUpgradeOf(req);
    if (!u.ok()) {
      EXPECT_EQ(u.error().message, row.want);
      continue;
    }
    EXPECT_EQ(
        (u->transport == ExecUpgrade::Transport::kSpdy ? "spdy " : "websocket ") + u->protocol,
        row.want);
  }
}

TEST(TerminalSizeTest, WholeNumbersOnly) {
  using Size = std::optional<std::pair<uint16_t, uint16_t>>;
  const std::pair<const char*, Size> rows[] = {
      {R"({"Width":80,"Height":24})", Size({80, 24})},
      {R"({"Width":65535,"Height":0})", Size({65535, 0})},
      {R"({"Width":"x","Height":24})", std::nullopt},
      {R"({"Width":null,"Height":24})", std::nullopt},
      {R"({"Width":-1,"Height":24})", std::nullopt},
      {R"({"Width":65536,"Height":24})", std::nullopt},
      {R"({"Width":80.5,"Height":24})", std::nullopt},
      {R"({"Height":24})", std::nullopt},
      {R"([80,24])", std::nullopt},
      {"not json", std::nullopt},
  };
  for (const auto& [json, want] : rows) EXPECT_EQ(TerminalSizeOf(json), want) << json;
}

// One direction of a connection, in memory.
class Pipe final : public UpgradedConnection {
 public:
  int fd() const override { return -1; }
  bool Buffered() const override { return !data.empty(); }
  bool ReadSome(std::string* out) override {
    *out = std::move(data);
    data.clear();
    return !out->empty();
  }
  bool Write(std::string_view d) override {
    data += d;
    return true;
  }
  std::string data;
};

TEST(WebSocketTest, ClientFramesAreMaskedAndServerFramesAreNot) {
  Pipe wire;
  WebSocket client(wire, WebSocket::Side::kClient);
  WebSocket server(wire, WebSocket::Side::kServer);
  const std::string big(70000, 'x');  // a 64-bit length
  for (const std::string& msg : {std::string("\x00hello", 6), std::string(300, 'y'), big}) {
    ASSERT_TRUE(client.SendBinary(msg));
    ASSERT_GE(wire.data.size(), 2u);
    EXPECT_TRUE(static_cast<unsigned char>(wire.data[1]) & 0x80) << "client frames are masked";
    if (msg.size() < 126) {
      EXPECT_EQ(wire.data.find("hello"), std::string::npos) << "the masked payload is not readable";
    }
    std::vector<std::string> got;
    ASSERT_TRUE(server.Receive(&got));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], msg);
  }
  ASSERT_TRUE(server.SendBinary("\x01out"));
  EXPECT_FALSE(static_cast<unsigned char>(wire.data[1]) & 0x80) << "server frames are not";
  std::vector<std::string> got;
  ASSERT_TRUE(client.Receive(&got));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], "\x01out");
}

}  // namespace
}  // namespace kvol::apiserver
