#include "node/volume_status.h"

#include <algorithm>

#include "api/pod_status.h"
#include "api/well_known.h"
#include "base/log.h"

namespace kvol::node {

namespace {

std::string JoinSorted(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : " ") + n;
  return out;
}

std::string PodKey(const api::Pod& pod) {
  return pod.metadata.namespace_ + "/" + pod.metadata.name;
}

}  // namespace

VolumeStatusWriter::VolumeStatusWriter(client::Client& client, client::EventSink events,
                                       const os::Clock& clock, VolumeStatusOptions options)
    : client_(client), events_(std::move(events)), clock_(clock), options_(std::move(options)) {}

std::optional<os::MonoTime> VolumeStatusWriter::Report(
    const std::vector<volumemanager::PodVolumesState>& pods) {
  const os::MonoTime now = clock_.Monotonic();
  std::map<std::string, PodReport> reports;
  std::optional<os::MonoTime> next;
  auto due = [&](os::MonoTime t) { next = next ? std::min(*next, t) : t; };
  for (const auto& state : pods) {
    const std::string& uid = state.pod->metadata.uid;
    auto old = reports_.find(uid);
    PodReport& r = reports[uid];
    if (old != reports_.end()) {
      r = std::move(old->second);
    } else {
      r.next_timeout_event = now + options_.mount_timeout;
    }
    ReportPod(state, r, now);
    if (r.awaiting_mounts) due(r.next_timeout_event);
    if (r.retry_status_at) due(*r.retry_status_at);
  }
  reports_.swap(reports);  // pods gone are forgotten
  return next;
}

void VolumeStatusWriter::ReportPod(const volumemanager::PodVolumesState& state, PodReport& r,
                                   os::MonoTime now) {
  const api::Pod& pod = *state.pod;
  const bool ready = state.unmounted.empty();
  const std::string prefix = "Unable to attach or mount volumes: unmounted volumes=[" +
                             JoinSorted(state.unmounted) + "], unattached volumes=[" +
                             JoinSorted(state.unattached) + "]: ";
  if (!state.unresolved.empty()) {
    const std::string msg = prefix + state.unresolved.begin()->second;
    if (msg != r.unresolved_reported) {
      PodEvent(pod, "Warning", "FailedMount", msg);
      r.unresolved_reported = msg;
    }
  } else {
    r.unresolved_reported.clear();
  }
  r.awaiting_mounts = !state.unmounted.empty();
  if (r.awaiting_mounts && now >= r.next_timeout_event) {
    PodEvent(pod, "Warning", "FailedMount", prefix + "timed out waiting for the condition");
    r.next_timeout_event = now + options_.mount_timeout;
  }
  const bool retry_due = !r.retry_status_at || now >= *r.retry_status_at;
  if (!retry_due || (r.status_written && r.ready_written == ready)) return;
  const std::string message =
      ready ? "" : "unmounted volumes=[" + JoinSorted(state.unmounted) + "]";
  if (Status s = WritePodStatus(pod, ready, message); !s.ok()) {
    log::Warn("pod " + PodKey(pod) + ": status not written: " + s.message());
    r.retry_status_at = now + std::chrono::seconds(1);
    return;
  }
  r.retry_status_at.reset();
  r.status_written = true;
  r.ready_written = ready;
}

Status VolumeStatusWriter::WritePodStatus(const api::Pod& pod, bool ready,
                                          const std::string& message) {
  const api::Time now = api::Time::FromTimePoint(clock_.Now());
  const std::string uid = pod.metadata.uid;
  auto written = client::Mutate<api::Pod>(
      client_.resource<api::Pod>(), pod.metadata.namespace_, pod.metadata.name,
      [&](api::Pod& p) {
        if (p.metadata.uid != uid) return false;  // another pod of that name
        bool changed = false;
        auto& st = p.status;
        if (st.phase.empty()) {
          st.phase = "Pending";
          changed = true;
        }
        if (st.host_ip.empty() && !options_.host_ip.empty()) {
          st.host_ip = options_.host_ip;
          changed = true;
        }
        if (!st.start_time) {
          st.start_time = api::Time::FromUnixSeconds(now.unix_seconds());
          changed = true;
        }
        for (const auto& c : p.spec.containers) {
          const bool known = std::any_of(st.container_statuses.begin(), st.container_statuses.end(),
                                         [&](const auto& cs) { return cs.name == c.name; });
          if (known) continue;
          api::ContainerStatus cs;
          cs.name = c.name;
          cs.image = c.image;
          cs.state.waiting.emplace().reason = "ContainerCreating";
          st.container_statuses.push_back(std::move(cs));
          changed = true;
        }
        api::PodCondition cond;
        cond.type = std::string(api::kPodVolumesReady);
        cond.status = ready ? "True" : "False";
        if (!ready) {
          cond.reason = "VolumesNotReady";
          cond.message = message;
        }
        changed = api::UpdatePodCondition(st, cond, now) || changed;
        return changed;
      },
      /*status=*/true);
  if (!written.ok()) {
    if (api::IsNotFound(written.error())) return OkStatus();  // gone meanwhile
    return UnavailableError(written.error().message);
  }
  return OkStatus();
}

Status VolumeStatusWriter::FinishClaimResize(const volumemanager::DesiredVolume::FsResize& r) {
  auto written = client::Mutate<api::PersistentVolumeClaim>(
      client_.resource<api::PersistentVolumeClaim>(), r.claim_namespace, r.claim_name,
      [&](api::PersistentVolumeClaim& c) {
        if (c.metadata.uid != r.claim_uid) return false;
        api::MarkClaimResizeFinished(c.status, r.new_size);
        return true;
      },
      /*status=*/true);
  if (!written.ok() && !api::IsNotFound(written.error())) {
    return UnavailableError("updating the capacity of claim " + r.claim_namespace + "/" +
                            r.claim_name + ": " + written.error().message);
  }
  return OkStatus();
}

void VolumeStatusWriter::PodEvent(const api::Pod& pod, std::string_view type,
                                  std::string_view reason, std::string message) {
  if (events_) events_(client::ReferenceTo(pod), type, reason, std::move(message));
}

}  // namespace kvol::node
