// Node registration, status heartbeat and Lease.
#include "node/node_status.h"

#include <algorithm>

#include "api/api_error.h"
#include "base/log.h"
#include "base/thread.h"

namespace kvol::node {
namespace {

Status FromApi(const api::ApiError& e) {
  if (api::IsConflict(e)) return AbortedError(e.message);
  if (api::IsNotFound(e)) return NotFoundError(e.message);
  return UnavailableError(e.message);
}

}  // namespace

NodeStatusManager::NodeStatusManager(client::Client& client, const os::Clock& clock,
                                     NodeStatusOptions options)
    : client_(client), clock_(clock), options_(std::move(options)) {}

NodeStatusManager::~NodeStatusManager() { Stop(); }

api::Node NodeStatusManager::Describe() const {
  api::Node n;
  n.metadata.name = options_.node_name;
  n.metadata.labels = options_.labels;
  n.metadata.annotations = options_.annotations;
  n.metadata.labels["kubernetes.io/hostname"] = options_.node_name;
  n.metadata.labels["kubernetes.io/os"] = options_.machine.os;
  n.metadata.labels["kubernetes.io/arch"] = options_.machine.arch;
  n.metadata.labels["beta.kubernetes.io/os"] = options_.machine.os;
  n.metadata.labels["beta.kubernetes.io/arch"] = options_.machine.arch;
  auto& st = n.status;
  const auto& m = options_.machine;
  st.capacity["cpu"] = api::Quantity::FromUnits(m.cpus);
  st.capacity["memory"] = api::Quantity::MustParse(std::to_string(m.memory_bytes / 1024) + "Ki");
  st.capacity["ephemeral-storage"] =
      api::Quantity::MustParse(std::to_string(m.disk_bytes / 1024) + "Ki");
  st.capacity["pods"] = api::Quantity::FromUnits(110);
  st.allocatable = st.capacity;
  st.addresses = {{"InternalIP", m.address}, {"Hostname", options_.node_name}};
  // nodeInfo is kept as a field the object model does not type.
  st.unknown_fields = api::Json::object();
  st.unknown_fields["nodeInfo"] = {
      {"machineID", m.machine_id},
      {"systemUUID", m.machine_id},
      {"bootID", m.boot_id},
      {"kernelVersion", m.kernel},
      {"osImage", m.os_image},
      {"containerRuntimeVersion",
       options_.runtime_version.empty() ? "kvol://" + options_.version : options_.runtime_version},
      {"kubeletVersion", "v" + options_.version + "-kvol"},
      {"kubeProxyVersion", ""},
      {"operatingSystem", m.os},
      {"architecture", m.arch}};
  if (options_.daemon_port != 0) {
    st.unknown_fields["daemonEndpoints"] = {{"kubeletEndpoint", {{"Port", options_.daemon_port}}}};
  }
  std::lock_guard lock(mu_);
  st.volumes_in_use = volumes_in_use_;
  if (options_.report_volumes_attached) st.volumes_attached = volumes_attached_;
  return n;
}

Status NodeStatusManager::Start() {
  Status s = SyncOnce();
  if (!s.ok()) return s.Annotate("registering node " + options_.node_name);
  thread_ = std::thread([this] {
    SetThreadName("node-status");
    Loop();
  });
  return OkStatus();
}

void NodeStatusManager::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void NodeStatusManager::SetVolumesInUse(std::vector<std::string> names) {
  std::lock_guard lock(mu_);
  if (names == volumes_in_use_) return;
  volumes_in_use_ = std::move(names);
  volumes_changed_ = true;
  cv_.notify_all();
}

void NodeStatusManager::SetVolumesAttached(std::vector<api::AttachedVolume> volumes) {
  std::lock_guard lock(mu_);
  volumes_attached_ = std::move(volumes);
  volumes_changed_ = true;
  cv_.notify_all();
}

void NodeStatusManager::Loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    clock_.WaitFor(cv_, lock, options_.renew_interval);
    if (stopping_) break;
    lock.unlock();
    if (Status s = SyncOnce(); !s.ok())
      log::Warn("node " + options_.node_name + ": " + s.message());
    lock.lock();
  }
}

Status NodeStatusManager::SyncOnce() {
  if (!registered_) {
    KVOL_RETURN_IF_ERROR(Register());
    registered_ = true;
  }
  bool changed;
  {
    std::lock_guard lock(mu_);
    changed = volumes_changed_;
    volumes_changed_ = false;
  }
  std::vector<api::NodeCondition> pressure;
  if (options_.pressure) pressure = options_.pressure();
  const bool pressure_changed = !std::equal(
      pressure.begin(), pressure.end(), pressure_written_.begin(), pressure_written_.end(),
      [](const auto& a, const auto& b) { return a.type == b.type && a.status == b.status; });
  if (changed || pressure_changed || clock_.Monotonic() >= next_status_) {
    Status s = WriteStatus(pressure);
    if (s.code() == StatusCode::kNotFound) registered_ = false;  // deleted: register again
    if (!s.ok()) {
      std::lock_guard lock(mu_);
      volumes_changed_ = volumes_changed_ || changed;
      return s;
    }
    next_status_ = clock_.Monotonic() + options_.status_interval;
    pressure_written_ = std::move(pressure);
  }
  return RenewLease();
}

