// The volume manager: populate, reconcile, operate, report.
#include "node/volumemanager/volume_manager.h"

#include <algorithm>
#include <filesystem>

#include "api/pod_status.h"
#include "api/well_known.h"
#include "base/log.h"
#include "base/thread.h"
#include "os/files.h"
#include "volume/util/cleanup.h"
#include "volume/util/subpath.h"

namespace kvol::node::volumemanager {
namespace fs = std::filesystem;

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

// Where an attachment is recorded: <plugin dir>/attachments/<volume name>.
std::string AttachmentRecord(volume::Host& host, std::string_view plugin,
                             std::string_view volume_name) {
  return host.PluginDir(plugin) + "/attachments/" + std::string(volume_name);
}

// Writes `device` as the record at `path`, whole and synced: a crash leaves the old record or
// the new one.
Status WriteRecord(const std::string& path, const std::string& device) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return InternalError("mkdir " + fs::path(path).parent_path().string() + ": " + ec.message());
  return os::WriteFileAtomically(path, device, 0600);
}

}  // namespace

VolumeManager::VolumeManager(client::Client& client, volume::Host& host,
                             volume::PluginManager& plugins, Sources sources,
                             client::EventSink events, const os::Clock& clock, Options options)
    : client_(client),
      host_(host),
      plugins_(plugins),
      sources_(std::move(sources)),
      events_(std::move(events)),
      clock_(clock),
      options_(std::move(options)) {
  ExecutorOptions eo = options_.executor;
  eo.on_finished = [this] { Kick(); };
  executor_ = std::make_unique<OperationExecutor>(clock_, eo);
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

std::map<std::string, std::vector<std::string>> VolumeManager::UnmountedVolumes() const {
  std::lock_guard lock(mu_);
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [uid, dp] : desired_) {
    auto& list = out[PodKey(*dp.pod)];
    for (const auto& [key, v] : dp.volumes) {
      auto a = actual_.find(key);
      if (a == actual_.end() || a->second.state != MountState::kMounted)
        list.push_back(v.outer_name);
    }
    for (const auto& [name, why] : dp.unresolved) list.push_back(name);
    std::sort(list.begin(), list.end());
  }
  return out;
}

std::set<std::string> VolumeManager::MountedVolumeKeys() const {
  std::lock_guard lock(mu_);
  std::set<std::string> out;
  for (const auto& [key, a] : actual_) {
    if (a.state == MountState::kMounted) out.insert(key);
  }
  return out;
}

std::set<std::string> VolumeManager::MountedDevices() const {
  std::lock_guard lock(mu_);
  std::set<std::string> out;
  for (const auto& [name, d] : devices_) {
    if (d.state == MountState::kMounted) out.insert(name);
  }
  return out;
}

std::map<std::string, std::string> VolumeManager::AttachedVolumes() const {
  std::lock_guard lock(mu_);
  std::map<std::string, std::string> out;
  for (const auto& [name, a] : attachments_) {
    if (a.certain) out[name] = a.device_path;
  }
  return out;
}

std::map<std::string, PodVolume> VolumeManager::PodVolumes(const std::string& uid) const {
  std::lock_guard lock(mu_);
  std::map<std::string, PodVolume> out;
  auto dp = desired_.find(uid);
  if (dp == desired_.end()) return out;
  for (const auto& [key, v] : dp->second.volumes) {
    auto a = actual_.find(key);
    if (a == actual_.end() || a->second.path.empty()) continue;
    if (a->second.state != MountState::kMounted && !a->second.reconstructed) continue;
    out[v.outer_name] = {a->second.path, a->second.block, a->second.read_only};
  }
  return out;
}

bool VolumeManager::PodVolumesTornDown(const std::string& uid) const {
  std::lock_guard lock(mu_);
  const bool recorded = std::any_of(actual_.begin(), actual_.end(),
                                    [&](const auto& kv) { return kv.second.pod_uid == uid; });
  return !recorded && !executor_->AnyPending(uid + "/");
}

