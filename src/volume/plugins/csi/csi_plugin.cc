// The csi plugin: attach through VolumeAttachments, stage, publish, expand.
#include "volume/plugins/csi/csi_plugin.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/keyed_locks.h"
#include "base/sha256.h"
#include "base/strings.h"
#include "csi/client.h"
#include "csi/names.h"
#include "os/files.h"
#include "volume/plugins/csi/csi_drivers.h"
#include "volume/plugins/csi/csi_util.h"
#include "volume/util/ownership.h"

namespace kvol::volume::plugins {
namespace {

namespace fs = std::filesystem;
namespace pb = ::csi::v1;
using nlohmann::json;

constexpr std::chrono::seconds kAttachWait{60};
constexpr std::chrono::seconds kDetachWait{60};
constexpr char kVolData[] = "vol_data.json";

// An error of a CSI call as the volume manager should see it: one after which the driver may
// still be working is DeadlineExceeded (uncertain), with the driver's words kept.
Status Classify(const Status& s) {
  if (s.ok() || csi::IsFinal(s) || s.code() == StatusCode::kDeadlineExceeded) return s;
  return DeadlineExceededError(s.message());
}

Status WriteVolData(const std::string& dir, const json& data) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return InternalError("cannot create " + dir + ": " + ec.message());
  return os::WriteFileAtomically(dir + "/" + kVolData, data.dump(), 0600);
}

StatusOr<json> ReadVolData(const std::string& dir) {
  std::string text;
  KVOL_RETURN_IF_ERROR(os::ReadFile(dir + "/" + kVolData, &text));
  json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.value("driverName", json()).is_string() ||
      !j.value("volumeHandle", json()).is_string()) {
    return InternalError(dir + "/" + kVolData + " is not a CSI volume's record");
  }
  return j;
}

void RemoveQuietly(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
}

class CsiPlugin;

struct Volume {
  const api::CSIPersistentVolumeSource* csi = nullptr;
  const api::PersistentVolumeSpec* pv = nullptr;
};

Volume VolumeOf(const Spec& spec) {
  if (spec.pv && spec.pv->spec.csi) return {&*spec.pv->spec.csi, &spec.pv->spec};
  return {};
}

bool IsBlock(const Spec& spec) {
  return spec.pv && spec.pv->spec.volume_mode.value_or("Filesystem") == "Block";
}