Status NodeStatusManager::Register() {
  auto& nodes = client_.resource<api::Node>();
  const api::Node want = Describe();
  auto created = nodes.Create(want);
  if (created.ok()) {
    log::Info("node " + options_.node_name + " registered");
    return OkStatus();
  }
  if (!api::IsAlreadyExists(created.error())) return FromApi(created.error());
  // The node exists (made by hand, or by an earlier run): add the labels and annotations it
  // should carry.
  auto updated = client::Mutate<api::Node>(nodes, "", options_.node_name, [&](api::Node& n) {
    bool changed = false;
    auto merge = [&](const std::map<std::string, std::string>& want_map,
                     std::map<std::string, std::string>& have) {
      for (const auto& [k, v] : want_map) {
        auto it = have.find(k);
        if (it == have.end() || it->second != v) {
          have[k] = v;
          changed = true;
        }
      }
    };
    merge(want.metadata.labels, n.metadata.labels);
    merge(want.metadata.annotations, n.metadata.annotations);
    for (const auto& k : options_.absent_annotations)
      changed = n.metadata.annotations.erase(k) > 0 || changed;
    return changed;
  });
  if (!updated.ok()) return FromApi(updated.error());
  return OkStatus();
}

void NodeStatusManager::MergeConditions(std::vector<api::NodeCondition>& have,
                                        const std::vector<api::NodeCondition>& pressure,
                                        const api::Time& now,
                                        std::vector<std::string>* events) const {
  // kubelet's event for a condition's new status: its reason, "KubeletHasDiskPressure",
  // as "NodeHasDiskPressure".
  auto changed = [&](const api::NodeCondition& c) {
    constexpr std::string_view kKubelet = "Kubelet";
    if (c.reason.rfind(kKubelet, 0) == 0)
      events->push_back("Node" + c.reason.substr(kKubelet.size()));
  };
  auto upsert = [&](api::NodeCondition want) {
    want.last_heartbeat_time = now;
    want.last_transition_time = now;
    for (auto& c : have) {
      if (c.type != want.type) continue;
      if (c.status == want.status && c.last_transition_time) {
        want.last_transition_time = c.last_transition_time;
      } else {
        changed(want);
      }
      c = std::move(want);
      return;
    }
    changed(want);
    // kubelet's order: the pressure conditions, then Ready.
    auto ready = std::find_if(have.begin(), have.end(),
                              [](const api::NodeCondition& c) { return c.type == "Ready"; });
    have.insert(ready, std::move(want));
  };
  for (const auto& c : pressure) upsert(c);
  api::NodeCondition ready;
  ready.type = "Ready";
  ready.status = "True";
  ready.reason = "KubeletReady";
  ready.message = "kvol agent is posting ready status";
  upsert(std::move(ready));
}

Status NodeStatusManager::WriteStatus(const std::vector<api::NodeCondition>& pressure) {
  const api::Node want = Describe();
  const api::Time now =
      api::Time::FromUnixSeconds(api::Time::FromTimePoint(clock_.Now()).unix_seconds());
  std::vector<std::string> events;
  auto written = client::Mutate<api::Node>(
      client_.resource<api::Node>(), "", options_.node_name,
      [&](api::Node& n) {
        auto& st = n.status;
        st.capacity = want.status.capacity;
        st.allocatable = want.status.allocatable;
        st.addresses = want.status.addresses;
        st.volumes_in_use = want.status.volumes_in_use;
        if (options_.report_volumes_attached) st.volumes_attached = want.status.volumes_attached;
        if (!st.unknown_fields.is_object()) st.unknown_fields = api::Json::object();
        st.unknown_fields["nodeInfo"] = want.status.unknown_fields["nodeInfo"];
        if (want.status.unknown_fields.contains("daemonEndpoints")) {
          st.unknown_fields["daemonEndpoints"] = want.status.unknown_fields["daemonEndpoints"];
        } else {
          st.unknown_fields.erase("daemonEndpoints");
        }
        events.clear();  // a conflict runs this again on the newer Node
        MergeConditions(st.conditions, pressure, now, &events);
        return true;
      },
      /*status=*/true);
  if (!written.ok()) return FromApi(written.error());
  if (options_.events) {
    api::ObjectReference ref;
    ref.kind = "Node";
    ref.api_version = "v1";
    ref.name = options_.node_name;
    ref.uid = options_.node_name;  // as kubelet refers to its node
    for (const auto& reason : events) {
      options_.events(ref, "Normal", reason,
                      "Node " + options_.node_name + " status is now: " + reason);
    }
  }
  return OkStatus();
}

Status NodeStatusManager::RenewLease() {
  auto& leases = client_.resource<api::Lease>();
  const api::MicroTime now = api::Time::FromTimePoint(clock_.Now());
  auto current = leases.Get("kube-node-lease", options_.node_name);
  if (!current.ok()) {
    if (!api::IsNotFound(current.error())) return FromApi(current.error());
    api::Lease lease;
    lease.metadata.namespace_ = "kube-node-lease";
    lease.metadata.name = options_.node_name;
    lease.spec.holder_identity = options_.node_name;
    lease.spec.lease_duration_seconds = options_.lease_duration_seconds;
    lease.spec.renew_time = now;
    auto created = leases.Create(lease);
    if (!created.ok() && !api::IsAlreadyExists(created.error())) return FromApi(created.error());
    return OkStatus();
  }
  api::Lease next = *current;
  next.spec.holder_identity = options_.node_name;
  next.spec.lease_duration_seconds = options_.lease_duration_seconds;
  next.spec.renew_time = now;
  auto updated = leases.Update(next);
  if (!updated.ok()) return FromApi(updated.error());
  return OkStatus();
}

}  // namespace kvol::node