bool VolumeManager::ContainersAlive(const std::string& uid) const {
  return sources_.containers_alive && sources_.containers_alive(uid);
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
      if (resync) {
        VerifyActualState();
        AddPodDirsAsOrphanCandidates();
      }
      ReconcileOnce();
      lock.lock();
      if (now >= next_resync) next_resync = now + options_.resync;
      // The next time something is due without an event: the resync, a backoff ending, a
      // pod's mount deadline.
      next_deadline = next_resync;
      if (auto retry = executor_->NextRetry()) next_deadline = std::min(next_deadline, *retry);
      for (const auto& [uid, r] : reports_) {
        if (r.awaiting_mounts) next_deadline = std::min(next_deadline, r.next_timeout_event);
        if (r.retry_status_at) next_deadline = std::min(next_deadline, *r.retry_status_at);
      }
      const bool missing_plugin = std::any_of(desired_.begin(), desired_.end(),
                                              [](const auto& kv) { return kv.second.missing_plugin; });
      if (missing_plugin) {
        next_deadline = std::min(next_deadline, now + options_.missing_plugin_retry);
      }
      continue;
    }
    clock_.WaitUntil(cv_, lock, next_deadline);
  }
}

void VolumeManager::VerifyActualState() {
  // One read of the mount table for every volume: nothing per volume unless it drifted.
  auto table = host_.mounter().List();
  if (!table.ok()) {
    log::Warn("volume manager: cannot read the mount table: " + table.status().message());
    return;
  }
  std::set<std::string> mounted;
  for (const auto& m : *table) mounted.insert(m.path);
  std::lock_guard lock(mu_);
  for (auto& [key, a] : actual_) {
    if (a.state != MountState::kMounted || a.path.empty()) continue;
    std::error_code ec;
    const bool gone = a.mount_point
                          ? !mounted.count(a.path)
                          : !std::filesystem::exists(std::filesystem::symlink_status(a.path, ec));
    if (!gone) continue;
    log::Warn("volume " + a.dir_name + " of pod " + a.pod_uid + " is no longer " +
              (a.mount_point ? "mounted at " : "at ") + a.path + "; setting it up again");
    a.state = MountState::kUncertain;
  }
  for (auto& [name, d] : devices_) {
    if (d.state != MountState::kMounted || mounted.count(d.mount_path)) continue;
    log::Warn("device of volume " + name + " is no longer mounted at " + d.mount_path +
              "; mounting it again");
    d.state = MountState::kUncertain;
  }
}

