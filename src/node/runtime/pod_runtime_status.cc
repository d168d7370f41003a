// The pod runtime's status writer: each container's status, the pod's phase and conditions,
// as kubelet's status manager writes them.
#include <algorithm>

#include "api/api_error.h"
#include "api/codec.h"
#include "api/pod_status.h"
#include "base/log.h"
#include "node/runtime/pod_records.h"

namespace kvol::node::runtime {

namespace {

std::string Seconds(std::chrono::milliseconds d) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (s >= 60 && s % 60 == 0) return std::to_string(s / 60) + "m0s";
  if (s >= 60) return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
  return std::to_string(s) + "s";
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : " ") + n;
  return out;
}

// The phase, as kubelet's getPhase decides it: from the init containers (any incomplete, or
// one failed for good) and then the app containers' statuses.
std::string PodPhase(const std::vector<api::ContainerStatus>& statuses, bool init_incomplete,
                     bool init_failed, std::string_view policy) {
  if (init_incomplete) return init_failed ? "Failed" : "Pending";
  int waiting = 0, running = 0, stopped = 0, succeeded = 0;
  for (const auto& cs : statuses) {
    if (cs.state.running) {
      ++running;
    } else if (cs.state.terminated) {
      ++stopped;
      if (cs.state.terminated->exit_code == 0) ++succeeded;
    } else if (cs.last_state.terminated) {
      ++stopped;
    } else {
      ++waiting;
    }
  }
  if (waiting > 0) return "Pending";
  if (running > 0 || policy == "Always") return "Running";
  if (stopped == succeeded) return "Succeeded";
  return policy == "Never" ? "Failed" : "Running";
}

// Initialized, ContainersReady and Ready, as kubelet's status manager writes them.
std::vector<api::PodCondition> PodConditions(const std::vector<std::string>& incomplete,
                                             const std::vector<std::string>& unready,
                                             std::string_view phase) {
  std::vector<api::PodCondition> conditions;
  {
    api::PodCondition c;
    c.type = "Initialized";
    c.status = incomplete.empty() ? "True" : "False";
    if (!incomplete.empty()) {
      c.reason = "ContainersNotInitialized";
      c.message = "containers with incomplete status: [" + JoinNames(incomplete) + "]";
    }
    conditions.push_back(c);
  }
  for (const char* type : {"ContainersReady", "Ready"}) {
    api::PodCondition c;
    c.type = type;
    c.status = unready.empty() && incomplete.empty() ? "True" : "False";
    if (phase == "Succeeded" || phase == "Failed") {
      c.status = "False";
      c.reason = "PodCompleted";
    } else if (!incomplete.empty()) {
      c.reason = "ContainersNotInitialized";
      c.message = "containers with incomplete status: [" + JoinNames(incomplete) + "]";
    } else if (!unready.empty()) {
      c.reason = "ContainersNotReady";
      c.message = "containers with unready status: [" + JoinNames(unready) + "]";
    }
    conditions.push_back(c);
  }
  return conditions;
}

}  // namespace

api::ContainerStatus PodRuntime::StatusOf(const ContainerRecord& c, const PodRecord& rec,
                                          const api::Pod& pod, std::string_view policy) const {
  api::ContainerStatus cs;
  cs.name = c.name;
  cs.image = c.image;
  cs.image_id = c.image_id;
  cs.restart_count = std::max(c.runs - 1, 0);
  const bool restarts =
      c.last && (c.init ? c.last->exit_code != 0 && policy != "Never"
                        : policy == "Always" || (policy == "OnFailure" && c.last->exit_code != 0));
  if (c.run) {
    cs.state.running.emplace().started_at = c.run->started_at;
    const Prober::Status probed =
        c.init ? Prober::Status{} : prober_->StatusOf({rec.uid, c.name, c.run->id});
    cs.ready = !c.init && probed.ready;
    cs.started = probed.started;
    cs.container_id = c.run->id;
    if (c.last) cs.last_state.terminated = c.last;
  } else if (c.last && (!restarts || rec.stopping)) {
    cs.state.terminated = c.last;
    if (c.before_last) cs.last_state.terminated = c.before_last;
    cs.container_id = c.last->container_id;
    cs.started = false;
  } else {
    cs.state.waiting = c.waiting;
    if (c.waiting.reason == "CrashLoopBackOff" && c.delay.count() > 0) {
      cs.state.waiting->message = "back-off " + Seconds(c.delay) +
                                  " restarting failed container=" + c.name + " pod=" + PodRef(pod);
    }
    if (c.last) {
      cs.last_state.terminated = c.last;
      cs.container_id = c.last->container_id;
    }
    cs.started = false;
  }
  return cs;
}

