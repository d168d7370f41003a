#include "apiserver/node_client.h"

#include <gtest/gtest.h>

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

TEST(ExecProtocolTest, TheNewestChannelProtocolBothSpeak) {
  HttpRequest req;
  req.headers = {{"upgrade", "websocket"}, {"sec-websocket-key", "k"}};
  auto offer = [&](std::string protocols) {
    req.headers["sec-websocket-protocol"] = std::move(protocols);
    auto p = ExecProtocolOf(req);
    return p.ok() ? *p : p.error().message;
  };
  EXPECT_EQ(offer("v5.channel.k8s.io, v4.channel.k8s.io"), "v5.channel.k8s.io");
  EXPECT_EQ(offer("v4.channel.k8s.io"), "v4.channel.k8s.io");
  EXPECT_EQ(offer("channel.k8s.io"),
            "no supported WebSocket subprotocol in \"channel.k8s.io\" (v5.channel.k8s.io, "
            "v4.channel.k8s.io)");
  req.headers.erase("upgrade");
  EXPECT_EQ(offer("v5.channel.k8s.io"),
            "Upgrade request required (WebSocket: v5.channel.k8s.io or v4.channel.k8s.io)");
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
