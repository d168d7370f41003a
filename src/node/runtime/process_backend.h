// The built-in backend: each run is a process tree started through `kvol container-init`
// (container.h), running the node's own binaries; images are not pulled. A run's bundle keeps
// its spec, its writable layer, its logs (<bundle>/<run>.log, the bytes as written) and the pid
// and exit files its init writes, so that an agent that restarted finds it again by its
// bundle. Ends are seen on a pidfd per run.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "node/runtime/backend.h"
#include "volume/plugin.h"

namespace kvol::node::runtime {

struct ProcessBackendOptions {
  std::string containers_dir;  // the runtime's <root>/containers, where the bundles are
  std::string init_binary;     // the kvol binary, run as `kvol container-init`
  std::string version;         // kvol's, for the node's containerRuntimeVersion
  // Node paths covered in every container's root (rootfs.h): kvol's state, the node's secrets.
  std::vector<std::string> hidden_paths;
};

class ProcessBackend : public Backend {
 public:
  explicit ProcessBackend(ProcessBackendOptions options) : options_(std::move(options)) {}
  ~ProcessBackend() override;

  std::string RuntimeVersion() override { return "kvol://" + options_.version; }
  StartResult Start(const Launch& launch) override;
  std::optional<api::ContainerStateTerminated> Exited(const std::string& id) override;
  void Terminate(const std::string& id, std::chrono::seconds grace) override;
  void Kill(const std::string& id) override;
  void Discard(const std::string& id) override;
  void RemovePod(const std::string& uid) override { static_cast<void>(uid); }
  int WaitFd(const std::string& id) const override;
  void BeginAdopt() override;
  FoundRun Adopt(const std::string& uid, const std::string& container, const std::string& bundle,
                 int run, const std::string& id) override;
  void EndAdopt(const std::set<std::string>& claimed) override;
  std::string LogPath(const PodName& pod, const std::string& container, const std::string& bundle,
                      int run) const override;
  StatusOr<std::unique_ptr<ExecStream>> Exec(const std::string& id, const std::string& bundle,
                                             const std::vector<std::string>& argv, bool stdin,
                                             bool tty) override;

 private:
  struct Proc {
    std::string bundle;
    pid_t init_pid = 0;
    int pidfd = -1;
    bool ours = true;  // our child, reaped with waitpid (an adopted one is not)
  };

  const ProcessBackendOptions options_;
  std::map<std::string, Proc> procs_;  // by run id
  // While adopting: the inits running, by the spec file they were started with.
  std::map<std::string, pid_t> inits_;
};

}  // namespace kvol::node::runtime