void VolumeManager::ReconcileOnce() {
  std::map<std::string, DesiredPod> desired;
  for (auto& pod : sources_.pods()) {
    if (!PodNeedsVolumes(*pod) && !ContainersAlive(pod->metadata.uid)) continue;
    desired.emplace(pod->metadata.uid, Populate(pod, sources_.lookups, plugins_));
  }
  {
    std::lock_guard lock(mu_);
    desired_ = desired;
  }
  StartOperations(desired);
  RemoveOrphanedPodDirs(desired);
  ReportPods(desired);

  std::vector<std::string> in_use;
  for (const auto& [uid, dp] : desired) {
    for (const auto& [key, v] : dp.volumes) {
      if (v.device_mount || v.attach) in_use.push_back(v.unique_name);
    }
  }
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

void VolumeManager::StartOperations(const std::map<std::string, DesiredPod>& desired) {
  std::set<std::string> wanted, wanted_devices, wanted_attachments, wanted_resizes;
  for (const auto& [uid, dp] : desired) {
    for (const auto& [key, v] : dp.volumes) {
      wanted.insert(key);
      if (v.fs_resize) wanted_resizes.insert(v.unique_name);
      if (v.device_mount) wanted_devices.insert(v.unique_name);
      if (v.attach) wanted_attachments.insert(v.unique_name);
    }
  }
  // Tear-downs first: what is mounted and no longer wanted, then devices no pod uses, then
  // attachments of volumes no longer mounted anywhere on the node.
  std::vector<std::pair<std::string, ActualVolume>> unwanted;
  std::vector<std::pair<std::string, ActualDevice>> unused_devices;
  std::vector<std::pair<std::string, ActualAttachment>> unused_attachments;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, a] : actual_) {
      if (wanted.count(key)) continue;
      // A pod that still exists keeps what it has while one of its volumes cannot be resolved
      // for a moment (a claim or volume missing from a cache): a pod's volumes only change
      // when it goes.
      auto pod = desired.find(a.pod_uid);
      if (pod != desired.end() && !pod->second.unresolved.empty()) continue;
      // Containers still running (of a pod already gone from the API) keep their volumes.
      if (ContainersAlive(a.pod_uid)) continue;
      unwanted.emplace_back(key, a);
    }
    for (auto& [name, d] : devices_) {
      if (wanted_devices.count(name)) continue;
      const bool used = std::any_of(actual_.begin(), actual_.end(), [&](const auto& kv) {
        const ActualVolume& a = kv.second;
        return UniqueVolumeName(a.plugin_name, a.dir_name) == name;
      });
      if (used) continue;
      // Going away: no pod binds from it from now on (a new user waits for it to be mounted
      // again).
      d.state = MountState::kUncertain;
      unused_devices.emplace_back(name, d);
    }
    for (auto& [name, at] : attachments_) {
      if (wanted_attachments.count(name) || devices_.count(name) ||
          executor_->IsPending("device/" + name)) {
        continue;
      }
      const bool used = std::any_of(actual_.begin(), actual_.end(), [&](const auto& kv) {
        return UniqueVolumeName(kv.second.plugin_name, kv.second.dir_name) == name;
      });
      if (used) continue;
      at.certain = false;  // going away: a new user attaches it again
      unused_attachments.emplace_back(name, at);
    }
  }
  for (const auto& [key, a] : unwanted) TearDown(key, a);
  for (const auto& [name, d] : unused_devices) UnmountDevice(name, d);
  for (const auto& [name, a] : unused_attachments) Detach(name, a);
  {
    // Backoff is kept only for operations that may still run.
    std::set<std::string> keep = wanted;
    std::lock_guard lock(mu_);
    for (const auto& [key, a] : actual_) keep.insert(key);
    for (const auto& [name, d] : devices_) keep.insert("device/" + name);
    for (const auto& name : wanted_devices) keep.insert("device/" + name);
    for (const auto& [name, a] : attachments_) keep.insert("attach/" + name);
    for (const auto& name : wanted_attachments) keep.insert("attach/" + name);
    for (const auto& name : wanted_resizes) keep.insert("resize/" + name);
    // What was grown is forgotten once no claim asks for it.
    for (auto it = fs_resized_.begin(); it != fs_resized_.end();) {
      it = wanted_resizes.count(it->first) ? std::next(it) : fs_resized_.erase(it);
    }
    executor_->ForgetAllExcept(keep);
  }

  // Then set-ups: an attachment, then a device, before the pods that use them; a pod volume
  // when it is not (or no longer, or not surely) set up as asked. Each operation finishing
  // wakes the reconciler for the next step.
  for (const auto& [uid, dp] : desired) {
    for (const auto& [key, v] : dp.volumes) {
      enum { kNothing, kAttach, kDevice, kSetUp } action = kSetUp;
      std::string device_path;
      {
        std::lock_guard lock(mu_);
        auto at = attachments_.find(v.unique_name);
        auto d = devices_.find(v.unique_name);
        auto a = actual_.find(key);
        if (v.attach && (at == attachments_.end() || !at->second.certain ||
                         executor_->IsPending("attach/" + v.unique_name))) {
          action = kAttach;
        } else if (v.device_mount &&
                   (d == devices_.end() || d->second.state != MountState::kMounted ||
                    executor_->IsPending("device/" + v.unique_name))) {
          action = kDevice;
          if (at != attachments_.end()) device_path = at->second.device_path;
        } else if (a != actual_.end() && a->second.state == MountState::kMounted &&
                   a->second.content_version == v.content_version) {
          action = kNothing;
        }
      }
      if (action == kAttach) Attach(dp, v);
      if (action == kDevice) MountDevice(dp, v, device_path);
      if (action == kSetUp) SetUp(key, dp, v);
      if (action != kNothing || !v.fs_resize) continue;
      volume::NodeExpandOptions o;
      {
        std::lock_guard lock(mu_);
        auto grown = fs_resized_.find(v.unique_name);
        if (grown != fs_resized_.end() && grown->second >= v.fs_resize->new_size.Value()) continue;
        if (auto at = attachments_.find(v.unique_name); at != attachments_.end()) {
          o.device_path = at->second.device_path;
        }
        auto d = devices_.find(v.unique_name);
        auto a = actual_.find(key);
        if (d != devices_.end()) {
          o.device_mount_path = d->second.mount_path;
        } else if (a != actual_.end()) {
          o.device_mount_path = a->second.path;
        }
      }
      o.new_size = v.fs_resize->new_size.Value();
      o.old_size = v.fs_resize->old_size;
      NodeExpand(dp, v, std::move(o));
    }
  }
}

