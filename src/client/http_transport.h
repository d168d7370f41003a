// HTTPS requests for the HTTP client: a pool of keep-alive connections for request/response
// calls and a dedicated connection per streaming (watch) response. Blocking calls with
// deadlines; each connection runs its own Asio context on the calling thread.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "client/http.h"

namespace kvol::client {

struct HttpResponse {
  int status = 0;
  std::string body;
};

// A chunked response read as newline-delimited records (one watch event per line).
class HttpLineStream {
 public:
  virtual ~HttpLineStream() = default;
  // Complete lines received so far (without the newline); empty when `timeout` passes first.
  // After the server ends the response, OutOfRange; on a broken connection, Unavailable.
  virtual StatusOr<std::vector<std::string>> Next(std::chrono::milliseconds timeout) = 0;
  // Ends the stream; a Next waiting in another thread returns promptly. Thread-safe.
  virtual void Close() = 0;
};

class HttpTransport {
 public:
  static StatusOr<std::unique_ptr<HttpTransport>> Create(HttpConfig config);
  ~HttpTransport();

  // One request on a pooled connection. A connection that turns out to have been closed by
  // the server while idle is replaced and the request sent again once.
  StatusOr<HttpResponse> Do(std::string_view method, const std::string& target,
                            std::string_view content_type, std::string body);

  // A GET whose response streams. A status other than 200 is returned as `*status` with the
  // whole body in `*error_body` and no stream.
  StatusOr<std::unique_ptr<HttpLineStream>> Stream(const std::string& target, int* status,
                                                   std::string* error_body);

  const HttpConfig& config() const { return config_; }

 private:
  class Connection;
  class LineStream;
  struct Tls;

  explicit HttpTransport(HttpConfig config);
  StatusOr<std::unique_ptr<Connection>> Connect();

  HttpConfig config_;
  std::string host_;  // without brackets
  std::string port_;
  std::string host_header_;
  std::unique_ptr<Tls> tls_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_;
};

}  // namespace kvol::client
