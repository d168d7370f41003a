// A small client of Chromium's DevTools protocol, for tests that load a page in a real headless
// browser and check what it shows:
//
//   cdp PORT eval EXPRESSION     evaluates EXPRESSION in the page (awaiting a promise) and
//                                prints its value: a string as it is, anything else as JSON
//   cdp PORT screenshot FILE     saves what the page shows as a PNG
//   cdp PORT navigate URL        loads URL in the page
//
// PORT is the browser's --remote-debugging-port. It talks to the first page the browser has.
// Exit status 1 when the browser cannot be reached or the expression throws; a call that gets
// no answer in 30 s is killed.
#include <openssl/evp.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using Json = nlohmann::json;

std::string HttpGet(const std::string& port, const std::string& target) {
  asio::io_context ioc;
  tcp::resolver resolver(ioc);
  beast::tcp_stream stream(ioc);
  stream.connect(resolver.resolve("127.0.0.1", port));
  http::request<http::string_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1:" + port);
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(stream, buffer, res);
  beast::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  return res.body();
}

// The DevTools websocket path of the browser's first page.
std::string PageTarget(const std::string& port) {
  Json list = Json::parse(HttpGet(port, "/json/list"));
  for (const auto& t : list) {
    if (t.value("type", "") != "page") continue;
    std::string url = t.value("webSocketDebuggerUrl", "");
    const auto path = url.find("/devtools/");
    if (path != std::string::npos) return url.substr(path);
  }
  throw std::runtime_error("the browser has no page");
}

// Sends one command to the page and returns its result.
Json Call(const std::string& port, const std::string& method, Json params) {
  asio::io_context ioc;
  tcp::resolver resolver(ioc);
  websocket::stream<tcp::socket> ws(ioc);
  asio::connect(ws.next_layer(), resolver.resolve("127.0.0.1", port));
  ws.read_message_max(256u << 20);
  ws.handshake("127.0.0.1:" + port, PageTarget(port));
  ws.write(asio::buffer(Json{{"id", 1}, {"method", method}, {"params", std::move(params)}}.dump()));
  for (;;) {
    beast::flat_buffer buffer;
    ws.read(buffer);
    Json msg = Json::parse(beast::buffers_to_string(buffer.data()));
    if (msg.value("id", 0) != 1) continue;  // an event
    beast::error_code ec;
    ws.close(websocket::close_code::normal, ec);
    if (msg.contains("error")) throw std::runtime_error(method + ": " + msg["error"].dump());
    return msg["result"];
  }
}

std::string Base64Decode(const std::string& in) {
  std::string out(in.size() / 4 * 3 + 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()),
                                static_cast<int>(in.size()));
  if (n < 0) throw std::runtime_error("the screenshot is not base64");
  size_t pad = 0;
  for (size_t i = in.size(); i > 0 && in[i - 1] == '='; --i) ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

int Run(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: cdp PORT eval EXPRESSION | cdp PORT screenshot FILE | cdp PORT navigate URL\n";
    return 2;
  }
  const std::string port = argv[1], verb = argv[2], arg = argv[3];
  if (verb == "eval") {
    Json r = Call(port, "Runtime.evaluate",
                  {{"expression", arg}, {"returnByValue", true}, {"awaitPromise", true}});
    if (r.contains("exceptionDetails")) {
      std::cerr << "cdp: the expression threw: " << r["exceptionDetails"].dump() << "\n";
      return 1;
    }
    const Json& v = r["result"].value("value", Json());
    std::cout << (v.is_string() ? v.get<std::string>() : v.dump()) << "\n";
    return 0;
  }
  if (verb == "screenshot") {
    Json r = Call(port, "Page.captureScreenshot", {{"format", "png"}});
    std::ofstream(arg, std::ios::binary) << Base64Decode(r.value("data", ""));
    return 0;
  }
  if (verb == "navigate") {
    Call(port, "Page.navigate", {{"url", arg}});
    return 0;
  }
  std::cerr << "cdp: unknown verb " << verb << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  alarm(30);  // a browser that stops answering ends the call (SIGALRM), not the test
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "cdp: " << e.what() << "\n";
    return 1;
  }
}
