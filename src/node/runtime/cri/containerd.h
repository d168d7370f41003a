// A containerd of kvol's own: `kvol server --container-runtime containerd` runs one for its node
// (and tests run one each), with its root, state, socket and CNI configuration under one
// directory, so that it shares nothing with a containerd the machine may already run.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>

#include "base/status.h"

namespace kvol::node::cri {

struct ContainerdOptions {
  std::string dir;                           // root/, state/, cni/ and containerd.sock go here
  std::string binary = "containerd";         // looked up in PATH without a slash
  std::string sandbox_image;                 // the pause image; containerd's own default if empty
  std::string cni_bin_dir = "/usr/lib/cni";  // Debian's containernetworking-plugins
  std::string log_file;                      // containerd's output; <dir>/containerd.log if empty
};

class Containerd {
 public:
  // Writes <dir>/config.toml, stops a containerd an earlier process left running on the same
  // directory (<dir>/containerd.pid), starts containerd, and waits until it answers CRI's
  // Version on its socket; DeadlineExceeded (with the log's last lines) if it has not within `timeout`.
  static StatusOr<std::unique_ptr<Containerd>> Start(const ContainerdOptions& options,
                                                     std::chrono::milliseconds timeout);
  // Stops containerd (Stop with a 10 s grace period) if still running.
  ~Containerd();

  // "unix://<dir>/containerd.sock", for --container-runtime-endpoint.
  std::string endpoint() const { return "unix://" + socket_; }
  const std::string& socket() const { return socket_; }
  pid_t pid() const { return pid_; }

  // SIGTERM, then SIGKILL after `grace`. The shims of running containers stay, as they do
  // when containerd is restarted; the next containerd on the same directory finds them.
  Status Stop(std::chrono::milliseconds grace);

  // The configuration for `options`, as written to config.toml.
  static std::string Config(const ContainerdOptions& options);

 private:
  Containerd() = default;
  std::string socket_;
  std::string log_file_;
  pid_t pid_ = -1;
};

}  // namespace kvol::node::cri
