// The Node service: stage formats and mounts the volume's loop device once per node, publish
// bind-mounts it (or the device itself, for a raw block volume) where the pod wants it.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>

#include "base/strings.h"
#include "csi/driver/services.h"
#include "os/files.h"
#include "os/format.h"

namespace kvol::csi::driver {
namespace {

namespace fs = std::filesystem;

Status MakeDirs(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return InternalError("cannot create " + path + ": " + ec.message());
  return OkStatus();
}

// The mount at `path` (the topmost), if any.
StatusOr<std::optional<os::MountPoint>> MountAt(os::Mounter& m, const std::string& path) {
  // Whether anything is mounted there, from the kernel; the table, which grows with every
  // volume, is read only to say what.
  auto mounted = m.IsMountPoint(path);
  if (!mounted.ok() && mounted.status().code() == StatusCode::kNotFound) {
    return std::optional<os::MountPoint>();
  }
  if (!mounted.ok()) return mounted.status();
  if (!*mounted) return std::optional<os::MountPoint>();
  KVOL_ASSIGN_OR_RETURN(auto mounts, m.List());
  std::optional<os::MountPoint> found;
  for (auto& mp : mounts) {
    if (mp.path == path) found = std::move(mp);
  }
  return found;
}

// Unmounts everything mounted at `path`.
Status UnmountAll(os::Mounter& m, const std::string& path) {
  for (int i = 0; i < 16; ++i) {
    auto mounted = m.IsMountPoint(path);
    if (!mounted.ok())
      return mounted.status().code() == StatusCode::kNotFound ? OkStatus() : mounted.status();
    if (!*mounted) return OkStatus();
    KVOL_RETURN_IF_ERROR(m.Unmount(path));
  }
  return InternalError("cannot unmount " + path + ": still mounted after 16 unmounts");
}

bool ReadOnly(const std::vector<std::string>& options) {
  for (const auto& o : options) {
    if (o == "ro") return true;
  }
  return false;
}

// Whether this process may grow a mounted ext4 filesystem (the kernel asks for
// CAP_SYS_RESOURCE).
bool HasSysResource() {
  std::string status;
  if (!os::ReadFile("/proc/self/status", &status).ok()) return false;
  size_t at = status.find("CapEff:");
  if (at == std::string::npos) return false;
  const uint64_t caps = std::strtoull(status.c_str() + at + 7, nullptr, 16);
  return caps & (uint64_t{1} << 24);  // CAP_SYS_RESOURCE
}

// The volume context key kubelet sets on an inline ephemeral volume.
bool IsEphemeral(const google::protobuf::Map<std::string, std::string>& ctx) {
  auto it = ctx.find("csi.storage.k8s.io/ephemeral");
  return it != ctx.end() && it->second == "true";
}

// "64Mi", "1Gi", "1048576": bytes; nullopt when not a size.
std::optional<int64_t> ParseSize(const std::string& text) {
  static const std::pair<const char*, int> kSuffixes[] = {
      {"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}};
  std::string digits = text;
  int shift = 0;
  for (const auto& [suffix, bits] : kSuffixes) {
    if (text.size() > 2 && text.ends_with(suffix)) {
      digits = text.substr(0, text.size() - 2);
      shift = bits;
    }
  }
  int64_t n = 0;
  if (!ParseInt64(digits, &n) || n <= 0 || n > (int64_t{1} << (62 - shift))) return std::nullopt;
  return n << shift;
}

}  // namespace

std::string DefaultFilesystem(int64_t device_bytes) {
  return device_bytes >= kSmallestXfs ? "xfs" : "ext4";
}

StatusOr<std::string> NodeService::DeviceOf(const std::string& id) {
  KVOL_ASSIGN_OR_RETURN(std::string device, s_.loops.Find(s_.data->VolumeFile(id)));
  if (device.empty()) {
    return FailedPreconditionError("volume " + id + " is not published to node " +
                                   s_.options.node_id + " (ControllerPublishVolume first)");
  }
  return device;
}

grpc::Status NodeService::NodeStageVolume(grpc::ServerContext*,
                                          const pb::NodeStageVolumeRequest* req,
                                          pb::NodeStageVolumeResponse*) {
  return ToGrpc(Stage(*req));
}

Status NodeService::Stage(const pb::NodeStageVolumeRequest& req) {
  if (req.volume_id().empty()) return InvalidArgumentError("volume_id is required");
  if (req.staging_target_path().empty()) {
    return InvalidArgumentError("staging_target_path is required");
  }
  if (!req.has_volume_capability()) return InvalidArgumentError("volume_capability is required");
  KVOL_RETURN_IF_ERROR(CheckCapability(req.volume_capability(), "volume_capability"));
  KeyedLocks::Hold hold(s_.locks, req.volume_id());
  if (!s_.data->VolumeById(req.volume_id())) {
    return NotFoundError("volume " + req.volume_id() + " not found");
  }
  KVOL_ASSIGN_OR_RETURN(std::string device, DeviceOf(req.volume_id()));
  if (req.volume_capability().has_block()) return OkStatus();  // the device is all it needs
  const std::string& target = req.staging_target_path();
  KVOL_ASSIGN_OR_RETURN(auto mounted, MountAt(*s_.mounter, target));
  if (mounted) {
    if (mounted->source == device) return OkStatus();
    return AlreadyExistsError("staging_target_path " + target + " already holds " +
                              mounted->source + ", not volume " + req.volume_id());
  }
  KVOL_RETURN_IF_ERROR(MakeDirs(target));
  const auto& mount = req.volume_capability().mount();
  std::vector<std::string> options(mount.mount_flags().begin(), mount.mount_flags().end());
  std::string fs_type = mount.fs_type();
  if (fs_type.empty()) {
    KVOL_ASSIGN_OR_RETURN(std::string existing, os::DetectFilesystem(s_.exec, device));
    if (existing.empty()) {
      KVOL_ASSIGN_OR_RETURN(int64_t size, s_.loops.Size(device));
      fs_type = DefaultFilesystem(size);
    }
  }
  return os::FormatAndMount(s_.exec, *s_.mounter, device, target, fs_type, options);
}

grpc::Status NodeService::NodeUnstageVolume(grpc::ServerContext*,
                                            const pb::NodeUnstageVolumeRequest* req,
                                            pb::NodeUnstageVolumeResponse*) {
  return ToGrpc(Unstage(*req));
}

Status NodeService::Unstage(const pb::NodeUnstageVolumeRequest& req) {
  if (req.volume_id().empty()) return InvalidArgumentError("volume_id is required");
  if (req.staging_target_path().empty()) {
    return InvalidArgumentError("staging_target_path is required");
  }
  KeyedLocks::Hold hold(s_.locks, req.volume_id());
  return UnmountAll(*s_.mounter, req.staging_target_path());
}

grpc::Status NodeService::NodePublishVolume(grpc::ServerContext*,
                                            const pb::NodePublishVolumeRequest* req,
                                            pb::NodePublishVolumeResponse*) {
  return ToGrpc(Publish(*req));
}

Status NodeService::Publish(const pb::NodePublishVolumeRequest& req) {
  if (req.volume_id().empty()) return InvalidArgumentError("volume_id is required");
  if (req.staging_target_path().empty() && !IsEphemeral(req.volume_context())) {
    return InvalidArgumentError("staging_target_path is required");
  }
  if (req.target_path().empty()) return InvalidArgumentError("target_path is required");
  if (!req.has_volume_capability()) return InvalidArgumentError("volume_capability is required");
  KVOL_RETURN_IF_ERROR(CheckCapability(req.volume_capability(), "volume_capability"));
  if (IsEphemeral(req.volume_context())) return PublishEphemeral(req);
  KeyedLocks::Hold hold(s_.locks, req.volume_id());
  if (!s_.data->VolumeById(req.volume_id())) {
    return NotFoundError("volume " + req.volume_id() + " not found");
  }
  const bool block = req.volume_capability().has_block();
  const std::string& target = req.target_path();
  std::string source;
  if (block) {
    KVOL_ASSIGN_OR_RETURN(source, DeviceOf(req.volume_id()));
  } else {
    auto staged = s_.mounter->IsMountPoint(req.staging_target_path());
    if (!staged.ok() || !*staged) {
      return FailedPreconditionError("volume " + req.volume_id() + " is not staged at " +
                                     req.staging_target_path() + " (NodeStageVolume first)");
    }
    source = req.staging_target_path();
  }
  KVOL_ASSIGN_OR_RETURN(auto mounted, MountAt(*s_.mounter, target));
  if (mounted) {
    if (ReadOnly(mounted->options) == req.readonly()) return OkStatus();
    return AlreadyExistsError("target_path " + target + " is already published " +
                              (req.readonly() ? "read-write" : "read-only"));
  }
  if (block) {
    KVOL_RETURN_IF_ERROR(MakeDirs(fs::path(target).parent_path()));
    int fd = open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return InternalError("cannot create " + target + ": " + std::strerror(errno));
    close(fd);
  } else {
    KVOL_RETURN_IF_ERROR(MakeDirs(target));
  }
  std::vector<std::string> options = {"bind"};
  if (req.readonly()) options.push_back("ro");
  return s_.mounter->Mount(source, target, "", options);
}

grpc::Status NodeService::NodeUnpublishVolume(grpc::ServerContext*,
                                              const pb::NodeUnpublishVolumeRequest* req,
                                              pb::NodeUnpublishVolumeResponse*) {
  return ToGrpc(Unpublish(*req));
}

Status NodeService::Unpublish(const pb::NodeUnpublishVolumeRequest& req) {
  if (req.volume_id().empty()) return InvalidArgumentError("volume_id is required");
  if (req.target_path().empty()) return InvalidArgumentError("target_path is required");
  KeyedLocks::Hold hold(s_.locks, req.volume_id());
  KVOL_RETURN_IF_ERROR(UnmountAll(*s_.mounter, req.target_path()));
  std::error_code ec;
  fs::remove(req.target_path(), ec);  // the directory or file that publishing made
  if (ec) return InternalError("cannot remove " + req.target_path() + ": " + ec.message());
  // An ephemeral volume goes with its pod: its device, then its file.
  auto v = s_.data->VolumeByName(req.volume_id());
  if (!v || !v->parameters.contains(kEphemeralKey)) return OkStatus();
  KVOL_ASSIGN_OR_RETURN(std::string device, s_.loops.Find(s_.data->VolumeFile(v->id)));
  if (!device.empty()) KVOL_RETURN_IF_ERROR(s_.loops.Detach(device));
  return s_.data->DeleteVolume(v->id);
}

Status NodeService::PublishEphemeral(const pb::NodePublishVolumeRequest& req) {
  if (req.volume_capability().has_block()) {
    return InvalidArgumentError("volume_capability: an ephemeral volume is a mount, not a block");
  }
  int64_t size = kDefaultEphemeralBytes;
  if (auto it = req.volume_context().find("size"); it != req.volume_context().end()) {
    auto parsed = ParseSize(it->second);
    if (!parsed) {
      return InvalidArgumentError("volume_context.size \"" + it->second +
                                  "\" is not a size (bytes, or with Ki, Mi, Gi or Ti)");
    }
    size = *parsed;
  }
  KeyedLocks::Hold hold(s_.locks, req.volume_id());
  const std::string& target = req.target_path();
  KVOL_ASSIGN_OR_RETURN(auto mounted, MountAt(*s_.mounter, target));
  if (mounted) return OkStatus();
  std::optional<VolumeRecord> v = s_.data->VolumeByName(req.volume_id());
  if (!v) {
    KVOL_ASSIGN_OR_RETURN(v, s_.data->CreateVolume(req.volume_id(), size, {},
                                                   {{std::string(kEphemeralKey), "true"}}));
  }
  KVOL_RETURN_IF_ERROR(s_.data->MakeFile(v->id));
  KVOL_ASSIGN_OR_RETURN(std::string device, s_.loops.Attach(s_.data->VolumeFile(v->id), false));
  KVOL_RETURN_IF_ERROR(MakeDirs(target));
  std::string fs_type = req.volume_capability().mount().fs_type();
  if (fs_type.empty()) fs_type = DefaultFilesystem(v->capacity);
  std::vector<std::string> options(req.volume_capability().mount().mount_flags().begin(),
                                   req.volume_capability().mount().mount_flags().end());
  if (req.readonly()) options.push_back("ro");
  return os::FormatAndMount(s_.exec, *s_.mounter, device, target, fs_type, options);
}

grpc::Status NodeService::NodeGetVolumeStats(grpc::ServerContext*,
                                             const pb::NodeGetVolumeStatsRequest* req,
                                             pb::NodeGetVolumeStatsResponse* resp) {
  return ToGrpc(Stats(*req, resp));
}

Status NodeService::Stats(const pb::NodeGetVolumeStatsRequest& req,
                          pb::NodeGetVolumeStatsResponse* out) {
  if (req.volume_id().empty()) return InvalidArgumentError("volume_id is required");
  if (req.volume_path().empty()) return InvalidArgumentError("volume_path is required");
  // An inline ephemeral volume is known by the name it was published with.
  auto v = s_.data->VolumeById(req.volume_id());
  if (!v) v = s_.data->VolumeByName(req.volume_id());
  if (!v || (v->id != req.volume_id() && !v->parameters.contains(kEphemeralKey))) {
    return NotFoundError("volume " + req.volume_id() + " not found");
  }
  const std::string& path = req.volume_path();
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return NotFoundError("volume_path " + path + " not found");
  KVOL_ASSIGN_OR_RETURN(bool mounted, s_.mounter->IsMountPoint(path));
  // Abnormal when what serves the volume is gone: its file, or its mount.
  const bool present = s_.data->Present(*v);
  auto* condition = out->mutable_volume_condition();
  condition->set_abnormal(!mounted || !present);
  condition->set_message(!present  ? "the volume's file is missing"
                         : mounted ? "mounted"
                                   : "volume_path " + path + " is not mounted");
  if (!present) return OkStatus();  // its usage cannot be told
  if (S_ISBLK(st.st_mode)) {
    KVOL_ASSIGN_OR_RETURN(std::string device, DeviceOf(v->id));
    KVOL_ASSIGN_OR_RETURN(int64_t size, s_.loops.Size(device));
    auto* bytes = out->add_usage();
    bytes->set_unit(pb::VolumeUsage::BYTES);
    bytes->set_total(size);
    return OkStatus();
  }
  struct statvfs vfs {};
  if (statvfs(path.c_str(), &vfs) != 0) {
    return InternalError("cannot statvfs " + path + ": " + std::strerror(errno));
  }
  const int64_t frsize = vfs.f_frsize;
  auto* bytes = out->add_usage();
  bytes->set_unit(pb::VolumeUsage::BYTES);
  bytes->set_total(static_cast<int64_t>(vfs.f_blocks) * frsize);
  bytes->set_available(static_cast<int64_t>(vfs.f_bavail) * frsize);
  bytes->set_used(static_cast<int64_t>(vfs.f_blocks - vfs.f_bfree) * frsize);
  auto* inodes = out->add_usage();
  inodes->set_unit(pb::VolumeUsage::INODES);
  inodes->set_total(vfs.f_files);
  inodes->set_available(vfs.f_ffree);
  inodes->set_used(vfs.f_files - vfs.f_ffree);
  return OkStatus();
}

grpc::Status NodeService::NodeExpandVolume(grpc::ServerContext*,
                                           const pb::NodeExpandVolumeRequest* req,
                                           pb::NodeExpandVolumeResponse* resp) {
  return ToGrpc(Expand(*req, resp));
}

Status NodeService::Expand(const pb::NodeExpandVolumeRequest& req,
                           pb::NodeExpandVolumeResponse* out) {
  if (req.volume_id().empty()) return InvalidArgumentError("volume_id is required");
  if (req.volume_path().empty()) return InvalidArgumentError("volume_path is required");
  KeyedLocks::Hold hold(s_.locks, req.volume_id());
  if (!s_.data->VolumeById(req.volume_id())) {
    return NotFoundError("volume " + req.volume_id() + " not found");
  }
  const std::string& path = req.volume_path();
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return NotFoundError("volume_path " + path + " not found");
  KVOL_ASSIGN_OR_RETURN(std::string device, DeviceOf(req.volume_id()));
  KVOL_RETURN_IF_ERROR(s_.loops.Refresh(device));
  KVOL_ASSIGN_OR_RETURN(int64_t size, s_.loops.Size(device));
  out->set_capacity_bytes(size);
  const bool block =
      (req.has_volume_capability() && req.volume_capability().has_block()) || !S_ISDIR(st.st_mode);
  if (block) return OkStatus();  // a raw device has no filesystem to grow
  KVOL_ASSIGN_OR_RETURN(std::string fs_type, os::DetectFilesystem(s_.exec, device));
  if (fs_type.rfind("ext", 0) == 0 && !HasSysResource()) {
    return FailedPreconditionError(
        "cannot grow the ext4 filesystem of volume " + req.volume_id() +
        " while it is mounted: this process lacks CAP_SYS_RESOURCE, which the kernel asks for");
  }
  return os::ResizeFilesystem(s_.exec, device, path);
}

grpc::Status NodeService::NodeGetCapabilities(grpc::ServerContext*,
                                              const pb::NodeGetCapabilitiesRequest*,
                                              pb::NodeGetCapabilitiesResponse* resp) {
  using Rpc = pb::NodeServiceCapability::RPC;
  for (auto type : {Rpc::STAGE_UNSTAGE_VOLUME, Rpc::GET_VOLUME_STATS, Rpc::EXPAND_VOLUME,
                    Rpc::VOLUME_CONDITION, Rpc::SINGLE_NODE_MULTI_WRITER}) {
    resp->add_capabilities()->mutable_rpc()->set_type(type);
  }
  return grpc::Status::OK;
}

grpc::Status NodeService::NodeGetInfo(grpc::ServerContext*, const pb::NodeGetInfoRequest*,
                                      pb::NodeGetInfoResponse* resp) {
  resp->set_node_id(s_.options.node_id);
  resp->set_max_volumes_per_node(s_.options.max_volumes_per_node);
  *resp->mutable_accessible_topology() = NodeTopology(s_.options);
  return grpc::Status::OK;
}

}  // namespace kvol::csi::driver