class CsiPlugin final : public VolumePlugin,
                        public DeviceMountableVolumePlugin,
                        public BlockVolumePlugin,
                        public AttachableVolumePlugin,
                        public NodeExpandableVolumePlugin,
                        public StatsVolumePlugin {
 public:
  explicit CsiPlugin(Host& host) : host_(host) {}

  std::string_view Name() const override { return kCsiPluginName; }
  bool CanSupport(const Spec& spec) const override {
    return VolumeOf(spec).csi != nullptr || (!spec.pv && spec.volume.csi);
  }
  // Published again at each resync when the driver's CSIDriver says requiresRepublish (a driver
  // whose volume contents change, such as one that serves short-lived credentials).
  bool RequiresRemount(const Spec& spec) override {
    const std::string& driver =
        VolumeOf(spec).csi ? VolumeOf(spec).csi->driver : spec.volume.csi->driver;
    const auto object = DriverObject(driver);
    return object && object->spec.requires_republish.value_or(false);
  }
  StatusOr<std::unique_ptr<Mounter>> NewMounter(const Spec& spec, const api::Pod& pod) override;
  StatusOr<std::unique_ptr<Unmounter>> NewUnmounter(std::string_view volume_name,
                                                    std::string_view pod_uid) override;
  DeviceMountableVolumePlugin* AsDeviceMountable() override { return this; }
  BlockVolumePlugin* AsBlock() override { return this; }
  AttachableVolumePlugin* AsAttachable() override { return this; }
  NodeExpandableVolumePlugin* AsNodeExpandable() override { return this; }
  StatsVolumePlugin* AsStats() override { return this; }
  StatusOr<VolumeStats> GetVolumeStats(std::string_view volume_name, std::string_view pod_uid,
                                       bool block) override;

  // Device mount: NodeStageVolume. Every PersistentVolume goes through it, as in kubelet, and
  // it does nothing for a driver without STAGE_UNSTAGE_VOLUME: the populator asks at every pass,
  // and the driver is asked only when a volume is mounted.
  bool NeedsDeviceMount(const Spec& spec) override { return VolumeOf(spec).csi != nullptr; }
  std::string GetDeviceMountPath(const Spec& spec) override {
    if (IsBlock(spec)) return BlockStagingPath(spec.Name());
    const auto* csi = VolumeOf(spec).csi;
    return host_.PluginDir(kCsiPluginName) + "/" + csi->driver + "/" +
           Sha256Hex(csi->volume_handle) + "/globalmount";
  }
  Status MountDevice(const Spec& spec, const std::string& device_path) override;
  Status UnmountDevice(const std::string& device_mount_path) override;
  std::vector<FoundDevice> FindDeviceMounts() override;

  // Block volumes: NodeStageVolume to volumeDevices/staging/<pv>, NodePublishVolume to
  // volumeDevices/publish/<pv>/<pod uid>, and the pod's link to the published device.
  Status MapPodDevice(const Spec& spec, std::string_view pod_uid) override;
  Status UnmapPodDevice(std::string_view volume_name, std::string_view pod_uid) override;

  // Attach: a VolumeAttachment, served by an attacher.
  bool NeedsAttach(const Spec& spec) override {
    if (!VolumeOf(spec).csi) return false;  // inline: never attached
    auto d = host_.GetCSIDriver(VolumeOf(spec).csi->driver);
    return AttachRequired(d.ok() ? &*d : nullptr);
  }
  StatusOr<std::string> Attach(const Spec& spec, const std::string& node_name) override;
  StatusOr<std::string> WaitForAttach(const Spec& spec, const std::string& device_path) override;
  Status Detach(const std::string& volume_name, const std::string& node_name) override;

  Status NodeExpand(const Spec& spec, const NodeExpandOptions& options) override;

  // The registered driver of that name, in kubelet's words when there is none.
  StatusOr<std::shared_ptr<const CsiDriver>> Driver(const std::string& name) {
    CsiDrivers* drivers = host_.CsiDrivers();
    auto d = drivers ? drivers->Find(name) : nullptr;
    if (!d) {
      return NotFoundError("kubernetes.io/csi: driver name " + name +
                           " not found in the list of registered CSI drivers");
    }
    return d;
  }
  // The CSIDriver object, when there is one.
  std::optional<api::CSIDriver> DriverObject(const std::string& name) {
    auto d = host_.GetCSIDriver(name);
    if (!d.ok()) return std::nullopt;
    return *std::move(d);
  }
  // Whether the driver serves volumes of `mode` (Persistent, Ephemeral), in kubelet's words
  // when not: a driver without a CSIDriver, or one that lists none, serves Persistent only.
  Status CheckLifecycleMode(const std::string& driver, const std::optional<api::CSIDriver>& obj,
                            const std::string& mode) {
    std::vector<std::string> modes = {"Persistent"};
    if (obj && !obj->spec.volume_lifecycle_modes.empty()) modes = obj->spec.volume_lifecycle_modes;
    std::string quoted;
    for (const auto& m : modes) {
      if (m == mode) return OkStatus();
      quoted += (quoted.empty() ? "\"" : " \"") + m + "\"";
    }
    return InvalidArgumentError("volume mode \"" + mode + "\" not supported by driver " + driver +
                                " (only supports [" + quoted + "])");
  }
  // The pod's details, for a driver whose CSIDriver asks for them (podInfoOnMount).
  static void AddPodInfo(const api::Pod& pod,
                         google::protobuf::Map<std::string, std::string>* ctx) {
    (*ctx)["csi.storage.k8s.io/pod.name"] = pod.metadata.name;
    (*ctx)["csi.storage.k8s.io/pod.namespace"] = pod.metadata.namespace_;
    (*ctx)["csi.storage.k8s.io/pod.uid"] = pod.metadata.uid;
    (*ctx)["csi.storage.k8s.io/serviceAccount.name"] =
        pod.spec.service_account_name.empty() ? "default" : pod.spec.service_account_name;
  }

  // csi.storage.k8s.io/serviceAccount.tokens, for a driver whose CSIDriver asks for tokens
  // (spec.tokenRequests): {"<audience>": {"token": ..., "expirationTimestamp": ...}}, each of the
  // pod's service account and bound to the pod, as kubelet passes them.
  Status AddTokens(const std::optional<api::CSIDriver>& obj, const api::Pod& pod,
                   google::protobuf::Map<std::string, std::string>* ctx) {
    if (!obj || obj->spec.token_requests.empty()) return OkStatus();
    json tokens = json::object();
    for (const auto& r : obj->spec.token_requests) {
      auto t = host_.ServiceAccountToken(pod, r.audience, r.expiration_seconds);
      if (!t.ok()) {
        return Status(t.status().code(), "failed to get service account token attributes: " +
                                             t.status().message());
      }
      tokens[r.audience] = {{"token", t->token},
                            {"expirationTimestamp", t->expiration_timestamp.ToString()}};
    }
    (*ctx)["csi.storage.k8s.io/serviceAccount.tokens"] = tokens.dump();
    return OkStatus();
  }

  // The publish context of the volume's attachment to this node; empty when not attached.
  std::map<std::string, std::string> PublishContext(const Spec& spec) {
    const auto* csi = VolumeOf(spec).csi;
    auto va = host_.GetVolumeAttachment(
        csi::AttachmentName(csi->volume_handle, csi->driver, host_.NodeName()));
    if (!va.ok() || !va->status) return {};
    return va->status->attachment_metadata;
  }
  StatusOr<std::map<std::string, std::string>> Secrets(
      const std::optional<api::SecretReference>& ref) {
    std::map<std::string, std::string> out;
    if (!ref) return out;
    KVOL_ASSIGN_OR_RETURN(api::Secret secret, host_.GetSecret(ref->namespace_, ref->name));
    return CsiSecrets(secret);
  }
  StatusOr<pb::VolumeCapability> Capability(const CsiDriver& d, const Spec& spec) {
    KVOL_ASSIGN_OR_RETURN(
        bool multi,
        d.client->NodeSupports(pb::NodeServiceCapability::RPC::SINGLE_NODE_MULTI_WRITER));
    return VolumeCapabilityOf(*VolumeOf(spec).pv, multi);
  }

  // What a volume's vol_data.json says: enough to unpublish and unstage it, and to know, after
  // a restart, which PersistentVolume a staged device is.
  json VolDataOf(const Spec& spec) const {
    const auto* csi = VolumeOf(spec).csi;
    return {
        {"driverName", csi->driver},
        {"volumeHandle", csi->volume_handle},
        {"specVolID", spec.Name()},
        {"nodeName", host_.NodeName()},
        {"attachmentID", csi::AttachmentName(csi->volume_handle, csi->driver, host_.NodeName())},
        {"volumeLifecycleMode", "Persistent"}};
  }

  // Where block volumes live, as kubelet lays them out under plugins/kubernetes.io/csi.
  std::string BlockRoot() const { return host_.PluginDir(kCsiPluginName) + "/volumeDevices"; }
  std::string BlockDataDir(std::string_view pv) const {
    return BlockRoot() + "/" + std::string(pv) + "/data";
  }
  std::string BlockStagingPath(std::string_view pv) const {
    return BlockRoot() + "/staging/" + std::string(pv);
  }
  std::string BlockPublishDir(std::string_view pv) const {
    return BlockRoot() + "/publish/" + std::string(pv);
  }
  // A block volume's record goes once it is neither staged nor published. block_locks_ held.
  void RemoveBlockRecordIfUnused(const std::string& pv) {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(BlockStagingPath(pv), ec))) return;
    const bool published = !fs::is_empty(BlockPublishDir(pv), ec) && !ec;
    if (published) return;
    RemoveQuietly(BlockPublishDir(pv));
    RemoveQuietly(BlockDataDir(pv) + "/" + kVolData);
    RemoveQuietly(BlockDataDir(pv));
    RemoveQuietly(BlockRoot() + "/" + pv);
  }

  Host& host_;
  // One operation at a time on a block volume's shared record and directories, by volume.
  KeyedLocks block_locks_;
};

