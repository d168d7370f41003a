// The volume manager's wiring: the loop that populates the desired state and reconciles, and
// the queries the agent reads.
#include "node/volumemanager/volume_manager.h"

#include <algorithm>
#include <filesystem>

#include "base/log.h"
#include "base/thread.h"

namespace kvol::node::volumemanager {
namespace fs = std::filesystem;

VolumeManager::VolumeManager(volume::Host& host, volume::PluginManager& plugins, Sources sources,
                             client::EventSink events, const os::Clock& clock, Options options)
    : host_(host),
      plugins_(plugins),
      sources_(std::move(sources)),
      options_(std::move(options)),
      clock_(clock) {
  ExecutorOptions eo = options_.executor;
  eo.on_finished = [this] { Kick(); };
  executor_ = std::make_unique<OperationExecutor>(clock_, eo);
  GeneratorHooks hooks;
  hooks.finish_resize = options_.finish_resize;
  hooks.on_torn_down = [this](const std::string& uid) {
    std::lock_guard lock(mu_);
    orphan_candidates_.insert(uid);
  };
  generator_ = std::make_unique<OperationGenerator>(actual_, *executor_, host_, plugins_,
                                                    std::move(events), std::move(hooks));
  reconciler_ = std::make_unique<Reconciler>(
      actual_, *generator_, [this](const std::string& uid) { return ContainersAlive(uid); },
      options_.controller_attachments);
}

VolumeManager::~VolumeManager() { Stop(); }

Status VolumeManager::Start() {
  std::error_code ec;
  fs::create_directories(options_.root_dir + "/pods", ec);
  if (ec) return InternalError("mkdir " + options_.root_dir + "/pods: " + ec.message());
  // Only root walks in: volumes below hold other pods' secrets and world-writable directories.
  fs::permissions(options_.root_dir, fs::perms(0750), ec);
  fs::permissions(options_.root_dir + "/pods", fs::perms(0750), ec);
  Reconstruct();
  thread_ = std::thread([this] {
    SetThreadName("volume-manager");
    Loop();
  });
  return OkStatus();
}

void VolumeManager::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  executor_.reset();  // waits for operations in flight
}

void VolumeManager::Kick() {
  {
    std::lock_guard lock(mu_);
    kicked_ = true;
  }
  cv_.notify_all();
}

bool VolumeManager::ContainersAlive(const std::string& uid) const {
  return sources_.containers_alive && sources_.containers_alive(uid);
}

// ---- queries --------------------------------------------------------------------------------

std::set<std::string> VolumeManager::MountedVolumeKeys() const {
  std::set<std::string> out;
  actual_.ForEachVolume([&](const std::string& key, const ActualVolume& a) {
    if (a.state == MountState::kMounted) out.insert(key);
  });
  return out;
}

std::set<std::string> VolumeManager::MountedDevices() const {
  std::set<std::string> out;
  actual_.ForEachDevice([&](const std::string& name, const ActualDevice& d) {
    if (d.state == MountState::kMounted) out.insert(name);
  });
  return out;
}

std::map<std::string, std::string> VolumeManager::AttachedVolumes() const {
  std::map<std::string, std::string> out;
  actual_.ForEachAttachment([&](const std::string& name, const ActualAttachment& a) {
    if (a.certain) out[name] = a.device_path;
  });
  return out;
}

std::map<std::string, PodVolume> VolumeManager::VolumesOf(const DesiredPod& dp) const {
  std::map<std::string, PodVolume> out;
  for (const auto& [key, v] : dp.volumes) {
    auto a = actual_.Volume(key);
    if (!a || a->path.empty()) continue;
    if (a->state != MountState::kMounted && !a->reconstructed) continue;
    out[v.outer_name] = {a->path, a->block, a->read_only};
  }
  return out;
}

std::map<std::string, PodVolume> VolumeManager::PodVolumes(const std::string& uid) const {
  auto dp = desired_.Pod(uid);
  return dp ? VolumesOf(*dp) : std::map<std::string, PodVolume>{};
}

std::vector<PodVolumesState> VolumeManager::PodStates(const DesiredPods& desired) const {
  std::vector<PodVolumesState> out;
  out.reserve(desired.size());
  for (const auto& [uid, dp] : desired) {
    PodVolumesState& st = out.emplace_back();
    st.pod = dp.pod;
    for (const auto& [key, v] : dp.volumes) {
      if (v.attach && !actual_.Attached(v.unique_name)) st.unattached.push_back(v.outer_name);
      // A volume whose contents are only being refreshed is still there for the pod.
      if (!actual_.VolumeThereForPod(key)) st.unmounted.push_back(v.outer_name);
    }
    for (const auto& [name, why] : dp.unresolved) {
      st.unmounted.push_back(name);
      st.unattached.push_back(name);
    }
    st.unresolved = dp.unresolved;
  }
  return out;
}

