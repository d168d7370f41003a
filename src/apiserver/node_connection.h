// How the API server reaches a node's agent for what only the node has: the containers' logs
// (`kubectl logs`) and processes started in them (`kubectl exec`). Kubernetes' API server
// dials kubelet for these; kvol's asks the connection registered for the pod's node (in
// `kvol server`, the machine's own agent, in process).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/core.h"
#include "apiserver/errors.h"
#include "os/process_stream.h"

namespace kvol::apiserver {

// The query of GET .../pods/NAME/log.
struct PodLogOptions {
  std::string container;  // resolved by the server: never empty here
  bool follow = false;
  bool previous = false;
  std::optional<int64_t> tail_lines;
  std::optional<int64_t> limit_bytes;
};

// A container's log as it is read: chunks until the end (or, following, until the container
// stops and everything it wrote has been read).
class LogStream {
 public:
  virtual ~LogStream() = default;
  // The next chunk, waiting for one while following (an empty chunk now and then while none
  // comes). False at the end.
  virtual bool Next(std::string* chunk) = 0;
};

// The query of .../pods/NAME/exec.
struct ExecOptions {
  std::string container;  // resolved by the server: never empty here
  std::vector<std::string> command;
  bool stdin = false;
  bool tty = false;
};

// A process started in a container. One thread serves it: poll fd(), then Collect.
using ExecProcess = os::ProcessStream;

// What the agent answered at one of its own paths (GET .../nodes/NAME/proxy/PATH).
struct ProxyResponse {
  int code = 200;
  std::string content_type;
  std::string body;
};

class NodeConnection {
 public:
  virtual ~NodeConnection() = default;
  virtual ApiOr<std::unique_ptr<LogStream>> Logs(const api::Pod& pod,
                                                 const PodLogOptions& opts) = 0;
  virtual ApiOr<std::unique_ptr<ExecProcess>> Exec(const api::Pod& pod,
                                                   const ExecOptions& opts) = 0;
  // GET of the agent's own `path` ("/metrics", "/healthz"), as the API server proxies kubelet's
  // port for `kubectl get --raw /api/v1/nodes/NAME/proxy/metrics`.
  virtual ApiOr<ProxyResponse> Get(const std::string& path) = 0;
};

// The connections by node name. Thread-safe; a connection must outlive its registration.
class NodeConnections {
 public:
  void Register(const std::string& node, NodeConnection* connection) {
    std::lock_guard lock(mu_);
    if (connection) {
      by_node_[node] = connection;
    } else {
      by_node_.erase(node);
    }
  }
  NodeConnection* Find(const std::string& node) const {
    std::lock_guard lock(mu_);
    auto it = by_node_.find(node);
    return it == by_node_.end() ? nullptr : it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, NodeConnection*> by_node_;
};

}  // namespace kvol::apiserver