// ---- set-up and tear-down: NodePublishVolume, NodeUnpublishVolume ----------------------------

class CsiMounter final : public Mounter {
 public:
  CsiMounter(CsiPlugin& plugin, Spec spec, api::Pod pod)
      : plugin_(plugin), spec_(std::move(spec)), pod_(std::move(pod)) {}
  std::string Dir() const {
    return plugin_.host_.PodVolumeDir(pod_.metadata.uid, kCsiPluginName, spec_.Name());
  }
  std::string GetPath() const override { return Dir() + "/mount"; }
  bool ReadOnly() const override {
    if (const auto* csi = VolumeOf(spec_).csi) return spec_.read_only || csi->read_only;
    return spec_.volume.csi->read_only.value_or(false);
  }

  Status SetUp() override { return VolumeOf(spec_).csi ? SetUpPersistent() : SetUpInline(); }

  Status SetUpPersistent() {
    const auto* csi = VolumeOf(spec_).csi;
    KVOL_ASSIGN_OR_RETURN(auto driver, plugin_.Driver(csi->driver));
    const auto object = plugin_.DriverObject(csi->driver);
    KVOL_RETURN_IF_ERROR(plugin_.CheckLifecycleMode(csi->driver, object, "Persistent"));
    KVOL_RETURN_IF_ERROR(WriteVolData(Dir(), plugin_.VolDataOf(spec_)));
    pb::NodePublishVolumeRequest req;
    req.set_volume_id(csi->volume_handle);
    for (const auto& [k, v] : plugin_.PublishContext(spec_))
      (*req.mutable_publish_context())[k] = v;
    KVOL_ASSIGN_OR_RETURN(bool stage, driver->client->NodeSupports(
                                          pb::NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME));
    if (stage) req.set_staging_target_path(plugin_.GetDeviceMountPath(spec_));
    req.set_target_path(GetPath());
    KVOL_ASSIGN_OR_RETURN(*req.mutable_volume_capability(), plugin_.Capability(*driver, spec_));
    req.set_readonly(ReadOnly());
    KVOL_ASSIGN_OR_RETURN(auto secrets, plugin_.Secrets(csi->node_publish_secret_ref));
    for (const auto& [k, v] : secrets) (*req.mutable_secrets())[k] = v;
    for (const auto& [k, v] : csi->volume_attributes) (*req.mutable_volume_context())[k] = v;
    if (object && object->spec.pod_info_on_mount.value_or(false)) {
      CsiPlugin::AddPodInfo(pod_, req.mutable_volume_context());
    }
    KVOL_RETURN_IF_ERROR(plugin_.AddTokens(object, pod_, req.mutable_volume_context()));
    const auto& modes = VolumeOf(spec_).pv->access_modes;
    const bool rwo = std::find(modes.begin(), modes.end(), "ReadWriteOnce") != modes.end() ||
                     std::find(modes.begin(), modes.end(), "ReadWriteOncePod") != modes.end();
    return Publish(*driver, object, req, csi->fs_type, rwo);
  }

