#include "node/volumemanager/operation_generator.h"

#include <filesystem>
#include <memory>

#include "base/log.h"
#include "node/volumemanager/operation_metrics.h"
#include "os/files.h"

namespace kvol::node::volumemanager {
namespace fs = std::filesystem;

namespace {

// Writes `device` as the record at `path`, whole and synced: a crash leaves the old record or
// the new one.
Status WriteRecord(const std::string& path, const std::string& device) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec)
    return InternalError("mkdir " + fs::path(path).parent_path().string() + ": " + ec.message());
  return os::WriteFileAtomically(path, device, 0600);
}

}  // namespace

std::string AttachmentRecord(volume::Host& host, std::string_view plugin,
                             std::string_view volume_name) {
  return host.PluginDir(plugin) + "/attachments/" + std::string(volume_name);
}

OperationGenerator::OperationGenerator(ActualStateOfWorld& actual, OperationExecutor& executor,
                                       volume::Host& host, volume::PluginManager& plugins,
                                       client::EventSink events, GeneratorHooks hooks)
    : actual_(actual),
      executor_(executor),
      host_(host),
      plugins_(plugins),
      events_(std::move(events)),
      hooks_(std::move(hooks)) {}

bool OperationGenerator::IsPending(const std::string& key) const {
  return executor_.IsPending(key);
}

void OperationGenerator::ForgetBackoffExcept(const std::set<std::string>& keep) {
  executor_.ForgetAllExcept(keep);
}

void OperationGenerator::PodEvent(const api::Pod& pod, std::string_view type,
                                  std::string_view reason, std::string message) const {
  if (events_) events_(client::ReferenceTo(pod), type, reason, std::move(message));
}

void OperationGenerator::Attach(const DesiredPod& dp, const DesiredVolume& v) {
  std::shared_ptr<const api::Pod> pod = dp.pod;
  const std::string record = AttachmentRecord(host_, v.plugin->Name(), v.spec.Name());
  struct Result {
    bool attached = false;  // Attach returned; what failed after was WaitForAttach
    std::string device;
  };
  auto result = std::make_shared<Result>();
  executor_.Run(
      AttachOperationKey(v.unique_name),
      Timed(std::string(v.plugin->Name()), "volume_attach",
            [this, v, record, result]() -> Status {
              // Recorded before it starts: after a crash half-way, the volume is detached unless a
              // pod still needs it.
              KVOL_RETURN_IF_ERROR(WriteRecord(record, ""));
              volume::AttachableVolumePlugin* at = v.plugin->AsAttachable();
              KVOL_ASSIGN_OR_RETURN(std::string device, at->Attach(v.spec, host_.NodeName()));
              result->attached = true;
              KVOL_ASSIGN_OR_RETURN(result->device, at->WaitForAttach(v.spec, device));
              return WriteRecord(record, result->device);
            }),
      [this, pod, v, result](Status s) {
        std::string plugin(v.plugin->Name());
        if (s.ok()) {
          actual_.MarkAttached(v.unique_name, std::move(plugin), v.spec.Name(), result->device);
          return;
        }
        actual_.MarkAttachUncertain(v.unique_name, std::move(plugin), v.spec.Name());
        if (result->attached) {
          PodEvent(*pod, "Warning", "FailedMount",
                   "MountVolume.WaitForAttach failed for volume \"" + v.spec.Name() +
                       "\" : " + s.message());
        } else {
          PodEvent(
              *pod, "Warning", "FailedAttachVolume",
              "AttachVolume.Attach failed for volume \"" + v.spec.Name() + "\" : " + s.message());
        }
      },
      "attach");
}

void OperationGenerator::VerifyAttached(const DesiredPod& dp, const DesiredVolume& v,
                                        const std::string& device_path) {
  std::shared_ptr<const api::Pod> pod = dp.pod;
  auto device = std::make_shared<std::string>();
  executor_.Run(
      AttachOperationKey(v.unique_name),
      Timed(std::string(v.plugin->Name()), "verify_controller_attached_volume",
            [v, device_path, device]() -> Status {
              KVOL_ASSIGN_OR_RETURN(*device,
                                    v.plugin->AsAttachable()->WaitForAttach(v.spec, device_path));
              return OkStatus();
            }),
      [this, pod, v, device](Status s) {
        std::string plugin(v.plugin->Name());
        if (s.ok()) {
          actual_.MarkAttached(v.unique_name, std::move(plugin), v.spec.Name(), *device);
          return;
        }
        actual_.MarkAttachUncertain(v.unique_name, std::move(plugin), v.spec.Name());
        PodEvent(*pod, "Warning", "FailedMount",
                 "MountVolume.WaitForAttach failed for volume \"" + v.spec.Name() +
                     "\" : " + s.message());
      },
      "verify-attached");
}

