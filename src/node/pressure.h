// Node pressure, as kubelet's eviction manager observes it: the eviction signals
// (memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree,
// pid.available) measured on this machine, compared with the hard thresholds of
// `--eviction-hard`, and the MemoryPressure, DiskPressure and PIDPressure conditions that
// follow on the Node. A condition stays True for `--eviction-pressure-transition-period` after
// its last crossing, so that it does not flap.
//
// The image filesystem is the one the container runtime reports in ImageFsInfo; kvol's own
// runtime has none, and then the imagefs signals are not observed. kvol reports pressure and the
// scheduler keeps new pods off the node; it does not evict running pods.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/core.h"
#include "base/status.h"
#include "os/clock.h"
#include "os/machine.h"

namespace kvol::node {

enum class Signal {
  kMemoryAvailable,
  kNodeFsAvailable,
  kNodeFsInodesFree,
  kImageFsAvailable,
  kImageFsInodesFree,
  kPidAvailable,
};

std::string_view SignalName(Signal s);  // "nodefs.available"

// "signal < value": the signal crosses the threshold when what is left falls below `value`
// bytes or counts, or below `percentage` of the capacity.
struct Threshold {
  Signal signal{};
  std::optional<int64_t> value;
  double percentage = 0;  // 0..100, when value is empty
};

// kubelet's defaults on Linux.
inline constexpr std::string_view kDefaultEvictionHard =
    "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%";

// kDefaultEvictionHard, parsed.
std::vector<Threshold> DefaultEvictionHard();

// Parses `--eviction-hard` ("nodefs.available<10%,memory.available<100Mi"); "" sets none.
// Errors name the statement at fault.
StatusOr<std::vector<Threshold>> ParseEvictionHard(std::string_view flag);

// What is left and what there is, for one signal.
struct Observation {
  int64_t available = 0;
  int64_t capacity = 0;
};
using Observations = std::map<Signal, Observation>;

// The signals whose threshold is crossed; a signal that was not observed crosses nothing.
std::vector<Signal> Crossed(const std::vector<Threshold>& thresholds, const Observations& seen);

// Where the observations come from. A source that is empty, or fails, observes nothing.
struct PressureSources {
  std::function<StatusOr<os::MemoryStats>()> memory;
  std::function<StatusOr<os::FilesystemStats>()> nodefs;
  // The image filesystem; nullopt when the runtime keeps no images.
  std::function<StatusOr<std::optional<os::FilesystemStats>>()> imagefs;
  std::function<StatusOr<os::ProcessStats>()> pids;
};

// Readings of this machine: /proc/meminfo, statvfs of `root_dir`, and the process table.
// `imagefs` is left for the caller (it comes from the container runtime).
PressureSources MachineSources(const std::string& root_dir);

Observations Observe(const PressureSources& sources);

class PressureMonitor {
 public:
  PressureMonitor(std::vector<Threshold> thresholds, std::chrono::milliseconds transition_period,
                  PressureSources sources, const os::Clock& clock);

  // Observes the machine and returns the MemoryPressure, DiskPressure and PIDPressure
  // conditions in that order, with type, status, reason and message (times are the caller's).
  std::vector<api::NodeCondition> Conditions();

 private:
  const std::vector<Threshold> thresholds_;
  const std::chrono::milliseconds transition_period_;
  const PressureSources sources_;
  const os::Clock& clock_;
  // When each condition last had a signal over its threshold.
  std::map<std::string, os::MonoTime> last_crossed_;
};

}  // namespace kvol::node