std::vector<MountedPodVolume> VolumeManager::MountedPodVolumes() const {
  std::vector<MountedPodVolume> out;
  for (const auto& [uid, dp] : desired_.Pods()) {
    for (const auto& [key, v] : dp.volumes) {
      auto a = actual_.Volume(key);
      if (!a || a->state != MountState::kMounted) continue;
      out.push_back({dp.pod, v.outer_name, a->plugin_name, a->dir_name, a->block, a->path});
    }
  }
  return out;
}

std::map<std::pair<std::string, std::string>, int> VolumeManager::VolumeCounts() const {
  std::map<std::pair<std::string, std::string>, int> out;
  for (const auto& [uid, dp] : desired_.Pods()) {
    for (const auto& [key, v] : dp.volumes) {
      if (v.plugin) out[{std::string(v.plugin->Name()), "desired_state_of_world"}]++;
    }
  }
  actual_.ForEachVolume([&](const std::string&, const ActualVolume& a) {
    out[{a.plugin_name, "actual_state_of_world"}]++;
  });
  return out;
}

bool VolumeManager::PodVolumesTornDown(const std::string& uid) const {
  return !actual_.PodHasVolumes(uid) && !executor_->AnyPending(uid + "/");
}

// ---- the loop -------------------------------------------------------------------------------

void VolumeManager::Loop() {
  std::unique_lock lock(mu_);
  os::MonoTime next_resync = clock_.Monotonic();
  os::MonoTime next_deadline = next_resync;
  while (!stopping_) {
    const os::MonoTime now = clock_.Monotonic();
    if (kicked_ || now >= next_deadline) {
      kicked_ = false;
      const bool resync = now >= next_resync;
      lock.unlock();
      if (resync) Resync();
      ReconcileOnce();
      lock.lock();
      if (now >= next_resync) next_resync = now + options_.resync;
      // The next time something is due without an event: the resync, a backoff ending, a
      // status deadline, a plugin that may have appeared.
      next_deadline = next_resync;
      if (auto retry = executor_->NextRetry()) next_deadline = std::min(next_deadline, *retry);
      if (status_due_) next_deadline = std::min(next_deadline, *status_due_);
      if (desired_.AnyMissingPlugin()) {
        next_deadline = std::min(next_deadline, now + options_.missing_plugin_retry);
      }
      continue;
    }
    clock_.WaitUntil(cv_, lock, next_deadline);
  }
}

void VolumeManager::Resync() {
  ++resyncs_;
  // One read of the mount table for every volume: nothing per volume unless it drifted.
  if (auto table = host_.mounter().List(); table.ok()) {
    std::set<std::string> mount_points;
    for (const auto& m : *table) mount_points.insert(m.path);
    reconciler_->MarkDrifted(mount_points);
  } else {
    log::Warn("volume manager: cannot read the mount table: " + table.status().message());
  }
  AddPodDirsAsOrphanCandidates();
}

void VolumeManager::ReconcileOnce() {
  DesiredPods desired;
  for (auto& pod : sources_.pods()) {
    if (!PodNeedsVolumes(*pod) && !ContainersAlive(pod->metadata.uid)) continue;
    desired.emplace(pod->metadata.uid, Populate(pod, sources_.lookups, plugins_, resyncs_));
  }
  desired_.Set(desired);
  reconciler_->Reconcile(desired);
  RemoveOrphanedPodDirs(desired);
  status_due_ = options_.on_reconciled ? options_.on_reconciled(PodStates(desired)) : std::nullopt;
  ReportNodeVolumes(desired);
}

void VolumeManager::ReportNodeVolumes(const DesiredPods& desired) {
  // In use from the moment a pod wants it until its device is unmounted, as kubelet reports
  // it: the attach/detach controller detaches only what is not listed.
  std::vector<std::string> in_use;
  for (const auto& [uid, dp] : desired) {
    for (const auto& [key, v] : dp.volumes) {
      if (v.device_mount || v.attach) in_use.push_back(v.unique_name);
    }
  }
  actual_.ForEachDevice(
      [&](const std::string& name, const ActualDevice&) { in_use.push_back(name); });
  std::sort(in_use.begin(), in_use.end());
  in_use.erase(std::unique(in_use.begin(), in_use.end()), in_use.end());
  if (in_use != volumes_in_use_) {
    volumes_in_use_ = in_use;
    if (options_.on_volumes_in_use) options_.on_volumes_in_use(std::move(in_use));
  }
  std::vector<api::AttachedVolume> attached;
  for (const auto& [name, device] : AttachedVolumes()) attached.push_back({name, device});
  const bool same = attached.size() == volumes_attached_.size() &&
                    std::equal(attached.begin(), attached.end(), volumes_attached_.begin(),
                               [](const auto& a, const auto& b) {
                                 return a.name == b.name && a.device_path == b.device_path;
                               });
  if (!same) {
    volumes_attached_ = attached;
    if (options_.on_volumes_attached) options_.on_volumes_attached(std::move(attached));
  }
}

}  // namespace kvol::node::volumemanager