void OperationGenerator::ForgetAttachment(const std::string& unique_name,
                                          const ActualAttachment& a) {
  // An attachment this agent made before the controller managed the node is the controller's
  // to detach now; only the record of it goes.
  std::error_code ec;
  fs::remove(AttachmentRecord(host_, a.plugin_name, a.volume_name), ec);
  actual_.MarkDetached(unique_name);
}

void OperationGenerator::Detach(const std::string& unique_name, const ActualAttachment& a) {
  executor_.Run(
      AttachOperationKey(unique_name),
      Timed(a.plugin_name, "volume_detach",
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
            }),
      [this, unique_name](Status s) {
        if (!s.ok()) {
          log::Warn("DetachVolume.Detach failed for volume \"" + unique_name +
                    "\": " + s.message());
          return;
        }
        actual_.MarkDetached(unique_name);
      },
      "detach");
}

void OperationGenerator::MountDevice(const DesiredPod& dp, const DesiredVolume& v,
                                     const std::string& device_path) {
  std::shared_ptr<const api::Pod> pod = dp.pod;
  auto mount_point = std::make_shared<bool>(true);
  executor_.Run(
      DeviceOperationKey(v.unique_name),
      Timed(std::string(v.plugin->Name()), "mount_device",
            [this, v, device_path, mount_point]() -> Status {
              auto* dm = v.plugin->AsDeviceMountable();
              KVOL_RETURN_IF_ERROR(dm->MountDevice(v.spec, device_path));
              auto mounted = host_.mounter().IsMountPoint(dm->GetDeviceMountPath(v.spec));
              // A plugin may have had nothing to mount (a CSI driver that stages nothing).
              *mount_point = mounted.ok() && *mounted;
              return OkStatus();
            }),
      [this, pod, v, mount_point](Status s) {
        std::string plugin(v.plugin->Name());
        std::string path = v.plugin->AsDeviceMountable()->GetDeviceMountPath(v.spec);
        if (s.ok()) {
          actual_.MarkDeviceMounted(v.unique_name, std::move(plugin), std::move(path),
                                    *mount_point);
          return;
        }
        // A mount that timed out may yet have happened: unmounted if no pod wants it.
        if (s.code() == StatusCode::kDeadlineExceeded) {
          actual_.MarkDeviceUncertain(v.unique_name, std::move(plugin), std::move(path));
        }
        // A block volume's stage is MapVolume.SetUpDevice in kubelet's words.
        const std::string what = v.block ? "MapVolume.SetUpDevice" : "MountVolume.MountDevice";
        PodEvent(*pod, "Warning", v.block ? "FailedMapVolume" : "FailedMount",
                 what + " failed for volume \"" + v.spec.Name() + "\" : " + s.message());
      },
      "mount-device");
}

void OperationGenerator::UnmountDevice(const std::string& unique_name, const ActualDevice& d) {
  executor_.Run(
      DeviceOperationKey(unique_name),
      Timed(d.plugin_name, "unmount_device",
            [this, d]() -> Status {
              volume::VolumePlugin* plugin = plugins_.FindByName(d.plugin_name);
              if (!plugin || !plugin->AsDeviceMountable()) {
                return NotFoundError("no device-mountable volume plugin named " + d.plugin_name);
              }
              return plugin->AsDeviceMountable()->UnmountDevice(d.mount_path);
            }),
      [this, unique_name, d](Status s) {
        if (!s.ok()) {
          log::Warn("UnmountDevice failed for volume \"" + unique_name + "\" at " + d.mount_path +
                    ": " + s.message());
          return;
        }
        actual_.MarkDeviceUnmounted(unique_name);
      },
      "unmount-device");
}

