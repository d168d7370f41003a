// `kubectl exec` through a CRI runtime, as kubelet serves it (ExecSync is for probes): the
// runtime answers Exec with the URL of its streaming server, which serves the session over SPDY
// (spdy.h) with Kubernetes' v4 stream protocol: streams error, stdin (with -i), stdout, stderr
// (not with a terminal) and resize (with -t), and the outcome as a Status on the error stream.
#pragma once

#include <poll.h>

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "node/runtime/cri/cri_client.h"
#include "base/spdy.h"
#include "node/runtime/exec.h"

namespace kvol::node::cri {

// The stream protocol asked of the runtime's streaming server.
inline constexpr std::string_view kStreamProtocol = "v4.channel.k8s.io";
// The most stdin one DATA frame carries.
inline constexpr size_t kMaxDataFrame = 32 << 10;

class CriExecStream : public runtime::ExecStream {
 public:
  // Asks `client` for an Exec of `argv` in container `id` and opens its stream; each step of
  // opening it (connect, upgrade) waits at most `timeout`.
  static StatusOr<std::unique_ptr<CriExecStream>> Start(
      Client& client, const std::string& id, const std::vector<std::string>& argv, bool stdin,
      bool tty, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~CriExecStream() override;
  CriExecStream(const CriExecStream&) = delete;
  CriExecStream& operator=(const CriExecStream&) = delete;

  int fd() const override { return socket_; }
  short PollEvents() const override { return out_.empty() ? POLLIN : POLLIN | POLLOUT; }
  std::optional<int> Collect(std::vector<std::pair<int, std::string>>* out) override;
  void WriteStdin(std::string_view data) override;
  bool StdinBacklogged() const override { return !out_.empty() || !pending_stdin_.empty(); }
  void CloseStdin() override;
  void Resize(uint16_t cols, uint16_t rows) override;
  // The client went away: the connection is closed (the runtime ends the session).
  void Kill() override;

 private:
  // Streams by the id this client gave them; 0 for one not opened.
  struct Streams {
    uint32_t error = 0, stdin = 0, stdout = 0, stderr = 0, resize = 0;
  };
  CriExecStream() = default;
  Status Open(const std::string& url, bool stdin, bool tty, std::chrono::milliseconds timeout);
  // Queues `bytes` for the server and sends what the connection takes now.
  void Send(const std::string& bytes);
  void Pump();
  // What waited for its stream's reply.
  void Flush();
  std::optional<int> Outcome(std::vector<std::pair<int, std::string>>* out);

  int socket_ = -1;
  spdy::Writer writer_;
  spdy::Reader reader_;
  Streams streams_;
  std::set<uint32_t> replied_;  // streams the server has answered
  std::string out_;             // frames the connection has not taken yet
  std::string pending_stdin_;   // until the stdin stream is answered
  bool pending_close_ = false;
  std::optional<std::string> pending_resize_;
  std::string status_;        // the error stream's data
  bool ended_ = false;        // the connection is over
  bool failed_ = false;       // ... before the session's end
  bool send_failed_ = false;  // nothing more is sent; what comes is still read
  std::string failure_;
  std::optional<int> outcome_;
};

}  // namespace kvol::node::cri