  // NodePublishVolume, then the pod's fsGroup as the CSIDriver's fsGroupPolicy says: by the
  // driver itself when it offers VOLUME_MOUNT_GROUP, else by kvol on the published files.
  // ReadWriteOnceWithFSType (the default) applies it only to a volume with an fsType that is
  // ReadWriteOnce (inline volumes have no access modes); File always; None never.
  Status Publish(const CsiDriver& driver, const std::optional<api::CSIDriver>& object,
                 pb::NodePublishVolumeRequest& req, const std::string& fs_type, bool rwo) {
    const auto& psc = pod_.spec.security_context;
    const std::string policy = object && object->spec.fs_group_policy
                                   ? *object->spec.fs_group_policy
                                   : "ReadWriteOnceWithFSType";
    const bool fs_group = psc && psc->fs_group && !ReadOnly() && policy != "None" &&
                          (policy == "File" || (!fs_type.empty() && rwo));
    bool by_driver = false;
    if (fs_group && req.volume_capability().has_mount()) {
      KVOL_ASSIGN_OR_RETURN(by_driver, driver.client->NodeSupports(
                                           pb::NodeServiceCapability::RPC::VOLUME_MOUNT_GROUP));
      if (by_driver) {
        req.mutable_volume_capability()->mutable_mount()->set_volume_mount_group(
            std::to_string(*psc->fs_group));
      }
    }
    auto published = driver.client->Call(&pb::Node::Stub::NodePublishVolume, req);
    KVOL_RETURN_IF_ERROR(Classify(published.status()));
    if (!fs_group || by_driver) return OkStatus();
    return util::SetVolumeOwnership(GetPath(), *psc->fs_group, false);
  }