void OperationGenerator::SetUp(const std::string& key, const DesiredPod& dp,
                               const DesiredVolume& v) {
  std::shared_ptr<const api::Pod> pod = dp.pod;
  // Where the volume ended up, and whether it is a mount there: what resyncs check.
  struct Result {
    std::string path;
    bool mount_point = false;
    bool read_only = false;
  };
  auto result = std::make_shared<Result>();
  executor_.Run(
      key,
      Timed(std::string(v.plugin->Name()), "volume_mount",
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
            }),
      [this, key, pod, v, result](Status s) {
        // A set-up that failed may still have made something (a tmpfs before its files):
        // recorded as uncertain, so that it is torn down if the pod goes. A refresh that
        // failed (a ConfigMap deleted) leaves the volume as it was.
        const std::optional<ActualVolume> before = actual_.Volume(key);
        const bool was_mounted = before && before->state == MountState::kMounted;
        std::error_code ec;
        const bool left_something =
            !result->path.empty() && fs::exists(fs::symlink_status(result->path, ec));
        const bool timed_out = s.code() == StatusCode::kDeadlineExceeded;
        if (s.ok() || timed_out || (!was_mounted && (left_something || before))) {
          ActualVolume a;
          a.pod_uid = pod->metadata.uid;
          a.plugin_name = std::string(v.plugin->Name());
          a.dir_name = v.spec.Name();
          a.block = v.block;
          a.path = result->path;
          a.mount_point = result->mount_point;
          a.read_only = result->read_only;
          if (s.ok()) {
            a.content_version = v.content_version;
            actual_.MarkVolumeMounted(key, std::move(a));
          } else {
            actual_.MarkVolumeUncertain(key, std::move(a));
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

void OperationGenerator::TearDown(const std::string& key, const ActualVolume& a) {
  executor_.Run(
      key,
      Timed(a.plugin_name, "volume_unmount",
            [this, a]() -> Status {
              volume::VolumePlugin* plugin = plugins_.FindByName(a.plugin_name);
              if (!plugin) return NotFoundError("no volume plugin named " + a.plugin_name);
              if (a.block) {
                if (!plugin->AsBlock())
                  return NotFoundError(a.plugin_name + " maps no block volumes");
                return plugin->AsBlock()->UnmapPodDevice(a.dir_name, a.pod_uid);
              }
              KVOL_ASSIGN_OR_RETURN(auto unmounter, plugin->NewUnmounter(a.dir_name, a.pod_uid));
              return unmounter->TearDown();
            }),
      [this, key, a](Status s) {
        if (!s.ok()) {
          log::Warn("UnmountVolume.TearDown failed for volume \"" + a.dir_name + "\" (pod " +
                    a.pod_uid + ", plugin " + a.plugin_name + "): " + s.message());
          return;
        }
        actual_.MarkVolumeUnmounted(key);
        if (hooks_.on_torn_down) hooks_.on_torn_down(a.pod_uid);
      },
      "tear-down");
}

void OperationGenerator::NodeExpand(const DesiredPod& dp, const DesiredVolume& v,
                                    volume::NodeExpandOptions o) {
  std::shared_ptr<const api::Pod> pod = dp.pod;
  executor_.Run(
      ResizeOperationKey(v.unique_name),
      Timed(std::string(v.plugin->Name()), "volume_fs_resize",
            [this, v, o]() -> Status {
              KVOL_RETURN_IF_ERROR(v.plugin->AsNodeExpandable()->NodeExpand(v.spec, o));
              return hooks_.finish_resize ? hooks_.finish_resize(*v.fs_resize) : OkStatus();
            }),
      [this, pod, v, o](Status s) {
        if (s.ok()) {
          actual_.MarkResized(v.unique_name, o.new_size);
          PodEvent(*pod, "Normal", "FileSystemResizeSuccessful",
                   "MountVolume.NodeExpandVolume succeeded for volume \"" + v.spec.Name() + "\" " +
                       host_.NodeName());
          return;
        }
        PodEvent(*pod, "Warning", "FileSystemResizeFailed",
                 "MountVolume.NodeExpandVolume failed for volume \"" + v.spec.Name() +
                     "\" : " + s.message());
      },
      "node-expand");
}

}  // namespace kvol::node::volumemanager
