// The TLS stream the HTTP server and the node-agent client run on, and a connection over it
// that a handler or a client takes over after a 101 Switching Protocols.
#pragma once

#include <openssl/ssl.h>

#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <string>
#include <string_view>

#include "apiserver/http_server.h"

namespace kvol::apiserver {

using SslStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

// `buffer` holds what was read past the HTTP response or request that ended in the upgrade:
// it is returned first.
class UpgradedStream final : public UpgradedConnection {
 public:
  UpgradedStream(SslStream& stream, boost::beast::flat_buffer& buffer)
      : stream_(stream), buffer_(buffer) {}
  int fd() const override {
    return const_cast<SslStream&>(stream_).next_layer().socket().native_handle();
  }
  bool Buffered() const override {
    return buffer_.size() > 0 || SSL_pending(const_cast<SslStream&>(stream_).native_handle()) > 0;
  }
  bool ReadSome(std::string* out) override {
    out->clear();
    if (buffer_.size() > 0) {
      out->assign(static_cast<const char*>(buffer_.data().data()), buffer_.size());
      buffer_.consume(buffer_.size());
      return true;
    }
    char buf[16 * 1024];
    boost::beast::error_code ec;
    const size_t n = stream_.read_some(boost::asio::buffer(buf, sizeof buf), ec);
    if (ec || n == 0) return false;
    out->assign(buf, n);
    return true;
  }
  bool Write(std::string_view data) override {
    boost::beast::error_code ec;
    boost::asio::write(stream_, boost::asio::const_buffer(data.data(), data.size()), ec);
    return !ec;
  }

 private:
  SslStream& stream_;
  boost::beast::flat_buffer& buffer_;
};

}  // namespace kvol::apiserver