void VolumeManager::NodeExpand(const DesiredPod& dp, const DesiredVolume& v,
                               volume::NodeExpandOptions o) {
  std::shared_ptr<const api::Pod> pod = dp.pod;
  executor_->Run(
      "resize/" + v.unique_name,
      [this, v, o]() -> Status {
        KVOL_RETURN_IF_ERROR(v.plugin->AsNodeExpandable()->NodeExpand(v.spec, o));
        return FinishClaimResize(*v.fs_resize);
      },
      [this, pod, v, o](Status s) {
        if (s.ok()) {
          {
            std::lock_guard lock(mu_);
            fs_resized_[v.unique_name] = o.new_size;
          }
          PodEvent(*pod, "Normal", "FileSystemResizeSuccessful",
                   "MountVolume.NodeExpandVolume succeeded for volume \"" + v.spec.Name() +
                       "\" " + host_.NodeName());
          return;
        }
        PodEvent(*pod, "Warning", "FileSystemResizeFailed",
                 "MountVolume.NodeExpandVolume failed for volume \"" + v.spec.Name() + "\" : " +
                     s.message());
      },
      "node-expand");
}

Status VolumeManager::FinishClaimResize(const DesiredVolume::FsResize& r) {
  auto written = client::Mutate<api::PersistentVolumeClaim>(
      client_.resource<api::PersistentVolumeClaim>(), r.claim_namespace, r.claim_name,
      [&](api::PersistentVolumeClaim& c) {
        if (c.metadata.uid != r.claim_uid) return false;
        auto& conds = c.status.conditions;
        conds.erase(std::remove_if(conds.begin(), conds.end(),
                                   [](const auto& x) {
                                     return x.type == api::kClaimFileSystemResizePending;
                                   }),
                    conds.end());
        c.status.capacity["storage"] = r.new_size;
        c.status.allocated_resource_statuses.erase("storage");
        return true;
      },
      /*status=*/true);
  if (!written.ok() && !api::IsNotFound(written.error())) {
    return UnavailableError("updating the capacity of claim " + r.claim_namespace + "/" +
                            r.claim_name + ": " + written.error().message);
  }
  return OkStatus();
}

void VolumeManager::Attach(const DesiredPod& dp, const DesiredVolume& v) {
  std::shared_ptr<const api::Pod> pod = dp.pod;
  const std::string record = AttachmentRecord(host_, v.plugin->Name(), v.spec.Name());
  struct Result {
    bool attached = false;  // Attach returned; what failed after was WaitForAttach
    std::string device;
  };
  auto result = std::make_shared<Result>();
  executor_->Run(
      "attach/" + v.unique_name,
      [this, v, record, result]() -> Status {
        // Recorded before it starts: after a crash half-way, the volume is detached unless a
        // pod still needs it.
        KVOL_RETURN_IF_ERROR(WriteRecord(record, ""));
        volume::AttachableVolumePlugin* at = v.plugin->AsAttachable();
        KVOL_ASSIGN_OR_RETURN(std::string device, at->Attach(v.spec, host_.NodeName()));
        result->attached = true;
        KVOL_ASSIGN_OR_RETURN(result->device, at->WaitForAttach(v.spec, device));
        return WriteRecord(record, result->device);
      },
      [this, pod, v, result](Status s) {
        {
          std::lock_guard lock(mu_);
          ActualAttachment& a = attachments_[v.unique_name];
          a.plugin_name = std::string(v.plugin->Name());
          a.volume_name = v.spec.Name();
          if (s.ok()) a.device_path = result->device;
          a.certain = s.ok();
        }
        if (s.ok()) return;
        if (result->attached) {
          PodEvent(*pod, "Warning", "FailedMount",
                   "MountVolume.WaitForAttach failed for volume \"" + v.spec.Name() +
                       "\" : " + s.message());
        } else {
          PodEvent(*pod, "Warning", "FailedAttachVolume",
                   "AttachVolume.Attach failed for volume \"" + v.spec.Name() + "\" : " +
                       s.message());
        }
      },
      "attach");
}

