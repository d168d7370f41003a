// The pod runtime: runs the containers of the pods bound to this node once their volumes are
// ready, keeps them running as their restartPolicy says, reports them in the pod's status, and
// stops them when the pod is deleted. What it decides is carried out by a backend (backend.h):
// the node's own binaries as process trees, or a CRI runtime such as containerd.
//
// One thread. It wakes on a kick (a pod changed), when a run ends (the backend's descriptor,
// or its poll period) and at the next deadline (a crash-loop back-off or a grace period
// ending); with nothing changing it does no work. For each pod:
//   - nothing starts before the volume manager has written condition kvol.io/VolumesReady;
//   - init containers run one after the other to success, then every app container starts;
//   - a container that exits is started again under Always (and OnFailure, if it failed): the
//     first time at once, then after 10 s, 20 s, ... up to 5 min (waiting, CrashLoopBackOff);
//   - the status is kubelet's: phase, conditions PodScheduled, Initialized, ContainersReady and
//     Ready, container statuses (running / waiting / terminated with exit code and reason,
//     lastState, restartCount, image, imageID), hostIP, podIP;
//   - a pod being deleted has each container asked to stop (SIGTERM), and ended when its grace
//     period is over; once no container is left the volume manager tears the volumes down
//     (ContainersAlive turns false), and once they are gone the runtime deletes the pod object
//     for good (grace period 0, UID precondition).
// Containers outlive the agent: every container keeps a small state file, written before each
// run starts, and on Start the runtime adopts the runs a previous agent left running (or
// learns from the backend how they ended).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/core.h"
#include "client/client.h"
#include "client/event_recorder.h"
#include "node/runtime/backend.h"
#include "node/runtime/config.h"
#include "node/runtime/prober.h"
#include "os/clock.h"
#include "volume/plugin.h"

namespace kvol::node::runtime {

struct PodRuntimeOptions {
  // Each container's state lives in <root>/containers/<pod uid>/<name>/ (beside the volume
  // manager's <root>/pods/<uid>/, which goes when the volumes do), with whatever the backend
  // keeps there.
  std::string root_dir;
  std::string host_ip;  // the node's address: status.hostIP, and status.podIP in its network
  // Crash-loop back-off, as kubelet's: the first restart at once, then this doubling up to
  // the maximum; reset once a run lasts longer than twice the maximum.
  std::chrono::milliseconds backoff_initial{10'000};
  std::chrono::milliseconds backoff_max{300'000};
};

struct PodRuntimeSources {
  // The pods bound to this node.
  std::function<std::vector<std::shared_ptr<const api::Pod>>()> pods;
  // Where each of a pod's volumes is set up, by volume name.
  std::function<std::map<std::string, MountedVolume>(const std::string& uid)> volumes;
  // True when nothing of the pod's volumes is left on the node.
  std::function<bool(const std::string& uid)> volumes_torn_down;
  // Called when a pod's last container has stopped (the volume manager may tear down).
  std::function<void()> containers_stopped;
};

// A container's log files, as `kubectl logs` reads them.
struct LogFiles {
  std::string current;      // the running (or last) run's
  std::string previous;     // the run before it, "" if there was none
  bool running = false;     // the current run is still going (a follower keeps reading)
  bool cri_format = false;  // lines in the CRI log format (cri/cri_log.h), not bytes as written
};

class PodRuntime {
 public:
  // `backend` runs the containers; null for a node that only sets volumes up.
  PodRuntime(client::Client& client, volume::Host& host, std::unique_ptr<Backend> backend,
             PodRuntimeSources sources, client::EventSink events, const os::Clock& clock,
             PodRuntimeOptions options);
  ~PodRuntime();
  PodRuntime(const PodRuntime&) = delete;
  PodRuntime& operator=(const PodRuntime&) = delete;

  // Adopts the containers a previous agent left, then starts the loop. Call once the sources are
  // synced.
  Status Start();
  // Stops the loop; the containers keep running (a later Start adopts them).
  void Stop();
  // Something changed: sync soon. Thread-safe, never blocks.
  void Kick();

  // Whether any container of the pod may still be running (its volumes must stay). Thread-safe.
  bool ContainersAlive(const std::string& uid) const;

  // The log files of a pod's container; NotFound (in kubectl's words) when there is no such
  // pod or container, or it has not started yet. `container` "" for the only one. Thread-safe.
  StatusOr<LogFiles> Logs(const std::string& uid, const std::string& container) const;
  // Whether the container is still writing that log file (its current run goes on).
  bool StillWriting(const std::string& uid, const std::string& container,
                    const std::string& log_path) const;
  // Starts `argv` in a running container for `kubectl exec`. FailedPrecondition ("container
  // not found") when the container does not run; the backend's error when it cannot start
  // it. Thread-safe.
  StatusOr<std::unique_ptr<ExecStream>> Exec(const std::string& uid, const std::string& container,
                                             const std::vector<std::string>& argv, bool stdin,
                                             bool tty);

 private:
  struct Run;
  struct ContainerRecord;
  struct PodRecord;

  void Loop();
  void SyncAll();
  void SyncPod(PodRecord& rec, const std::shared_ptr<const api::Pod>& pod);
  void SyncContainers(PodRecord& rec, const api::Pod& pod);
  void StopContainers(PodRecord& rec, const api::Pod* pod);
  bool StartContainer(PodRecord& rec, ContainerRecord& c, const api::Pod& pod,
                      const api::Container& spec);
  void Reap(ContainerRecord& c, api::ContainerStateTerminated ended);
  void CheckExits();
  void WriteStatus(PodRecord& rec, const api::Pod& pod);
  // A container's status as kubelet reports it, under the pod's restart policy and with what
  // its probes say.
  api::ContainerStatus StatusOf(const ContainerRecord& c, const PodRecord& rec, const api::Pod& pod,
                                std::string_view policy) const;
  // What the prober asked for since the last pass: events, and runs to kill.
  void HandleProbeNotices(const std::map<std::string, std::shared_ptr<const api::Pod>>& by_uid);
  void Adopt();
  void SaveState(const ContainerRecord& c) const;
  // Removes <root>/containers/<uid> unless something is mounted below it.
  void RemoveContainersDir(const std::string& uid);
  void Event(const api::Pod& pod, std::string_view type, std::string_view reason,
             std::string message);
  std::string BundleDir(const std::string& uid, const std::string& name) const;
  std::string LogPath(const PodRecord& rec, const ContainerRecord& c, int run) const;

  client::Client& client_;
  volume::Host& host_;
  const std::unique_ptr<Backend> backend_;
  const PodRuntimeSources sources_;
  const client::EventSink events_;
  const os::Clock& clock_;
  const PodRuntimeOptions options_;

  mutable std::mutex mu_;  // guards pods_ (the loop holds it while it syncs) and stopping_
  bool stopping_ = false;
  std::map<std::string, std::unique_ptr<PodRecord>> pods_;  // by uid
  // The pods with a container that may be running. Its own lock: the volume manager asks
  // while holding its own, and the loop asks the volume manager while holding mu_.
  mutable std::mutex alive_mu_;
  std::set<std::string> alive_;
  int wake_fd_ = -1;  // an eventfd: a kick wakes the poll
  std::thread thread_;
  // The containers' startup, liveness and readiness probes; what it reports waits in
  // probe_notices_ (under mu_) for the loop.
  struct ProbeNotice {
    ProbeTarget target;
    std::string type, reason, message;
    bool kill = false;
  };
  std::vector<ProbeNotice> probe_notices_;
  std::unique_ptr<Prober> prober_;
};

}  // namespace kvol::node::runtime