  // An inline ephemeral volume (spec.volumes[].csi): published only, its handle made from the
  // pod and the volume as kubelet makes it, gone with the pod.
  Status SetUpInline() {
    const api::CSIVolumeSource& src = *spec_.volume.csi;
    KVOL_ASSIGN_OR_RETURN(auto driver, plugin_.Driver(src.driver));
    const auto object = plugin_.DriverObject(src.driver);
    KVOL_RETURN_IF_ERROR(plugin_.CheckLifecycleMode(src.driver, object, "Ephemeral"));
    const std::string handle = "csi-" + Sha256Hex(pod_.metadata.uid + spec_.volume.name);
    KVOL_RETURN_IF_ERROR(WriteVolData(Dir(), {{"driverName", src.driver},
                                              {"volumeHandle", handle},
                                              {"specVolID", spec_.Name()},
                                              {"nodeName", plugin_.host_.NodeName()},
                                              {"volumeLifecycleMode", "Ephemeral"}}));
    pb::NodePublishVolumeRequest req;
    req.set_volume_id(handle);
    req.set_target_path(GetPath());
    auto* cap = req.mutable_volume_capability();
    cap->mutable_mount()->set_fs_type(src.fs_type.value_or(""));
    cap->mutable_access_mode()->set_mode(pb::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
    req.set_readonly(ReadOnly());
    if (src.node_publish_secret_ref) {
      KVOL_ASSIGN_OR_RETURN(auto secrets, plugin_.Secrets(api::SecretReference{
                                              .name = src.node_publish_secret_ref->name,
                                              .namespace_ = pod_.metadata.namespace_}));
      for (const auto& [k, v] : secrets) (*req.mutable_secrets())[k] = v;
    }
    auto* ctx = req.mutable_volume_context();
    for (const auto& [k, v] : src.volume_attributes) (*ctx)[k] = v;
    (*ctx)["csi.storage.k8s.io/ephemeral"] = "true";
    if (object && object->spec.pod_info_on_mount.value_or(false)) {
      CsiPlugin::AddPodInfo(pod_, ctx);
    }
    KVOL_RETURN_IF_ERROR(plugin_.AddTokens(object, pod_, ctx));
    return Publish(*driver, object, req, src.fs_type.value_or(""), /*rwo=*/true);
  }

 private:
  CsiPlugin& plugin_;
  const Spec spec_;
  const api::Pod pod_;
};

class CsiUnmounter final : public Unmounter {
 public:
  CsiUnmounter(CsiPlugin& plugin, std::string dir) : plugin_(plugin), dir_(std::move(dir)) {}
  std::string GetPath() const override { return dir_ + "/mount"; }
  Status TearDown() override {
    auto data = ReadVolData(dir_);
    if (!data.ok()) {
      // Nothing was published here (set-up failed before it wrote its record).
      std::error_code ec;
      if (!fs::exists(dir_, ec)) return OkStatus();
      if (fs::exists(GetPath(), ec)) return data.status();
      fs::remove_all(dir_, ec);
      return OkStatus();
    }
    KVOL_ASSIGN_OR_RETURN(auto driver, plugin_.Driver((*data)["driverName"].get<std::string>()));
    pb::NodeUnpublishVolumeRequest req;
    req.set_volume_id((*data)["volumeHandle"].get<std::string>());
    req.set_target_path(GetPath());
    auto unpublished = driver->client->Call(&pb::Node::Stub::NodeUnpublishVolume, req);
    if (!unpublished.ok()) return Classify(unpublished.status());
    RemoveQuietly(GetPath());
    RemoveQuietly(dir_ + "/" + kVolData);
    RemoveQuietly(dir_);
    return OkStatus();
  }

