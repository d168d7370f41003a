// Container probes, as kubelet's prober runs them: for each running container, its startup,
// liveness and readiness probes, each first after initialDelaySeconds from the container's
// start and then every periodSeconds, each run limited to timeoutSeconds. A probe's result
// turns after failureThreshold failures or successThreshold successes in a row. Until the
// startup probe has succeeded the others do not run; readiness starts out failed, liveness and
// startup succeeded and unknown. A liveness or startup probe that fails for good asks the pod
// runtime to kill the container (it is started again as its restart policy says). Each failed
// run raises an Unhealthy event ("Liveness probe failed: <output>").
//
// The probes run on the prober's own threads, so that a slow one never holds up the pod
// runtime's loop, nor (up to the number of threads) the other probes; a probe never overlaps
// its own previous run, as kubelet's worker per probe does not. Exec probes run through the runtime's Exec (exec.h), tcpSocket probes
// connect from the node, httpGet probes are answered by a GET from the node (200-399 passes).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/core.h"
#include "node/runtime/exec.h"
#include "os/clock.h"

namespace kvol::node::runtime {

enum class ProbeKind { kStartup, kLiveness, kReadiness };
std::string_view ProbeKindName(ProbeKind kind);  // "Startup", "Liveness", "Readiness"

struct ProbeResult {
  bool success = false;
  std::string output;  // what to say on failure: the command's output, or why it failed
  // The run could not be probed (the container is not up yet, or has just gone): neither a
  // success nor a failure.
  bool unknown = false;
};

// The handlers kubelet has: exec (a process in the container), tcpSocket and httpGet from the
// node to the pod's address (or the probe's host).
ProbeResult RunExecProbe(ExecStream& stream, std::chrono::milliseconds timeout);
ProbeResult RunTcpProbe(const std::string& host, int port, std::chrono::milliseconds timeout);
ProbeResult RunHttpProbe(const api::HTTPGetAction& get, const std::string& host, int port,
                         std::chrono::milliseconds timeout);

// Which container run a probe is about.
struct ProbeTarget {
  std::string uid;        // the pod's
  std::string container;  // its name
  std::string run_id;     // the run's container id: a new run starts its probes afresh
  bool operator<(const ProbeTarget& o) const {
    return std::tie(uid, container, run_id) < std::tie(o.uid, o.container, o.run_id);
  }
};

// Where a tcpSocket or httpGet probe connects: the probe's host, else the pod's address; its
// port by number, or by the name of one of the container's ports (0 when there is none).
struct ProbeAddress {
  std::string host;
  int port = 0;
};
ProbeAddress ProbeAddressOf(const api::Probe& probe, const api::Container& spec,
                            const std::string& pod_ip);

struct ProberCallbacks {
  // Runs the probe's handler once, waiting at most the timeout (the pod runtime's: exec in the
  // container, tcpSocket and httpGet from the node).
  std::function<ProbeResult(const ProbeTarget&, const api::Probe&, const ProbeAddress&,
                            std::chrono::milliseconds)>
      run;
  // A liveness or startup probe failed for good: kill the run.
  std::function<void(const ProbeTarget&, ProbeKind, const std::string& message)> unhealthy;
  // A probe run failed (the Unhealthy event), or a result changed (the status is due).
  std::function<void(const ProbeTarget&, ProbeKind, const std::string& output)> failed;
  std::function<void()> changed;
};

class Prober {
 public:
  // `threads`: probes run at once.
  Prober(const os::Clock& clock, ProberCallbacks callbacks, int threads = 4);
  ~Prober();
  Prober(const Prober&) = delete;
  Prober& operator=(const Prober&) = delete;

  void Start();
  void Stop();

  // The run started at `started` has `spec`'s probes; tcpSocket and httpGet ones go to
  // `pod_ip`. Calling it again for a run already watched changes nothing.
  void Watch(const ProbeTarget& target, const api::Container& spec, os::MonoTime started,
             const std::string& pod_ip);
  // The runs of pod `uid`'s container `container` other than `keep_run` ("" for none) are
  // watched no more.
  void Forget(const std::string& uid, const std::string& container, const std::string& keep_run);

  // What the probes say of a run: started (startup probe passed, or none), ready (readiness
  // probe passed, or none; and started).
  struct Status {
    bool started = true;
    bool ready = true;
  };
  Status StatusOf(const ProbeTarget& target) const;

  // Runs what is due now, on the caller's thread; the time of the next due probe. For tests
  // and the prober's own thread.
  std::optional<os::MonoTime> RunDue();

 private:
  struct ProbeState {
    ProbeKind kind;
    api::Probe probe;
    ProbeAddress address;
    os::MonoTime next{};
    int successes = 0, failures = 0;
    std::optional<bool> result;  // nullopt: not known yet
    bool gave_up = false;        // failed for good; the run is being killed
    bool running = false;        // a thread is running it now
  };
  struct Watched {
    std::vector<ProbeState> probes;
  };

  void Loop();

  const os::Clock& clock_;
  const ProberCallbacks callbacks_;
  const int threads_count_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  uint64_t generation_ = 0;  // counts Watch calls: the loop does not sleep through one
  std::map<ProbeTarget, Watched> watched_;
  std::vector<std::thread> threads_;
};

}  // namespace kvol::node::runtime