void VolumeManager::Detach(const std::string& unique_name, const ActualAttachment& a) {
  executor_->Run(
      "attach/" + unique_name,
      [this, a]() -> Status {
        volume::VolumePlugin* plugin = plugins_.FindByName(a.plugin_name);
        if (!plugin || !plugin->AsAttachable()) {
          return NotFoundError("no attachable volume plugin named " + a.plugin_name);
        }
        KVOL_RETURN_IF_ERROR(plugin->AsAttachable()->Detach(a.volume_name, host_.NodeName()));
        std::error_code ec;
        fs::remove(AttachmentRecord(host_, a.plugin_name, a.volume_name), ec);
        if (ec) return InternalError("removing the attachment record: " + ec.message());
        return OkStatus();
      },
      [this, unique_name](Status s) {
        if (!s.ok()) {
          log::Warn("DetachVolume.Detach failed for volume \"" + unique_name + "\": " +
                    s.message());
          return;
        }
        std::lock_guard lock(mu_);
        attachments_.erase(unique_name);
      },
      "detach");
}

void VolumeManager::MountDevice(const DesiredPod& dp, const DesiredVolume& v,
                                const std::string& device_path) {
  std::shared_ptr<const api::Pod> pod = dp.pod;
  executor_->Run(
      "device/" + v.unique_name,
      [v, device_path]() -> Status {
        return v.plugin->AsDeviceMountable()->MountDevice(v.spec, device_path);
      },
      [this, pod, v](Status s) {
        {
          std::lock_guard lock(mu_);
          if (s.ok() || s.code() == StatusCode::kDeadlineExceeded) {
            ActualDevice& d = devices_[v.unique_name];
            d.plugin_name = std::string(v.plugin->Name());
            d.mount_path = v.plugin->AsDeviceMountable()->GetDeviceMountPath(v.spec);
            d.state = s.ok() ? MountState::kMounted : MountState::kUncertain;
          }
        }
        if (!s.ok()) {
          PodEvent(*pod, "Warning", "FailedMount",
                   "MountVolume.MountDevice failed for volume \"" + v.spec.Name() +
                       "\" : " + s.message());
        }
      },
      "mount-device");
}

void VolumeManager::UnmountDevice(const std::string& unique_name, const ActualDevice& d) {
  executor_->Run(
      "device/" + unique_name,
      [this, d]() -> Status {
        volume::VolumePlugin* plugin = plugins_.FindByName(d.plugin_name);
        if (!plugin || !plugin->AsDeviceMountable()) {
          return NotFoundError("no device-mountable volume plugin named " + d.plugin_name);
        }
        return plugin->AsDeviceMountable()->UnmountDevice(d.mount_path);
      },
      [this, unique_name, d](Status s) {
        if (!s.ok()) {
          log::Warn("UnmountDevice failed for volume \"" + unique_name + "\" at " + d.mount_path +
                    ": " + s.message());
          return;
        }
        std::lock_guard lock(mu_);
        devices_.erase(unique_name);
      },
      "unmount-device");
}