 private:
  CsiPlugin& plugin_;
  const std::string dir_;
};

StatusOr<std::unique_ptr<Mounter>> CsiPlugin::NewMounter(const Spec& spec, const api::Pod& pod) {
  if (!CanSupport(spec)) return InvalidArgumentError("not a CSI volume");
  return std::unique_ptr<Mounter>(new CsiMounter(*this, spec, pod));
}

StatusOr<std::unique_ptr<Unmounter>> CsiPlugin::NewUnmounter(std::string_view volume_name,
                                                             std::string_view pod_uid) {
  return std::unique_ptr<Unmounter>(
      new CsiUnmounter(*this, host_.PodVolumeDir(pod_uid, kCsiPluginName, volume_name)));
}

// ---- device mount: NodeStageVolume, NodeUnstageVolume ---------------------------------------

Status CsiPlugin::MountDevice(const Spec& spec, const std::string&) {
  const auto* csi = VolumeOf(spec).csi;
  KVOL_ASSIGN_OR_RETURN(auto driver, Driver(csi->driver));
  KVOL_ASSIGN_OR_RETURN(bool stage, driver->client->NodeSupports(
                                        pb::NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME));
  if (!stage) return OkStatus();
  const bool block = IsBlock(spec);
  std::optional<KeyedLocks::Hold> hold;
  if (block) hold.emplace(block_locks_, spec.Name());
  const std::string path = GetDeviceMountPath(spec);
  KVOL_RETURN_IF_ERROR(WriteVolData(
      block ? BlockDataDir(spec.Name()) : fs::path(path).parent_path().string(), VolDataOf(spec)));
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return InternalError("cannot create " + path + ": " + ec.message());
  pb::NodeStageVolumeRequest req;
  req.set_volume_id(csi->volume_handle);
  for (const auto& [k, v] : PublishContext(spec)) (*req.mutable_publish_context())[k] = v;
  req.set_staging_target_path(path);
  KVOL_ASSIGN_OR_RETURN(*req.mutable_volume_capability(), Capability(*driver, spec));
  KVOL_ASSIGN_OR_RETURN(auto secrets, Secrets(csi->node_stage_secret_ref));
  for (const auto& [k, v] : secrets) (*req.mutable_secrets())[k] = v;
  for (const auto& [k, v] : csi->volume_attributes) (*req.mutable_volume_context())[k] = v;
  return Classify(driver->client->Call(&pb::Node::Stub::NodeStageVolume, req).status());
}

Status CsiPlugin::UnmountDevice(const std::string& device_mount_path) {
  const fs::path path(device_mount_path);
  const bool block = path.parent_path() == fs::path(BlockRoot()) / "staging";
  // A block volume's record is volumeDevices/<pv>/data; a filesystem's is beside globalmount.
  const std::string name = path.filename().string();
  std::optional<KeyedLocks::Hold> hold;
  if (block) hold.emplace(block_locks_, name);
  const std::string dir = block ? BlockDataDir(name) : path.parent_path().string();
  auto data = ReadVolData(dir);
  if (!data.ok()) {
    std::error_code ec;
    return fs::exists(block ? path : fs::path(dir), ec) ? data.status() : OkStatus();
  }
  KVOL_ASSIGN_OR_RETURN(auto driver, Driver((*data)["driverName"].get<std::string>()));
  pb::NodeUnstageVolumeRequest req;
  req.set_volume_id((*data)["volumeHandle"].get<std::string>());
  req.set_staging_target_path(device_mount_path);
  auto unstaged = driver->client->Call(&pb::Node::Stub::NodeUnstageVolume, req);
  if (!unstaged.ok()) return Classify(unstaged.status());
  RemoveQuietly(device_mount_path);
  if (block) {
    RemoveBlockRecordIfUnused(name);
  } else {
    RemoveQuietly(dir + "/" + kVolData);
    RemoveQuietly(dir);
  }
  return OkStatus();
}

std::vector<DeviceMountableVolumePlugin::FoundDevice> CsiPlugin::FindDeviceMounts() {
  // Filesystems: <driver>/<sha256(handle)>/globalmount, named by the record beside it.
  std::vector<FoundDevice> out;
  const fs::path root = host_.PluginDir(kCsiPluginName);
  std::error_code ec;
  for (fs::directory_iterator d(root, ec), end; !ec && d != end; d.increment(ec)) {
    const std::string name = d->path().filename().string();
    if (name == "volumeDevices" || name == "volumeattachments" || name == "attachments") continue;
    std::error_code ec2;
    for (fs::directory_iterator v(d->path(), ec2); !ec2 && v != end; v.increment(ec2)) {
      auto data = ReadVolData(v->path().string());
      if (data.ok() && (*data).value("specVolID", json()).is_string()) {
        out.push_back({(*data)["specVolID"].get<std::string>(), v->path() / "globalmount"});
      }
    }
  }
  // Block volumes: volumeDevices/staging/<pv>.
  for (auto& f : FoundDevicesUnder(BlockRoot() + "/staging")) out.push_back(std::move(f));
  return out;
}

// ---- block volumes: stage, publish, and the pod's link ----------------------------------------

Status CsiPlugin::MapPodDevice(const Spec& spec, std::string_view pod_uid) {
  const auto* csi = VolumeOf(spec).csi;
  if (!csi) return InvalidArgumentError("an inline CSI volume is a filesystem, not a block device");
  KVOL_ASSIGN_OR_RETURN(auto driver, Driver(csi->driver));
  KVOL_RETURN_IF_ERROR(CheckLifecycleMode(csi->driver, DriverObject(csi->driver), "Persistent"));
  KVOL_ASSIGN_OR_RETURN(bool stage, driver->client->NodeSupports(
                                        pb::NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME));
  KeyedLocks::Hold hold(block_locks_, spec.Name());
  KVOL_RETURN_IF_ERROR(WriteVolData(BlockDataDir(spec.Name()), VolDataOf(spec)));
  const std::string publish = BlockPublishDir(spec.Name()) + "/" + std::string(pod_uid);
  // The pod's link first, dangling until the driver publishes: a restart that finds it tears
  // down what may have been published.
  const std::string link = host_.PodDeviceDir(pod_uid, kCsiPluginName, spec.Name());
  std::error_code ec;
  if (!fs::is_symlink(link, ec) || fs::read_symlink(link, ec).string() != publish) {
    fs::create_directories(fs::path(link).parent_path(), ec);
    fs::remove(link, ec);
    fs::create_symlink(publish, link, ec);
    if (ec) return InternalError("symlink " + link + ": " + ec.message());
  }
  fs::create_directories(BlockPublishDir(spec.Name()), ec);
  if (ec)
    return InternalError("cannot create " + BlockPublishDir(spec.Name()) + ": " + ec.message());
  pb::NodePublishVolumeRequest req;
  req.set_volume_id(csi->volume_handle);
  for (const auto& [k, v] : PublishContext(spec)) (*req.mutable_publish_context())[k] = v;
  if (stage) req.set_staging_target_path(BlockStagingPath(spec.Name()));
  req.set_target_path(publish);
  KVOL_ASSIGN_OR_RETURN(*req.mutable_volume_capability(), Capability(*driver, spec));
  req.set_readonly(spec.read_only || csi->read_only);
  KVOL_ASSIGN_OR_RETURN(auto secrets, Secrets(csi->node_publish_secret_ref));
  for (const auto& [k, v] : secrets) (*req.mutable_secrets())[k] = v;
  for (const auto& [k, v] : csi->volume_attributes) (*req.mutable_volume_context())[k] = v;
  return Classify(driver->client->Call(&pb::Node::Stub::NodePublishVolume, req).status());
}

Status CsiPlugin::UnmapPodDevice(std::string_view volume_name, std::string_view pod_uid) {
  const std::string pv(volume_name);
  KeyedLocks::Hold hold(block_locks_, pv);
  const std::string publish = BlockPublishDir(pv) + "/" + std::string(pod_uid);
  std::error_code ec;
  if (fs::exists(fs::symlink_status(publish, ec))) {
    KVOL_ASSIGN_OR_RETURN(json data, ReadVolData(BlockDataDir(pv)));
    KVOL_ASSIGN_OR_RETURN(auto driver, Driver(data["driverName"].get<std::string>()));
    pb::NodeUnpublishVolumeRequest req;
    req.set_volume_id(data["volumeHandle"].get<std::string>());
    req.set_target_path(publish);
    auto unpublished = driver->client->Call(&pb::Node::Stub::NodeUnpublishVolume, req);
    if (!unpublished.ok()) return Classify(unpublished.status());
    RemoveQuietly(publish);
  }
  // The link last: while it is there, a restarted agent knows there is something to undo.
  const std::string link = host_.PodDeviceDir(pod_uid, kCsiPluginName, pv);
  fs::remove(link, ec);
  if (ec) return InternalError("remove " + link + ": " + ec.message());
  RemoveBlockRecordIfUnused(pv);
  return OkStatus();
}

// ---- attach: the VolumeAttachment ------------------------------------------------------------

StatusOr<std::string> CsiPlugin::Attach(const Spec& spec, const std::string& node_name) {
  const auto* csi = VolumeOf(spec).csi;
  api::VolumeAttachment va;
  va.metadata.name = csi::AttachmentName(csi->volume_handle, csi->driver, node_name);
  va.spec.attacher = csi->driver;
  va.spec.node_name = node_name;
  va.spec.source.persistent_volume_name = spec.Name();
  // Which attachment a volume has, for Detach, which knows only the volume's name.
  KVOL_RETURN_IF_ERROR(
      WriteVolData(host_.PluginDir(kCsiPluginName) + "/volumeattachments/" + spec.Name(),
                   {{"driverName", csi->driver},
                    {"volumeHandle", csi->volume_handle},
                    {"attachmentID", va.metadata.name}}));
  auto created = host_.CreateVolumeAttachment(va);
  if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
    return created.status();
  }
  return std::string();
}

