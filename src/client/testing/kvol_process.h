// For integration tests and benchmarks: the real `kvol` binary run as a child process (a server
// on a free loopback port, or a controller-manager pointed at one), with an HTTPS client made
// from the kubeconfig the server writes. The process is killed when the object goes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "client/http.h"

namespace kvol::client::testing {

class KvolProcess {
 public:
  // Runs `binary` with `args`, output to `log_path`; for a server, waits until the log says
  // "kvol is ready" (`ready_line`), or fails with the log's tail after `timeout`.
  static StatusOr<std::unique_ptr<KvolProcess>> Start(
      std::string binary, std::vector<std::string> args, std::string log_path,
      std::string ready_line, std::chrono::milliseconds timeout = std::chrono::seconds(60));
  ~KvolProcess();

  // SIGKILL, then reaps the process: nothing it did not finish writing survives in memory.
  void Kill9();
  // SIGTERM and waits for it to exit; its exit status.
  int Stop();
  bool Running();
  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }

 private:
  KvolProcess() = default;
  pid_t pid_ = -1;
  std::string log_path_;
};

// An HTTPS client from `kubeconfig` (the server's current address and token).
StatusOr<std::unique_ptr<HttpClient>> ClientFromKubeconfig(const std::string& kubeconfig);

// A new empty directory in the system's temporary directory, named after `prefix`.
StatusOr<std::string> MakeTempDir(const std::string& prefix);

}  // namespace kvol::client::testing
