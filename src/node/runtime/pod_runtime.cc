// The pod runtime's loop: containers started, reaped, restarted, stopped, and reported.
#include "node/runtime/pod_runtime.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/api_error.h"
#include "api/codec.h"
#include "api/pod_status.h"
#include "api/well_known.h"
#include "base/log.h"
#include "base/thread.h"
#include "node/runtime/pod_records.h"
#include "volume/plugin.h"

namespace kvol::node::runtime {
namespace fs = std::filesystem;

namespace {

std::string ReadSmallFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool VolumesReady(const api::Pod& pod) {
  for (const auto& c : pod.status.conditions) {
    if (c.type == api::kPodVolumesReady) return c.status == "True";
  }
  return false;
}

}  // namespace

PodRuntime::PodRuntime(client::Client& client, volume::Host& host, std::unique_ptr<Backend> backend,
                       PodRuntimeSources sources, client::EventSink events, const os::Clock& clock,
                       PodRuntimeOptions options)
    : client_(client),
      host_(host),
      backend_(std::move(backend)),
      sources_(std::move(sources)),
      events_(std::move(events)),
      clock_(clock),
      options_(std::move(options)) {
  ProberCallbacks callbacks;
  callbacks.run = [this](const ProbeTarget& t, const api::Probe& probe, const ProbeAddress& a,
                         std::chrono::milliseconds timeout) -> ProbeResult {
    if (probe.exec) {
      auto stream = Exec(t.uid, t.container, probe.exec->command, false, false);
      if (!stream.ok()) {
        // Not running (yet, or any more): nothing to say of its health.
        const bool gone = stream.status().code() == StatusCode::kFailedPrecondition;
        return {.success = false, .output = stream.status().message(), .unknown = gone};
      }
      return RunExecProbe(**stream, timeout);
    }
    if (probe.tcp_socket) return RunTcpProbe(a.host, a.port, timeout);
    if (probe.http_get) return RunHttpProbe(*probe.http_get, a.host, a.port, timeout);
    return {.success = false, .output = "grpc probes are not supported by this node"};
  };
  auto notice = [this](ProbeNotice n) {
    {
      std::lock_guard lock(mu_);
      probe_notices_.push_back(std::move(n));
    }
    Kick();
  };
  callbacks.failed = [notice](const ProbeTarget& t, ProbeKind kind, const std::string& output) {
    notice(
        {t, "Warning", "Unhealthy", std::string(ProbeKindName(kind)) + " probe failed: " + output});
  };
  callbacks.unhealthy = [notice](const ProbeTarget& t, ProbeKind, const std::string& message) {
    notice({t, "Normal", "Killing", message, true});
  };
  callbacks.changed = [this] { Kick(); };
  prober_ = std::make_unique<Prober>(clock_, std::move(callbacks));
}

PodRuntime::~PodRuntime() { Stop(); }

std::string PodRuntime::BundleDir(const std::string& uid, const std::string& name) const {
  return options_.root_dir + "/containers/" + uid + "/" + name;
}

std::string PodRuntime::LogPath(const PodRecord& rec, const ContainerRecord& c, int run) const {
  return backend_->LogPath({rec.ns, rec.name, rec.uid}, c.name, c.bundle, run);
}

Status PodRuntime::Start() {
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return InternalError(std::string("eventfd: ") + std::strerror(errno));
  Adopt();
  if (backend_) prober_->Start();
  thread_ = std::thread([this] {
    SetThreadName("pod-runtime");
    Loop();
  });
  return OkStatus();
}

void PodRuntime::Stop() {
  prober_->Stop();
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  Kick();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  pods_.clear();
  if (wake_fd_ >= 0) close(wake_fd_);
  wake_fd_ = -1;
}

void PodRuntime::Kick() {
  if (wake_fd_ < 0) return;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
}

bool PodRuntime::ContainersAlive(const std::string& uid) const {
  std::lock_guard lock(alive_mu_);
  return alive_.count(uid) > 0;
}

// ---- finding containers a previous agent left -------------------------------------------------

void PodRuntime::RemoveContainersDir(const std::string& uid) {
  const std::string dir = (fs::path(options_.root_dir) / "containers" / uid).string();
  // Never recursively through a mount (a subPath bind left behind): that would remove what a
  // volume holds. The directory stays, and says so.
  if (auto table = host_.mounter().List(); table.ok()) {
    if (auto below = os::MountPointsBelow(*table, dir); !below.empty()) {
      log::Warn("pod runtime: not removing " + dir + ": " + below.back() + " is still mounted");
      return;
    }
  } else {
    log::Warn("pod runtime: not removing " + dir + ": " + table.status().message());
    return;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

void PodRuntime::SaveState(const ContainerRecord& c) const {
  api::Json j;
  j["init"] = c.init;
  j["image"] = c.image;
  j["imageID"] = c.image_id;
  j["runs"] = c.runs;
  j["backoffMs"] = c.backoff.count();
  if (c.run) {
    j["run"] = {{"id", c.run->id}, {"startedAt", c.run->started_at.ToString()}};
  }
  if (c.last) j["last"] = api::EncodeStruct(*c.last);
  if (c.before_last) j["beforeLast"] = api::EncodeStruct(*c.before_last);
  WriteBundleFile(c.bundle + "/state.json", j.dump());
}

void PodRuntime::Adopt() {
  if (!backend_) return;
  std::error_code ec;
  const fs::path containers = fs::path(options_.root_dir) / "containers";
  // Every run is recorded in its container's state before it starts, so what the backend
  // finds is matched against the records here: a record's run is adopted, or learned to have
  // ended; whatever of the backend's no record claims is ended, so that none outlives its pod.
  backend_->BeginAdopt();
  std::set<std::string> claimed;
  int adopted = 0, ended = 0, unstarted = 0;
  std::lock_guard lock(mu_);
  for (fs::directory_iterator p(containers, ec), end; !ec && p != end; p.increment(ec)) {
    const std::string uid = p->path().filename().string();
    std::error_code ec2;
    for (fs::directory_iterator d(p->path(), ec2); !ec2 && d != end; d.increment(ec2)) {
      auto j = api::ParseJson(ReadSmallFile(d->path() / "state.json"));
      if (!j.ok() || !j->is_object()) continue;
      auto& rec = pods_[uid];
      if (!rec) {
        rec = std::make_unique<PodRecord>();
        rec->uid = uid;
      }
      ContainerRecord c;
      c.name = d->path().filename().string();
      c.bundle = d->path().string();
      c.init = j->value("init", false);
      c.image = j->value("image", "");
      c.image_id = j->value("imageID", "");
      c.runs = j->value("runs", 0);
      c.backoff = std::chrono::milliseconds(j->value("backoffMs", int64_t{0}));
      api::FieldErrors errs;
      if (j->contains("last"))
        c.last = api::DecodeStruct<api::ContainerStateTerminated>((*j)["last"], &errs);
      if (j->contains("beforeLast")) {
        c.before_last = api::DecodeStruct<api::ContainerStateTerminated>((*j)["beforeLast"], &errs);
      }
      if (c.last) claimed.insert(c.last->container_id);
      if (c.before_last) claimed.insert(c.before_last->container_id);
      if (j->contains("run")) {
        const auto& r = (*j)["run"];
        Run run;
        run.started = clock_.Monotonic();
        if (auto t = api::Time::Parse(r.value("startedAt", "")); t.ok()) run.started_at = *t;
        FoundRun found = backend_->Adopt(uid, c.name, c.bundle, c.runs - 1, r.value("id", ""));
        if (found.never_started) {
          c.runs -= 1;  // the run is started again, as the same one
          SaveState(c);
          ++unstarted;
          rec->containers.push_back(std::move(c));
          continue;
        }
        run.id = found.id;
        claimed.insert(run.id);
        c.run = std::move(run);
        if (!found.ended) {
          ++adopted;
          SaveState(c);  // the id, if the agent died before it wrote it
        } else {
          Reap(c, *std::move(found.ended));
          ++ended;
        }
      }
      rec->containers.push_back(std::move(c));
    }
  }
  backend_->EndAdopt(claimed);
  {
    std::lock_guard alive_lock(alive_mu_);
    for (const auto& [uid, rec] : pods_) {
      if (rec->AnyRunning()) alive_.insert(uid);
    }
  }
  if (adopted + ended + unstarted > 0) {
    log::Info("pod runtime: found " + std::to_string(adopted) + " running container(s), " +
              std::to_string(ended) + " that ended while the agent was away, " +
              std::to_string(unstarted) + " that the last agent did not get to start");
  }
}

// ---- the loop ---------------------------------------------------------------------------------

void PodRuntime::Loop() {
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    uint64_t drained;
    while (read(wake_fd_, &drained, sizeof drained) > 0) {
    }
    SyncAll();

    // Sleep until a kick, a container's end, or the next deadline.
    std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}};
    os::MonoTime next = clock_.Monotonic() + std::chrono::seconds(60);
    {
      std::lock_guard lock(mu_);
      bool running = false;
      for (const auto& [uid, rec] : pods_) {
        if (rec->stopping && !rec->killed && rec->AnyRunning()) next = std::min(next, rec->kill_at);
        if (rec->retry_status_at) next = std::min(next, *rec->retry_status_at);
        for (const auto& c : rec->containers) {
          if (c.run) {
            running = true;
            if (int fd = backend_->WaitFd(c.run->id); fd >= 0) fds.push_back({fd, POLLIN, 0});
          }
          if (!c.run && c.next_start > clock_.Monotonic()) next = std::min(next, c.next_start);
          if (c.run && c.kill_at) next = std::min(next, *c.kill_at);
        }
      }
      const auto period = backend_ ? backend_->PollPeriod() : std::nullopt;
      if (running && period) next = std::min(next, clock_.Monotonic() + *period);
    }
    const auto wait =
        std::chrono::duration_cast<std::chrono::milliseconds>(next - clock_.Monotonic());
    const int timeout = static_cast<int>(std::clamp<int64_t>(wait.count() + 1, 0, 60'000));
    poll(fds.data(), fds.size(), timeout);
  }
}

void PodRuntime::CheckExits() {
  if (!backend_) return;
  const bool any =
      std::any_of(pods_.begin(), pods_.end(), [](const auto& p) { return p.second->AnyRunning(); });
  if (!any) return;  // nothing to look for: no listing of the runtime's containers
  backend_->Refresh();
  for (auto& [uid, rec] : pods_) {
    for (auto& c : rec->containers) {
      if (!c.run || c.run->id.empty()) continue;
      if (auto ended = backend_->Exited(c.run->id)) {
        Reap(c, *std::move(ended));
        prober_->Forget(uid, c.name, "");
      }
    }
  }
}

void PodRuntime::Reap(ContainerRecord& c, api::ContainerStateTerminated t) {
  if (!c.run) return;
  const os::MonoTime now = clock_.Monotonic();
  if (!t.started_at) t.started_at = c.run->started_at;
  if (!t.finished_at) {
    t.finished_at =
        api::Time::FromUnixSeconds(api::Time::FromTimePoint(clock_.Now()).unix_seconds());
  }
  t.container_id = c.run->id;
  // Only the last run and the one before it are shown (lastState, `logs --previous`).
  if (c.before_last && !c.before_last->container_id.empty()) {
    backend_->Discard(c.before_last->container_id);
  }
  c.before_last = std::move(c.last);
  c.last = std::move(t);
  // Crash-loop back-off: the first restart at once, later ones after a doubling delay; a run
  // long enough forgets the history.
  if (now - c.run->started > 2 * options_.backoff_max) c.backoff = std::chrono::milliseconds(0);
  c.next_start = now + c.backoff;
  c.waiting = {"CrashLoopBackOff", ""};
  c.backoff_reported = false;
  c.delay = c.backoff;
  c.backoff = c.backoff.count() == 0 ? options_.backoff_initial
                                     : std::min(2 * c.backoff, options_.backoff_max);
  c.run.reset();
  c.kill_at.reset();
  SaveState(c);
}

void PodRuntime::SyncAll() {
  std::vector<std::shared_ptr<const api::Pod>> pods = sources_.pods();
  std::map<std::string, std::shared_ptr<const api::Pod>> by_uid;
  for (auto& p : pods) by_uid[p->metadata.uid] = p;

  std::lock_guard lock(mu_);
  CheckExits();
  HandleProbeNotices(by_uid);
  // Pods this node runs: a record once their volumes are ready (or they are going away, which
  // the runtime finishes for every pod of the node).
  for (const auto& [uid, pod] : by_uid) {
    if (pods_.count(uid)) continue;
    const bool terminal = pod->status.phase == "Succeeded" || pod->status.phase == "Failed";
    if (!pod->metadata.deletion_timestamp && (terminal || !VolumesReady(*pod))) continue;
    auto rec = std::make_unique<PodRecord>();
    rec->uid = uid;
    pods_[uid] = std::move(rec);
  }
  for (auto it = pods_.begin(); it != pods_.end();) {
    PodRecord& rec = *it->second;
    auto pod = by_uid.find(it->first);
    SyncPod(rec, pod == by_uid.end() ? nullptr : pod->second);
    if (pod == by_uid.end() && !rec.AnyRunning()) {
      // Gone from the API and nothing left running: forget it, and its containers' files
      // (their logs included: kept until then, as kubelet keeps a finished pod's).
      if (backend_) backend_->RemovePod(rec.uid);
      for (const auto& c : rec.containers) prober_->Forget(rec.uid, c.name, "");
      RemoveContainersDir(rec.uid);
      it = pods_.erase(it);
      continue;
    }
    ++it;
  }
  std::set<std::string> alive;
  for (const auto& [uid, rec] : pods_) {
    if (rec->AnyRunning()) alive.insert(uid);
  }
  bool fewer = false;
  {
    std::lock_guard alive_lock(alive_mu_);
    fewer =
        std::any_of(alive_.begin(), alive_.end(), [&](const auto& u) { return !alive.count(u); });
    alive_ = std::move(alive);
  }
  if (fewer && sources_.containers_stopped) sources_.containers_stopped();
}

void PodRuntime::SyncPod(PodRecord& rec, const std::shared_ptr<const api::Pod>& pod) {
  if (!pod) {
    StopContainers(rec, nullptr);
    return;
  }
  rec.ns = pod->metadata.namespace_;
  rec.name = pod->metadata.name;
  if (pod->metadata.deletion_timestamp) {
    StopContainers(rec, pod.get());
    if (rec.AnyRunning()) return;
    WriteStatus(rec, *pod);
    if (rec.deleted || !sources_.volumes_torn_down(rec.uid)) return;
    // Everything of the pod's is gone from the node: the pod object may go too.
    api::DeleteOptions opts;
    opts.grace_period_seconds = 0;
    opts.precondition_uid = rec.uid;
    auto d = client_.resource<api::Pod>().Delete(rec.ns, rec.name, opts);
    if (d.ok() || api::IsNotFound(d.error()) || api::IsConflict(d.error())) {
      rec.deleted = true;
    } else {
      log::Warn("pod " + rec.ns + "/" + rec.name + ": delete: " + d.error().message);
      rec.retry_status_at = clock_.Monotonic() + std::chrono::seconds(1);
    }
    return;
  }
  SyncContainers(rec, *pod);
  WriteStatus(rec, *pod);
}

void PodRuntime::StopContainers(PodRecord& rec, const api::Pod* pod) {
  const os::MonoTime now = clock_.Monotonic();
  if (!rec.stopping) {
    rec.stopping = true;
    const int64_t grace = pod ? pod->metadata.deletion_grace_period_seconds.value_or(30) : 0;
    rec.kill_at = now + std::chrono::seconds(std::max<int64_t>(grace, 0));
    for (auto& c : rec.containers) {
      if (!c.run) continue;
      if (pod) Event(*pod, "Normal", "Killing", "Stopping container " + c.name);
      backend_->Terminate(c.run->id, std::chrono::seconds(std::max<int64_t>(grace, 0)));
    }
  }
  if (!rec.killed && now >= rec.kill_at && rec.AnyRunning()) {
    rec.killed = true;
    for (auto& c : rec.containers) {
      if (c.run) backend_->Kill(c.run->id);
    }
  }
}

bool PodRuntime::StartContainer(PodRecord& rec, ContainerRecord& c, const api::Pod& pod,
                                const api::Container& spec) {
  const os::MonoTime now = clock_.Monotonic();
  auto fail = [&](const StartFailure& f) {
    if (f.pending) {
      c.next_start = now + f.retry;
      return false;
    }
    if (c.waiting.reason != f.reason || c.waiting.message != f.message) {
      Event(pod, "Warning", f.event_reason, f.event_message);
    }
    c.waiting = {f.reason, f.message};
    c.next_start = now + f.retry;  // or sooner, when what it needs changes
    return false;
  };
  auto config_error = [&](const Status& s) {
    return fail({.reason = "CreateContainerConfigError",
                 .message = s.message(),
                 .event_message = "Error: " + s.message()});
  };
  auto env = ContainerEnv(pod, spec, host_);
  if (!env.ok()) return config_error(env.status());
  auto mounts = ContainerMounts(spec, sources_.volumes(rec.uid), *env);
  if (!mounts.ok() && mounts.status().code() == StatusCode::kNotFound) {
    // A volume is being set up again (after the agent restarted): soon.
    c.next_start = now + std::chrono::seconds(1);
    return false;
  }
  if (!mounts.ok()) return config_error(mounts.status());

  // Recorded before the run exists, with the run counted: an agent killed at any moment after
  // this finds the run through the backend (Adopt); one killed before it started none.
  const int number = c.runs;
  std::error_code ec;
  fs::create_directories(c.bundle, ec);
  if (ec) {
    return fail({.reason = "RunContainerError",
                 .message = "mkdir " + c.bundle + ": " + ec.message(),
                 .event_message = "Error: mkdir " + c.bundle + ": " + ec.message()});
  }
  Run run;
  run.started_at =
      api::Time::FromUnixSeconds(api::Time::FromTimePoint(clock_.Now()).unix_seconds());
  run.started = now;
  c.run = std::move(run);
  c.runs = number + 1;
  c.image = spec.image;
  SaveState(c);
  StartResult started = backend_->Start(
      {.pod = pod,
       .spec = spec,
       .bundle = c.bundle,
       .run = number,
       .env = *std::move(env),
       .mounts = *std::move(mounts),
       .event = [&](std::string_view type, std::string_view reason, std::string message) {
         Event(pod, type, reason, std::move(message));
       }});
  if (started.failure) {
    c.run.reset();
    c.runs = number;
    SaveState(c);
    return fail(*started.failure);
  }
  c.run->id = started.id;
  c.image_id = started.image_id;
  c.waiting = {};
  SaveState(c);
  Event(pod, "Normal", "Created", "Created container " + c.name);
  Event(pod, "Normal", "Started", "Started container " + c.name);
  return true;
}

void PodRuntime::SyncContainers(PodRecord& rec, const api::Pod& pod) {
  if (!backend_) return;  // volumes only
  // One record per container of the spec (adopted ones matched by name).
  if (!rec.seen_spec) {
    std::vector<ContainerRecord> ordered;
    auto add = [&](const api::Container& spec, bool init) {
      auto found = std::find_if(rec.containers.begin(), rec.containers.end(),
                                [&](const auto& c) { return c.name == spec.name; });
      if (found != rec.containers.end()) {
        ordered.push_back(std::move(*found));
      } else {
        ContainerRecord c;
        c.name = spec.name;
        c.bundle = BundleDir(rec.uid, spec.name);
        c.image = spec.image;
        ordered.push_back(std::move(c));
      }
      ordered.back().init = init;
    };
    for (const auto& c : pod.spec.init_containers) add(c, true);
    for (const auto& c : pod.spec.containers) add(c, false);
    rec.containers = std::move(ordered);
    rec.seen_spec = true;
  }
  const std::string policy = pod.spec.restart_policy.empty() ? "Always" : pod.spec.restart_policy;
  const os::MonoTime now = clock_.Monotonic();
  auto may_start = [&](ContainerRecord& c) {
    if (now >= c.next_start) return true;
    if (c.last && c.waiting.reason == "CrashLoopBackOff" && !c.backoff_reported) {
      Event(pod, "Warning", "BackOff",
            "Back-off restarting failed container " + c.name + " in pod " + PodRef(pod));
      c.backoff_reported = true;
    }
    return false;
  };
  const size_t n_init = pod.spec.init_containers.size();
  // Init containers, one after the other, each to success.
  for (size_t i = 0; i < n_init; ++i) {
    ContainerRecord& c = rec.containers[i];
    if (c.run) return;
    if (c.last && c.last->exit_code == 0) continue;
    if (c.last && policy == "Never") return;  // the pod has failed
    if (may_start(c)) StartContainer(rec, c, pod, pod.spec.init_containers[i]);
    return;
  }
  for (size_t i = n_init; i < rec.containers.size(); ++i) {
    ContainerRecord& c = rec.containers[i];
    if (c.run) continue;
    if (c.last) {
      const bool restart = policy == "Always" || (policy == "OnFailure" && c.last->exit_code != 0);
      if (!restart) continue;
      if (!may_start(c)) continue;
    } else if (!may_start(c)) {
      continue;
    }
    StartContainer(rec, c, pod, pod.spec.containers[i - n_init]);
  }
  // The app containers' probes, and the runs a failed probe is killing.
  // Where tcpSocket and httpGet probes connect: the pod's own address once its sandbox has
  // one (the status may not say so yet), else the node's.
  std::string pod_ip = backend_->PodIp(rec.uid);
  if (pod_ip.empty()) pod_ip = pod.status.pod_ip.empty() ? options_.host_ip : pod.status.pod_ip;
  for (size_t i = n_init; i < rec.containers.size(); ++i) {
    ContainerRecord& c = rec.containers[i];
    if (!c.run || c.run->id.empty()) continue;
    prober_->Watch({rec.uid, c.name, c.run->id}, pod.spec.containers[i - n_init], c.run->started,
                   pod_ip);
    if (c.kill_at && now >= *c.kill_at) {
      backend_->Kill(c.run->id);
      c.kill_at = now + std::chrono::seconds(2);  // and again, until it has gone
    }
  }
}

void PodRuntime::HandleProbeNotices(
    const std::map<std::string, std::shared_ptr<const api::Pod>>& by_uid) {
  for (auto& n : std::exchange(probe_notices_, {})) {
    auto pod = by_uid.find(n.target.uid);
    auto rec = pods_.find(n.target.uid);
    if (pod == by_uid.end() || rec == pods_.end()) continue;
    for (auto& c : rec->second->containers) {
      if (c.name != n.target.container || !c.run || c.run->id != n.target.run_id) continue;
      Event(*pod->second, n.type, n.reason, n.message);
      if (!n.kill || c.kill_at) break;
      // As kubelet kills it: the pod's grace period (the probe's own, if it has one), then
      // SIGKILL.
      int64_t grace = pod->second->spec.termination_grace_period_seconds.value_or(30);
      for (const auto& spec : pod->second->spec.containers) {
        if (spec.name != c.name) continue;
        for (const auto* probe : {&spec.liveness_probe, &spec.startup_probe}) {
          if (*probe && (*probe)->termination_grace_period_seconds) {
            grace = *(*probe)->termination_grace_period_seconds;
          }
        }
      }
      grace = std::max<int64_t>(grace, 0);
      backend_->Terminate(c.run->id, std::chrono::seconds(grace));
      c.kill_at = clock_.Monotonic() + std::chrono::seconds(grace);
      break;
    }
  }
}

void PodRuntime::Event(const api::Pod& pod, std::string_view type, std::string_view reason,
                       std::string message) {
  if (events_) events_(client::ReferenceTo(pod), type, reason, std::move(message));
}

// ---- logs and exec -----------------------------------------------------------------------------

StatusOr<LogFiles> PodRuntime::Logs(const std::string& uid, const std::string& container) const {
  std::lock_guard lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end() || it->second->containers.empty()) {
    return FailedPreconditionError("ContainerCreating");
  }
  const PodRecord& rec = *it->second;
  const ContainerRecord* c = nullptr;
  for (const auto& r : rec.containers) {
    if (r.name == container) c = &r;
  }
  if (!c) return NotFoundError(container);
  if (c->runs == 0) return FailedPreconditionError(c->waiting.reason);
  LogFiles out;
  out.current = LogPath(rec, *c, c->runs - 1);
  if (c->runs >= 2) out.previous = LogPath(rec, *c, c->runs - 2);
  out.running = c->run.has_value();
  out.cri_format = backend_->CriLogFormat();
  return out;
}

bool PodRuntime::StillWriting(const std::string& uid, const std::string& container,
                              const std::string& log_path) const {
  std::lock_guard lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return false;
  for (const auto& c : it->second->containers) {
    if (c.name == container && c.run) return log_path == LogPath(*it->second, c, c.runs - 1);
  }
  return false;
}

StatusOr<std::unique_ptr<ExecStream>> PodRuntime::Exec(const std::string& uid,
                                                       const std::string& container,
                                                       const std::vector<std::string>& argv,
                                                       bool stdin, bool tty) {
  // The container's runs (id, bundle), read under the lock; the backend is asked without it,
  // since a runtime's Exec is a round trip that must not hold up the sync.
  std::vector<std::pair<std::string, std::string>> runs;
  {
    std::lock_guard lock(mu_);
    auto it = pods_.find(uid);
    if (it != pods_.end()) {
      for (const auto& c : it->second->containers) {
        if (c.name == container && c.run && !c.run->id.empty()) {
          runs.emplace_back(c.run->id, c.bundle);
        }
      }
    }
  }
  for (const auto& [id, bundle] : runs) {
    auto started = backend_->Exec(id, bundle, argv, stdin, tty);
    if (started.ok() || started.status().code() != StatusCode::kFailedPrecondition) {
      return started;
    }
  }
  return FailedPreconditionError("container not found (\"" + container + "\")");
}

}  // namespace kvol::node::runtime