StatusOr<std::string> CsiPlugin::WaitForAttach(const Spec& spec, const std::string&) {
  const auto* csi = VolumeOf(spec).csi;
  const std::string name = csi::AttachmentName(csi->volume_handle, csi->driver, host_.NodeName());
  const auto deadline = std::chrono::steady_clock::now() + kAttachWait;
  for (auto delay = std::chrono::milliseconds(20);;
       delay = std::min(delay * 2, std::chrono::milliseconds(500))) {
    KVOL_ASSIGN_OR_RETURN(api::VolumeAttachment va, host_.GetVolumeAttachment(name));
    if (va.status && va.status->attached) return std::string();
    if (va.status && va.status->attach_error) {
      return InternalError("rpc error: attachment " + name +
                           " failed: " + va.status->attach_error->message);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return DeadlineExceededError("timed out waiting for external-attacher of " + csi->driver +
                                   " CSI driver to attach volume " + csi->volume_handle);
    }
    std::this_thread::sleep_for(delay);
  }
}

Status CsiPlugin::Detach(const std::string& volume_name, const std::string&) {
  const std::string dir = host_.PluginDir(kCsiPluginName) + "/volumeattachments/" + volume_name;
  auto data = ReadVolData(dir);
  if (!data.ok()) return OkStatus();  // never attached by this agent
  const std::string name = (*data)["attachmentID"].get<std::string>();
  KVOL_RETURN_IF_ERROR(host_.DeleteVolumeAttachment(name));
  // Detached when the attacher has unpublished it and the attachment is gone.
  const auto deadline = std::chrono::steady_clock::now() + kDetachWait;
  for (auto delay = std::chrono::milliseconds(20);;
       delay = std::min(delay * 2, std::chrono::milliseconds(500))) {
    auto va = host_.GetVolumeAttachment(name);
    if (!va.ok() && va.status().code() == StatusCode::kNotFound) break;
    if (va.ok() && va->status && va->status->detach_error) {
      return InternalError("detaching " + name + " failed: " + va->status->detach_error->message);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return DeadlineExceededError("timed out waiting for the attacher to detach " + name);
    }
    std::this_thread::sleep_for(delay);
  }
  RemoveQuietly(dir + "/" + kVolData);
  RemoveQuietly(dir);
  return OkStatus();
}

