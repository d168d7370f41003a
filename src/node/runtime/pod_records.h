// The pod runtime's own records of the pods and containers it runs: what its loop
// (pod_runtime.cc) keeps and its status writer (pod_runtime_status.cc) reports. Internal to
// the pod runtime.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "api/core.h"
#include "node/runtime/pod_runtime.h"

namespace kvol::node::runtime {

// One run of a container.
struct PodRuntime::Run {
  std::string id;  // containerID; "" until the backend has started it
  api::Time started_at;
  os::MonoTime started{};
};

struct PodRuntime::ContainerRecord {
  std::string name;
  std::string bundle;
  bool init = false;
  std::string image;
  std::string image_id;
  int runs = 0;  // runs started; restartCount is one less
  std::optional<Run> run;
  std::optional<api::ContainerStateTerminated> last, before_last;
  api::ContainerStateWaiting waiting{"ContainerCreating", ""};
  os::MonoTime next_start{};  // not started again before (back-off, or a failed start's retry)
  std::optional<os::MonoTime> kill_at;  // a probe failed for good: the run is killed then
  std::chrono::milliseconds backoff{0};
  std::chrono::milliseconds delay{0};  // of the current wait to start again
  bool backoff_reported = false;       // the BackOff event of the current wait was raised
};

struct PodRuntime::PodRecord {
  std::string uid, ns, name;
  std::vector<ContainerRecord> containers;  // init containers first, in spec order
  bool seen_spec = false;                   // records made for every container of the spec
  bool stopping = false;
  os::MonoTime kill_at{};
  bool killed = false;
  bool deleted = false;
  std::string written;  // the status last written, as JSON
  std::optional<os::MonoTime> retry_status_at;

  bool AnyRunning() const {
    return std::any_of(containers.begin(), containers.end(),
                       [](const auto& c) { return c.run.has_value(); });
  }
};

// How kubelet names a pod in its messages: name_namespace(uid).
inline std::string PodRef(const api::Pod& pod) {
  return pod.metadata.name + "_" + pod.metadata.namespace_ + "(" + pod.metadata.uid + ")";
}

}  // namespace kvol::node::runtime
