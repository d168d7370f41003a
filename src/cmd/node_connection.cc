#include "cmd/node_connection.h"

#include "metrics/metrics.h"
#include "node/runtime/cri/cri_log.h"
#include "node/runtime/exec.h"
#include "node/runtime/logs.h"

namespace kvol::cmd {
namespace {

class FileLogStream final : public apiserver::LogStream {
 public:
  explicit FileLogStream(std::unique_ptr<node::runtime::LogReader> r) : reader_(std::move(r)) {}
  bool Next(std::string* chunk) override { return reader_->Next(chunk); }

 private:
  std::unique_ptr<node::runtime::LogReader> reader_;
};

// A log file in the CRI log format, decoded to the container's output; limitBytes counts the
// output, not the file.
class CriLogStream final : public apiserver::LogStream {
 public:
  CriLogStream(std::unique_ptr<node::runtime::LogReader> r, std::optional<int64_t> limit_bytes)
      : reader_(std::move(r)), remaining_(limit_bytes) {}
  bool Next(std::string* chunk) override {
    chunk->clear();
    if (remaining_ && *remaining_ <= 0) return false;
    std::string raw;
    if (!reader_->Next(&raw)) return false;
    decoder_.Feed(raw, chunk);
    if (remaining_) {
      if (static_cast<int64_t>(chunk->size()) > *remaining_) chunk->resize(*remaining_);
      *remaining_ -= static_cast<int64_t>(chunk->size());
    }
    return true;
  }

 private:
  std::unique_ptr<node::runtime::LogReader> reader_;
  node::cri::CriLogDecoder decoder_;
  std::optional<int64_t> remaining_;
};

// kubelet's words for a container that has no log to show yet.
apiserver::ApiError NotStarted(const api::Pod& pod, const std::string& container,
                               const std::string& reason) {
  return apiserver::BadRequest(
      "container \"" + container + "\" in pod \"" + pod.metadata.name +
      "\" is waiting to start: " + (reason.empty() ? "ContainerCreating" : reason));
}

}  // namespace

apiserver::ApiOr<std::unique_ptr<apiserver::ExecProcess>> LocalNodeConnection::Exec(
    const api::Pod& pod, const apiserver::ExecOptions& opts) {
  auto s = agent_.pod_runtime().Exec(pod.metadata.uid, opts.container, opts.command, opts.stdin,
                                     opts.tty);
  if (!s.ok() && s.status().code() == StatusCode::kUnimplemented) {
    return apiserver::BadRequest("unable to upgrade connection: " + s.status().message());
  }
  if (!s.ok() && s.status().code() == StatusCode::kFailedPrecondition) {
    return apiserver::BadRequest("unable to upgrade connection: container not found (\"" +
                                 opts.container + "\")");
  }
  if (!s.ok()) return apiserver::Internal(s.status().message());
  return *std::move(s);
}

apiserver::ApiOr<std::unique_ptr<apiserver::LogStream>> LocalNodeConnection::Logs(
    const api::Pod& pod, const apiserver::PodLogOptions& opts) {
  node::runtime::PodRuntime& runtime = agent_.pod_runtime();
  const std::string uid = pod.metadata.uid;
  auto files = runtime.Logs(uid, opts.container);
  if (!files.ok()) return NotStarted(pod, opts.container, files.status().message());
  std::string path = files->current;
  if (opts.previous) {
    if (files->previous.empty()) {
      return apiserver::BadRequest("previous terminated container \"" + opts.container +
                                   "\" in pod \"" + pod.metadata.name + "\" not found");
    }
    path = files->previous;
  }
  std::function<bool()> still_written;
  if (opts.follow && !opts.previous) {
    still_written = [&runtime, uid, container = opts.container, path] {
      return runtime.StillWriting(uid, container, path);
    };
  }
  auto reader = node::runtime::LogReader::Open(path, opts.tail_lines,
                                               files->cri_format ? std::nullopt : opts.limit_bytes,
                                               std::move(still_written));
  if (!reader.ok()) return NotStarted(pod, opts.container, "");
  if (files->cri_format) {
    return std::unique_ptr<apiserver::LogStream>(
        new CriLogStream(*std::move(reader), opts.limit_bytes));
  }
  return std::unique_ptr<apiserver::LogStream>(new FileLogStream(*std::move(reader)));
}

std::optional<apiserver::ProxyResponse> AgentOwnPath(const std::string& path) {
  if (path == "/metrics")
    return apiserver::ProxyResponse{200, std::string(metrics::kContentType), metrics::Expose()};
  if (path == "/healthz") return apiserver::ProxyResponse{200, "text/plain; charset=utf-8", "ok"};
  return std::nullopt;
}

apiserver::ApiOr<apiserver::ProxyResponse> LocalNodeConnection::Get(const std::string& path) {
  if (auto own = AgentOwnPath(path)) return *std::move(own);
  return apiserver::ApiError{404, "NotFound", "the node agent serves no " + path};
}

}  // namespace kvol::cmd