// ---- expansion: NodeExpandVolume -------------------------------------------------------------

Status CsiPlugin::NodeExpand(const Spec& spec, const NodeExpandOptions& o) {
  const auto* csi = VolumeOf(spec).csi;
  KVOL_ASSIGN_OR_RETURN(auto driver, Driver(csi->driver));
  KVOL_ASSIGN_OR_RETURN(
      bool expand, driver->client->NodeSupports(pb::NodeServiceCapability::RPC::EXPAND_VOLUME));
  if (!expand) return OkStatus();
  pb::NodeExpandVolumeRequest req;
  req.set_volume_id(csi->volume_handle);
  req.set_volume_path(o.device_mount_path);
  req.set_staging_target_path(o.device_mount_path);
  req.mutable_capacity_range()->set_required_bytes(o.new_size);
  KVOL_ASSIGN_OR_RETURN(*req.mutable_volume_capability(), Capability(*driver, spec));
  KVOL_ASSIGN_OR_RETURN(auto secrets, Secrets(csi->node_expand_secret_ref));
  for (const auto& [k, v] : secrets) (*req.mutable_secrets())[k] = v;
  return Classify(driver->client->Call(&pb::Node::Stub::NodeExpandVolume, req).status());
}

// ---- stats and health: NodeGetVolumeStats ----------------------------------------------------

StatusOr<VolumeStats> CsiPlugin::GetVolumeStats(std::string_view volume_name,
                                                std::string_view pod_uid, bool block) {
  const std::string dir =
      block ? BlockDataDir(volume_name) : host_.PodVolumeDir(pod_uid, kCsiPluginName, volume_name);
  KVOL_ASSIGN_OR_RETURN(json data, ReadVolData(dir));
  KVOL_ASSIGN_OR_RETURN(auto driver, Driver(data["driverName"].get<std::string>()));
  KVOL_ASSIGN_OR_RETURN(auto caps, driver->client->NodeCapabilities());
  if (!caps.contains(pb::NodeServiceCapability::RPC::GET_VOLUME_STATS)) {
    return UnimplementedError("driver " + driver->name + " reports no volume stats");
  }
  const bool condition = caps.contains(pb::NodeServiceCapability::RPC::VOLUME_CONDITION);
  pb::NodeGetVolumeStatsRequest req;
  req.set_volume_id(data["volumeHandle"].get<std::string>());
  req.set_volume_path(block ? BlockPublishDir(volume_name) + "/" + std::string(pod_uid)
                            : dir + "/mount");
  KVOL_ASSIGN_OR_RETURN(auto resp, driver->client->Call(&pb::Node::Stub::NodeGetVolumeStats, req));
  VolumeStats out;
  for (const auto& u : resp.usage()) {
    if (u.unit() == pb::VolumeUsage::BYTES) {
      out.capacity_bytes = u.total();
      out.available_bytes = u.available();
      out.used_bytes = u.used();
    } else if (u.unit() == pb::VolumeUsage::INODES) {
      out.inodes = u.total();
      out.inodes_free = u.available();
      out.inodes_used = u.used();
    }
  }
  if (condition && resp.has_volume_condition()) {
    out.abnormal = resp.volume_condition().abnormal();
    out.message = resp.volume_condition().message();
  }
  return out;
}

}  // namespace

std::unique_ptr<VolumePlugin> NewCsiPlugin(Host& host) { return std::make_unique<CsiPlugin>(host); }

}  // namespace kvol::volume::plugins