void VolumeManager::SetUp(const std::string& key, const DesiredPod& dp, const DesiredVolume& v) {
  std::shared_ptr<const api::Pod> pod = dp.pod;
  // Where the volume ended up, and whether it is a mount there: what resyncs check.
  struct Result {
    std::string path;
    bool mount_point = false;
    bool read_only = false;
  };
  auto result = std::make_shared<Result>();
  executor_->Run(
      key,
      [this, pod, v, result]() -> Status {
        if (v.block) {
          result->path =
              host_.PodDeviceDir(pod->metadata.uid, v.plugin->Name(), v.spec.Name());
          return v.plugin->AsBlock()->MapPodDevice(v.spec, pod->metadata.uid);
        }
        KVOL_ASSIGN_OR_RETURN(auto mounter, v.plugin->NewMounter(v.spec, *pod));
        result->path = mounter->GetPath();
        result->read_only = mounter->ReadOnly();
        KVOL_RETURN_IF_ERROR(mounter->SetUp());
        auto mounted = host_.mounter().IsMountPoint(result->path);
        result->mount_point = mounted.ok() && *mounted;
        return OkStatus();
      },
      [this, key, pod, v, result](Status s) {
        {
          std::lock_guard lock(mu_);
          auto it = actual_.find(key);
          const bool was_mounted = it != actual_.end() && it->second.state == MountState::kMounted;
          // A set-up that failed may still have made something (a tmpfs before its files):
          // recorded as uncertain, so that it is torn down if the pod goes. A refresh that
          // failed (a ConfigMap deleted) leaves the volume as it was.
          std::error_code ec;
          const bool left_something =
              !result->path.empty() &&
              std::filesystem::exists(std::filesystem::symlink_status(result->path, ec));
          const bool timed_out = s.code() == StatusCode::kDeadlineExceeded;
          if (s.ok() || timed_out || (!was_mounted && (left_something || it != actual_.end()))) {
            ActualVolume& a = actual_[key];
            a.reconstructed = false;
            a.pod_uid = pod->metadata.uid;
            a.plugin_name = std::string(v.plugin->Name());
            a.dir_name = v.spec.Name();
            a.block = v.block;
            a.path = result->path;
            a.mount_point = result->mount_point;
            a.read_only = result->read_only;
            a.state = s.ok() ? MountState::kMounted : MountState::kUncertain;
            a.content_version = s.ok() ? v.content_version : std::string();
          }
        }
        if (!s.ok()) {
          const std::string what = v.block ? "MapVolume.MapPodDevice" : "MountVolume.SetUp";
          PodEvent(*pod, "Warning", v.block ? "FailedMapVolume" : "FailedMount",
                   what + " failed for volume \"" + v.spec.Name() + "\" : " + s.message());
        }
      },
      "set-up");
}

void VolumeManager::TearDown(const std::string& key, const ActualVolume& a) {
  executor_->Run(
      key,
      [this, a]() -> Status {
        volume::VolumePlugin* plugin = plugins_.FindByName(a.plugin_name);
        if (!plugin) return NotFoundError("no volume plugin named " + a.plugin_name);
        if (a.block) {
          if (!plugin->AsBlock()) return NotFoundError(a.plugin_name + " maps no block volumes");
          return plugin->AsBlock()->UnmapPodDevice(a.dir_name, a.pod_uid);
        }
        KVOL_ASSIGN_OR_RETURN(auto unmounter, plugin->NewUnmounter(a.dir_name, a.pod_uid));
        return unmounter->TearDown();
      },
      [this, key, a](Status s) {
        if (!s.ok()) {
          log::Warn("UnmountVolume.TearDown failed for volume \"" + a.dir_name + "\" (pod " +
                    a.pod_uid + ", plugin " + a.plugin_name + "): " + s.message());
          return;
        }
        std::lock_guard lock(mu_);
        actual_.erase(key);
        orphan_candidates_.insert(a.pod_uid);
      },
      "tear-down");
}

// ---- pods' status and events ----------------------------------------------------------------