void PodRuntime::WriteStatus(PodRecord& rec, const api::Pod& pod) {
  const os::MonoTime mono = clock_.Monotonic();
  if (rec.retry_status_at && mono < *rec.retry_status_at) return;
  if (!rec.seen_spec) return;  // nothing started yet: the volume manager's status stands
  const std::string policy = pod.spec.restart_policy.empty() ? "Always" : pod.spec.restart_policy;
  const size_t n_init = pod.spec.init_containers.size();

  std::vector<api::ContainerStatus> init_statuses, statuses;
  std::vector<std::string> incomplete, unready;
  bool init_failed = false;
  for (size_t i = 0; i < rec.containers.size(); ++i) {
    const ContainerRecord& c = rec.containers[i];
    if (i < n_init) {
      init_statuses.push_back(StatusOf(c, rec, pod, policy));
      if (!(c.last && c.last->exit_code == 0 && !c.run)) incomplete.push_back(c.name);
      if (c.last && c.last->exit_code != 0 && !c.run && policy == "Never") init_failed = true;
    } else {
      statuses.push_back(StatusOf(c, rec, pod, policy));
      if (!statuses.back().ready) unready.push_back(c.name);
    }
  }
  std::string phase = PodPhase(statuses, !incomplete.empty(), init_failed, policy);
  if (rec.stopping && !rec.AnyRunning() && (phase == "Running" || phase == "Pending")) {
    // Every container has stopped for the pod's deletion: a terminal phase, by how they ended.
    const bool all_succeeded = std::all_of(statuses.begin(), statuses.end(), [](const auto& cs) {
      return cs.state.terminated && cs.state.terminated->exit_code == 0;
    });
    phase = all_succeeded && !statuses.empty() ? "Succeeded" : "Failed";
  }
  const std::vector<api::PodCondition> conditions = PodConditions(incomplete, unready, phase);

  api::Json digest = {{"phase", phase}};
  api::Encode(init_statuses, digest["init"]);
  api::Encode(statuses, digest["app"]);
  for (const auto& c : conditions) digest["conditions"].push_back(api::EncodeStruct(c));
  const std::string written = digest.dump();
  if (written == rec.written) return;

  const api::Time now = api::Time::FromTimePoint(clock_.Now());
  const std::string uid = rec.uid;
  auto result = client::Mutate<api::Pod>(
      client_.resource<api::Pod>(), rec.ns, rec.name,
      [&](api::Pod& p) {
        if (p.metadata.uid != uid) return false;
        const api::PodStatus before = p.status;
        auto& st = p.status;
        st.phase = phase;
        if (st.host_ip.empty()) st.host_ip = options_.host_ip;
        if (st.pod_ip.empty()) {
          st.pod_ip = backend_ ? backend_->PodIp(uid) : "";
          if (st.pod_ip.empty()) st.pod_ip = options_.host_ip;  // the node's network
        }
        if (!st.start_time) st.start_time = api::Time::FromUnixSeconds(now.unix_seconds());
        st.init_container_statuses = init_statuses;
        st.container_statuses = statuses;
        const bool scheduled = std::any_of(st.conditions.begin(), st.conditions.end(),
                                           [](const auto& c) { return c.type == "PodScheduled"; });
        if (!scheduled)
          api::UpdatePodCondition(st, {.type = "PodScheduled", .status = "True"}, now);
        for (const auto& c : conditions) api::UpdatePodCondition(st, c, now);
        return !(st == before);
      },
      /*status=*/true);
  if (result.ok() || api::IsNotFound(result.error())) {
    rec.written = written;
    rec.retry_status_at.reset();
  } else {
    log::Warn("pod " + rec.ns + "/" + rec.name + ": status not written: " + result.error().message);
    rec.retry_status_at = mono + std::chrono::seconds(1);
  }
}

}  // namespace kvol::node::runtime
