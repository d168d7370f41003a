// Node pressure from kubelet's eviction signals.
#include "node/pressure.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "api/quantity.h"

namespace kvol::node {
namespace {

struct SignalInfo {
  Signal signal;
  std::string_view name;
  bool bytes;  // a quantity of bytes, else a count
};

constexpr std::array<SignalInfo, 6> kSignals = {{
    {Signal::kMemoryAvailable, "memory.available", true},
    {Signal::kNodeFsAvailable, "nodefs.available", true},
    {Signal::kNodeFsInodesFree, "nodefs.inodesFree", false},
    {Signal::kImageFsAvailable, "imagefs.available", true},
    {Signal::kImageFsInodesFree, "imagefs.inodesFree", false},
    {Signal::kPidAvailable, "pid.available", false},
}};

// One node condition and the signals that set it, with kubelet's words either way.
struct ConditionInfo {
  std::string_view type;
  std::vector<Signal> signals;
  std::string_view reason_true, message_true, reason_false, message_false;
};

const std::vector<ConditionInfo>& ConditionInfos() {
  static const std::vector<ConditionInfo> infos = {
      {"MemoryPressure",
       {Signal::kMemoryAvailable},
       "KubeletHasInsufficientMemory",
       "kubelet has insufficient memory available",
       "KubeletHasSufficientMemory",
       "kubelet has sufficient memory available"},
      {"DiskPressure",
       {Signal::kNodeFsAvailable, Signal::kNodeFsInodesFree, Signal::kImageFsAvailable,
        Signal::kImageFsInodesFree},
       "KubeletHasDiskPressure",
       "kubelet has disk pressure",
       "KubeletHasNoDiskPressure",
       "kubelet has no disk pressure"},
      {"PIDPressure",
       {Signal::kPidAvailable},
       "KubeletHasInsufficientPID",
       "kubelet has insufficient PID available",
       "KubeletHasSufficientPID",
       "kubelet has sufficient PID available"},
  };
  return infos;
}

Status Invalid(std::string_view statement, std::string_view why) {
  return InvalidArgumentError("--eviction-hard: \"" + std::string(statement) +
                              "\": " + std::string(why));
}

StatusOr<Threshold> ParseStatement(std::string_view statement) {
  const size_t lt = statement.find('<');
  if (lt == std::string_view::npos) return Invalid(statement, "want SIGNAL<VALUE");
  const std::string_view name = statement.substr(0, lt);
  const std::string_view value = statement.substr(lt + 1);
  auto info = std::find_if(kSignals.begin(), kSignals.end(),
                           [&](const SignalInfo& s) { return s.name == name; });
  if (info == kSignals.end()) return Invalid(statement, "unsupported eviction signal");
  Threshold t{.signal = info->signal};
  if (value.empty()) return Invalid(statement, "no value");
  if (value.back() == '%') {
    const std::string digits(value.substr(0, value.size() - 1));
    char* end = nullptr;
    const double p = std::strtod(digits.c_str(), &end);
    if (digits.empty() || end != digits.c_str() + digits.size() || !std::isfinite(p)) {
      return Invalid(statement, "invalid percentage");
    }
    if (p < 0 || p > 100) return Invalid(statement, "percentage must be between 0% and 100%");
    t.percentage = p;
    return t;
  }
  auto q = api::Quantity::Parse(value);
  if (!q.ok()) return Invalid(statement, "invalid quantity");
  if (q->Value() < 0) return Invalid(statement, "must not be negative");
  t.value = q->Value();
  return t;
}

template <class T>
std::optional<T> Reading(const std::function<StatusOr<T>()>& source) {
  if (!source) return std::nullopt;
  auto got = source();
  if (!got.ok()) return std::nullopt;
  return *std::move(got);
}

void AddFilesystem(Observations& seen, Signal available, Signal inodes_free,
                   const os::FilesystemStats& fs) {
  seen[available] = {fs.available_bytes, fs.capacity_bytes};
  seen[inodes_free] = {fs.inodes_free, fs.inodes};
}

}  // namespace

std::string_view SignalName(Signal s) {
  for (const auto& info : kSignals)
    if (info.signal == s) return info.name;
  return "unknown";
}

StatusOr<std::vector<Threshold>> ParseEvictionHard(std::string_view flag) {
  std::vector<Threshold> out;
  std::set<Signal> seen;
  while (!flag.empty()) {
    const size_t comma = flag.find(',');
    std::string_view statement = flag.substr(0, comma);
    flag = comma == std::string_view::npos ? std::string_view() : flag.substr(comma + 1);
    while (!statement.empty() && statement.front() == ' ') statement.remove_prefix(1);
    while (!statement.empty() && statement.back() == ' ') statement.remove_suffix(1);
    if (statement.empty()) continue;
    auto t = ParseStatement(statement);
    if (!t.ok()) return t.status();
    if (!seen.insert(t->signal).second) {
      return Invalid(statement, "a second threshold for " + std::string(SignalName(t->signal)));
    }
    out.push_back(*t);
  }
  return out;
}

std::vector<Threshold> DefaultEvictionHard() { return *ParseEvictionHard(kDefaultEvictionHard); }

std::vector<Signal> Crossed(const std::vector<Threshold>& thresholds, const Observations& seen) {
  std::vector<Signal> out;
  for (const auto& t : thresholds) {
    auto it = seen.find(t.signal);
    if (it == seen.end()) continue;
    const Observation& o = it->second;
    const double limit = t.value ? static_cast<double>(*t.value)
                                 : static_cast<double>(o.capacity) * t.percentage / 100.0;
    if (static_cast<double>(o.available) < limit) out.push_back(t.signal);
  }
  return out;
}

PressureSources MachineSources(const std::string& root_dir) {
  PressureSources s;
  s.memory = [] { return os::ReadMemoryStats(); };
  s.nodefs = [root_dir] { return os::StatFilesystem(root_dir); };
  s.pids = [] { return os::ReadProcessStats(); };
  return s;
}

Observations Observe(const PressureSources& sources) {
  Observations seen;
  if (auto m = Reading(sources.memory)) {
    seen[Signal::kMemoryAvailable] = {m->available_bytes, m->total_bytes};
  }
  if (auto fs = Reading(sources.nodefs)) {
    AddFilesystem(seen, Signal::kNodeFsAvailable, Signal::kNodeFsInodesFree, *fs);
  }
  if (auto fs = Reading(sources.imagefs); fs && *fs) {
    AddFilesystem(seen, Signal::kImageFsAvailable, Signal::kImageFsInodesFree, **fs);
  }
  if (auto p = Reading(sources.pids)) {
    seen[Signal::kPidAvailable] = {p->max_pids - p->in_use, p->max_pids};
  }
  return seen;
}

PressureMonitor::PressureMonitor(std::vector<Threshold> thresholds,
                                 std::chrono::milliseconds transition_period,
                                 PressureSources sources, const os::Clock& clock)
    : thresholds_(std::move(thresholds)),
      transition_period_(transition_period),
      sources_(std::move(sources)),
      clock_(clock) {}

std::vector<api::NodeCondition> PressureMonitor::Conditions() {
  const std::vector<Signal> crossed = Crossed(thresholds_, Observe(sources_));
  const os::MonoTime now = clock_.Monotonic();
  std::vector<api::NodeCondition> out;
  for (const auto& info : ConditionInfos()) {
    const bool now_crossed = std::any_of(info.signals.begin(), info.signals.end(), [&](Signal s) {
      return std::find(crossed.begin(), crossed.end(), s) != crossed.end();
    });
    const std::string type(info.type);
    if (now_crossed) last_crossed_[type] = now;
    auto last = last_crossed_.find(type);
    const bool pressure =
        now_crossed || (last != last_crossed_.end() && now - last->second < transition_period_);
    api::NodeCondition c;
    c.type = type;
    c.status = pressure ? "True" : "False";
    c.reason = pressure ? info.reason_true : info.reason_false;
    c.message = pressure ? info.message_true : info.message_false;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace kvol::node
