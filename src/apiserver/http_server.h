// A small HTTPS/1.1 server for the API: keep-alive, request bodies up to a limit, and chunked
// streaming responses. Connections wait, read their requests and stream watches on a few I/O
// threads; a handler runs on a worker thread while it answers. A watch handed to the server
// (ResponseWriter::Detach) holds no thread however long it stays open.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"

namespace kvol::apiserver {

struct HttpRequest {
  std::string method;                        // GET, POST, PUT, PATCH, DELETE, ...
  std::string target;                        // as received: path and query
  std::string path;                          // percent-decoded path
  std::map<std::string, std::string> query;  // decoded; the last value of a repeated key wins
  std::vector<std::pair<std::string, std::string>> query_list;  // decoded, every one in order
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string remote;  // peer address

  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
  std::string Query(const std::string& name) const {
    auto it = query.find(name);
    return it == query.end() ? std::string() : it->second;
  }
  bool HasQuery(const std::string& name) const { return query.count(name) > 0; }
  // Every value of a repeated key (exec's command=...&command=...).
  std::vector<std::string> QueryAll(const std::string& name) const {
    std::vector<std::string> out;
    for (const auto& [k, v] : query_list) {
      if (k == name) out.push_back(v);
    }
    return out;
  }
};

// A connection taken over by a handler after answering 101 Switching Protocols (WebSocket).
// One thread uses it: poll fd() for input (after checking Buffered()), read, write.
class UpgradedConnection {
 public:
  virtual ~UpgradedConnection() = default;
  virtual int fd() const = 0;
  // Input already received and not yet returned by ReadSome (poll would not say so).
  virtual bool Buffered() const = 0;
  // What is there (waiting for something if nothing is); "" with false at the end.
  virtual bool ReadSome(std::string* out) = 0;
  virtual bool Write(std::string_view data) = 0;
};

// The rest of a chunked response, produced over time and written out by the server without a
// thread of its own (a watch's events): see ResponseWriter::Detach.
class StreamSource {
 public:
  virtual ~StreamSource() = default;
  // Called once, before the first Pull, with what to call (from any thread, at any time until
  // Close; it only schedules a Pull) when there may be something new.
  virtual void Start(std::function<void()> wake) = 0;
  // Without waiting: appends what is ready to `out`, and sets `again` to how soon to be asked
  // once more even without a wake. False when the stream is over (after its last data).
  virtual bool Pull(std::string* out, std::chrono::milliseconds* again) = 0;
  // The response is over: the stream ended, the client went, or the server stops.
  virtual void Close() = 0;
};

// How a handler answers: one whole response, or a stream of chunks (watch).
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  // Sends a complete response. Returns false if the connection is gone.
  virtual bool Send(int status, std::string_view content_type, std::string_view body,
                    const std::vector<std::pair<std::string, std::string>>& headers = {}) = 0;
  // Starts a chunked response; then WriteChunk until done, then EndStream.
  virtual bool StartStream(int status, std::string_view content_type) = 0;
  virtual bool WriteChunk(std::string_view data) = 0;
  virtual void EndStream() = 0;
  // Answers 101 Switching Protocols with `headers` and hands the connection over (it is closed
  // when the handler returns). Null if the connection is gone.
  virtual std::unique_ptr<UpgradedConnection> Upgrade(
      const std::vector<std::pair<std::string, std::string>>& headers) = 0;
  // True once the server is stopping, or while a stream goes out once its client has closed
  // its end: long-running handlers should return.
  virtual bool Stopping() const = 0;
  // After StartStream: hands the rest of the stream to the server, which pulls `source` when
  // woken and writes what it gives; the handler returns at once. False if that cannot be
  // done (the connection is gone), and the handler goes on writing itself.
  virtual bool Detach(std::shared_ptr<StreamSource> /*source*/) { return false; }
  // The request proved who sent it: the connection no longer counts toward the limit on
  // unauthenticated connections.
  virtual void Authenticated() {}
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 6443;  // 0: any free port
  std::string cert_pem;
  std::string key_pem;
  size_t max_body_bytes = 3 * 1024 * 1024;  // as Kubernetes' API server
  // A connection is closed when its TLS handshake has not finished this long after it was
  // accepted, when no request has begun this long after the connection was ready for one (an
  // idle keep-alive connection), when a request's header has not been read whole this long
  // after its first bytes (kube-apiserver's ReadHeaderTimeout), when its body stalls for the
  // idle time, or when one
  // write of a response or of a watch's stream has not gone out this long after it began (a
  // client that stopped reading), also on an upgraded connection. Time spent on the answer
  // itself, such as a watch waiting for events or an upgraded connection waiting for input,
  // has no limit.
  std::chrono::milliseconds handshake_timeout = std::chrono::seconds(10);
  std::chrono::milliseconds header_timeout = std::chrono::seconds(32);
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(90);
  std::chrono::milliseconds write_timeout = std::chrono::minutes(1);
  size_t max_connections = 65536;
  // Connections that have not yet sent a request that authenticated (including those still in
  // their handshake): past this many, the oldest that waits for input is closed.
  size_t max_unauthenticated = 1024;
  size_t io_threads = 2;
  size_t max_handler_threads = 1024;  // handlers running at once; more requests wait
};

class HttpServer {
 public:
  using Handler = std::function<void(const HttpRequest&, ResponseWriter&)>;

  HttpServer(HttpServerOptions opts, Handler handler);
  ~HttpServer();

  // Binds and starts accepting. Unavailable with a clear message if the address is taken.
  Status Start();
  // Stops accepting, ends every connection (streams see Stopping()), and joins all threads.
  void Stop();
  int port() const { return port_; }

  // What the server holds now: open connections, connections not yet authenticated, streams
  // handed to it, and threads (I/O and handlers).
  struct Stats {
    size_t connections = 0;
    size_t unauthenticated = 0;
    size_t detached_streams = 0;
    size_t threads = 0;
  };
  Stats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

// Percent-decoding of a URL path ('+' stays '+'; a query's '+' is decoded as a space first).
std::string UrlDecode(std::string_view s);

}  // namespace kvol::apiserver