void VolumeManager::ReportPods(const std::map<std::string, DesiredPod>& desired) {
  const os::MonoTime now = clock_.Monotonic();
  for (auto it = reports_.begin(); it != reports_.end();) {
    it = desired.count(it->first) ? std::next(it) : reports_.erase(it);
  }
  for (const auto& [uid, dp] : desired) {
    std::vector<std::string> unmounted, unattached;
    {
      std::lock_guard lock(mu_);
      for (const auto& [key, v] : dp.volumes) {
        if (v.attach) {
          auto at = attachments_.find(v.unique_name);
          if (at == attachments_.end() || !at->second.certain) unattached.push_back(v.outer_name);
        }
        // A volume whose contents are only being refreshed is still there for the pod.
        auto a = actual_.find(key);
        const bool there = a != actual_.end() &&
                           (a->second.state == MountState::kMounted || a->second.reconstructed);
        if (!there) unmounted.push_back(v.outer_name);
      }
    }
    for (const auto& [name, why] : dp.unresolved) {
      unmounted.push_back(name);
      unattached.push_back(name);
    }
    bool ready = unmounted.empty();
    auto [rit, added] = reports_.try_emplace(uid);
    PodReport& r = rit->second;
    if (added) r.next_timeout_event = now + options_.mount_timeout;
    // Every volume is there: the containers' subPaths must resolve inside their volumes.
    std::string subpath_error;
    if (ready && !r.ready_written) {
      subpath_error = PrepareSubPaths(dp);
      if (!subpath_error.empty()) {
        ready = false;
        if (subpath_error != r.subpath_reported) {
          PodEvent(*dp.pod, "Warning", "Failed", subpath_error);
          r.subpath_reported = subpath_error;
        }
      }
    }
    const std::string prefix = "Unable to attach or mount volumes: unmounted volumes=[" +
                               JoinSorted(unmounted) + "], unattached volumes=[" +
                               JoinSorted(unattached) + "]: ";
    if (!dp.unresolved.empty()) {
      const std::string msg = prefix + dp.unresolved.begin()->second;
      if (msg != r.unresolved_reported) {
        PodEvent(*dp.pod, "Warning", "FailedMount", msg);
        r.unresolved_reported = msg;
      }
    } else {
      r.unresolved_reported.clear();
    }
    r.awaiting_mounts = !unmounted.empty();
    if (!unmounted.empty() && now >= r.next_timeout_event) {
      PodEvent(*dp.pod, "Warning", "FailedMount", prefix + "timed out waiting for the condition");
      r.next_timeout_event = now + options_.mount_timeout;
    }
    const bool retry_due = !r.retry_status_at || now >= *r.retry_status_at;
    if (retry_due &&
        (!r.status_written || r.ready_written != ready || r.message_written != subpath_error)) {
      const std::string message = ready ? ""
                                  : !subpath_error.empty()
                                      ? subpath_error
                                      : "unmounted volumes=[" + JoinSorted(unmounted) + "]";
      Status s = WritePodStatus(*dp.pod, ready, message);
      if (s.ok()) {
        r.retry_status_at.reset();
        r.status_written = true;
        r.ready_written = ready;
        r.message_written = subpath_error;
      } else {
        log::Warn("pod " + PodKey(*dp.pod) + ": status not written: " + s.message());
        r.retry_status_at = now + std::chrono::seconds(1);
      }
    }
  }
}

std::string VolumeManager::PrepareSubPaths(const DesiredPod& dp) {
  std::vector<const api::Container*> containers;
  for (const auto& c : dp.pod->spec.init_containers) containers.push_back(&c);
  for (const auto& c : dp.pod->spec.containers) containers.push_back(&c);
  for (const api::Container* c : containers) {
    for (const auto& m : c->volume_mounts) {
      if (m.sub_path.empty()) continue;
      std::string path;
      {
        std::lock_guard lock(mu_);
        for (const auto& [key, v] : dp.volumes) {
          if (v.outer_name != m.name) continue;
          if (auto a = actual_.find(key); a != actual_.end()) path = a->second.path;
        }
      }
      if (path.empty()) continue;  // not a volume of this pod: validation's concern
      auto resolved = volume::util::PrepareSubPath(path, m.sub_path);
      if (!resolved.ok()) {
        return "Error: failed to prepare subPath for volumeMount \"" + m.name +
               "\" of container \"" + c->name + "\": " + resolved.status().message();
      }
    }
  }
  return "";
}

Status VolumeManager::WritePodStatus(const api::Pod& pod, bool ready, const std::string& message) {
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
        cond.type = std::string(kVolumesReady);
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

void VolumeManager::PodEvent(const api::Pod& pod, std::string_view type, std::string_view reason,
                             std::string message) {
  if (events_) events_(client::ReferenceTo(pod), type, reason, std::move(message));
}

}  // namespace kvol::node::volumemanager
