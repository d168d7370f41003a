// The mechanics beneath the pod runtime's decisions: how one run of a container is started,
// watched, stopped, found again after the agent restarted, and where it logs. The pod runtime
// decides what runs when (init containers first, restart policies, crash-loop back-off, the
// pod's status); a backend only carries it out. Two exist:
//   - the built-in one (process_backend.h) runs the node's own binaries as process trees;
//   - the CRI one (cri/cri_backend.h) asks a container runtime such as containerd, and pulls
//     the images.
// Every method is called from the pod runtime's one thread, except where it says otherwise.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/core.h"
#include "base/status.h"
#include "node/runtime/container.h"
#include "node/runtime/exec.h"
#include "os/machine.h"

namespace kvol::node::runtime {

// An event on the pod, as the runtime records it.
using PodEventFn =
    std::function<void(std::string_view type, std::string_view reason, std::string message)>;

// Which pod.
struct PodName {
  std::string ns, name, uid;
};

// One run of a container, as the pod runtime decided it.
struct Launch {
  const api::Pod& pod;
  const api::Container& spec;
  std::string bundle;             // the container's directory under the runtime's root
  int run = 0;                    // the runs before this one: restartCount
  std::vector<std::string> env;   // "NAME=value", resolved (config.h)
  std::vector<BindMount> mounts;  // the volumes, resolved (config.h)
  PodEventFn event;
};

// A run that did not start: the container waits with `reason` and `message`, a Warning event
// says why, and the runtime tries again after `retry` (or sooner, when the pod changes).
struct StartFailure {
  std::string reason;   // CreateContainerConfigError, ErrImagePull, RunContainerError, ...
  std::string message;  // the waiting state's message
  std::string event_reason = "Failed";
  std::string event_message;  // "Error: ..."
  std::chrono::milliseconds retry{10'000};
  // Not a failure: the start is under way (an image being pulled). The container waits as it
  // was, with no event, and the runtime asks again after `retry`.
  bool pending = false;
};

struct StartResult {
  std::string id;        // the run's containerID, as the pod's status shows it; set when it started
  std::string image_id;  // the image it runs, as the pod's status shows it (imageID)
  std::optional<StartFailure> failure;
};

// What is known of a run found again after the agent restarted.
struct FoundRun {
  std::string id;  // its containerID (learned here when the agent died before it did)
  // How it ended, when it did; nullopt while it runs.
  std::optional<api::ContainerStateTerminated> ended;
  // Nothing of it exists: the agent died after recording the run and before the backend
  // started anything. It is started again as the same run, with no restart counted (as kubelet
  // starts a container that never ran, whatever the restart policy).
  bool never_started = false;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // The runtime's name and version for the node's status: "containerd://1.6.20".
  virtual std::string RuntimeVersion() = 0;

  // The filesystem the runtime keeps its images on, with its size and what is free on it;
  // nullopt when the runtime keeps no images (kvol's own). Any thread.
  virtual StatusOr<std::optional<os::FilesystemStats>> ImageFs() {
    return std::optional<os::FilesystemStats>();
  }

  // Starts one run. Blocks while it prepares (an image pull, a sandbox).
  virtual StartResult Start(const Launch& launch) = 0;

  // Called once before a sync asks Exited for the runs it knows.
  virtual void Refresh() {}
  // How run `id` ended, once it has: the exit code, reason and message, and when it finished
  // (unset fields are filled by the caller); nullopt while it runs.
  virtual std::optional<api::ContainerStateTerminated> Exited(const std::string& id) = 0;

  // Asks a run to stop (SIGTERM, or the runtime's StopContainer with `grace`). Never blocks.
  virtual void Terminate(const std::string& id, std::chrono::seconds grace) = 0;
  // The grace period is over: the run ends now.
  virtual void Kill(const std::string& id) = 0;
  // An ended run no status shows any more (older than the last one before the current): its
  // remains go.
  virtual void Discard(const std::string& id) { static_cast<void>(id); }
  // The pod has nothing running and is gone: whatever the backend keeps of it goes (its
  // sandbox, its containers, its log directory).
  virtual void RemovePod(const std::string& uid) = 0;

  // Waiting for ends: a descriptor that becomes readable when run `id` ends (-1 for none), and
  // how often to look when the backend cannot wake the runtime (nullopt: no need).
  virtual int WaitFd(const std::string& id) const {
    static_cast<void>(id);
    return -1;
  }
  virtual std::optional<std::chrono::milliseconds> PollPeriod() const { return std::nullopt; }

  // Finding runs again at start: BeginAdopt once, Adopt per run the runtime's records name
  // (`id` may be "" when the agent died before it learned it), then EndAdopt with every id the
  // records claim: whatever else the backend finds of its own is ended and removed.
  virtual void BeginAdopt() = 0;
  virtual FoundRun Adopt(const std::string& uid, const std::string& container,
                         const std::string& bundle, int run, const std::string& id) = 0;
  virtual void EndAdopt(const std::set<std::string>& claimed) = 0;

  // The log file of a run, and whether it is in the CRI log format (rather than the bytes as
  // written).
  virtual std::string LogPath(const PodName& pod, const std::string& container,
                              const std::string& bundle, int run) const = 0;
  virtual bool CriLogFormat() const { return false; }

  // The pod's own address when it has one (its sandbox's network); "" for the node's.
  virtual std::string PodIp(const std::string& uid) const {
    static_cast<void>(uid);
    return "";
  }

  // Starts `argv` in running run `id` for `kubectl exec`. Thread-safe.
  virtual StatusOr<std::unique_ptr<ExecStream>> Exec(const std::string& id,
                                                     const std::string& bundle,
                                                     const std::vector<std::string>& argv,
                                                     bool stdin, bool tty) = 0;
};

}  // namespace kvol::node::runtime
