#include "cmd/controllers.h"

#include <signal.h>
#include <unistd.h>

#include "base/log.h"

namespace kvol::cmd {
namespace {

sigset_t StopSignals() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  return s;
}

}  // namespace

std::string Hostname() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) == 0 && name[0]) return name;
  return "kvol";
}

StatusOr<Provisioners> MakeProvisioners(const ProvisionerOptions& opts, const std::string& default_dir) {
  Provisioners p;
  p.node_name = opts.node_name.empty() ? Hostname() : opts.node_name;
  p.local_path = std::make_unique<volume::LocalPathProvisioner>(volume::LocalPathOptions{
      opts.local_path_root.empty() ? default_dir + "/storage" : opts.local_path_root, p.node_name});
  volume::SubdirOptions so;
  so.share = opts.shared_dir.empty() ? default_dir + "/shared" : opts.shared_dir;
  if (!opts.shared_nfs.empty()) {
    size_t colon = opts.shared_nfs.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == opts.shared_nfs.size()) {
      return InvalidArgumentError("--shared-nfs must be SERVER:PATH, got \"" + opts.shared_nfs + "\"");
    }
    so.nfs_server = opts.shared_nfs.substr(0, colon);
    so.nfs_path = opts.shared_nfs.substr(colon + 1);
  }
  p.shared_dir = so.share;
  p.subdir = std::make_unique<volume::SubdirProvisioner>(so);
  return p;
}

void BlockSignals() {
  sigset_t s = StopSignals();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

void WaitForSignal() {
  sigset_t s = StopSignals();
  int sig = 0;
  sigwait(&s, &sig);
  log::Info(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ", shutting down");
}

}  // namespace kvol::cmd
