// FlexVolume: the exec protocol's driver calls, and a plugin per installed driver.
//
// Every call runs <dir>/<vendor~driver>/<driver> <command> <args...> and reads one JSON object
// from its output: {"status": "Success" | "Failure" | "Not supported", "message": ...,
// "device": ..., "capabilities": {...}}. Options reach the driver as one JSON argument: the
// volume source's options plus kubernetes.io/fsType, kubernetes.io/readwrite and
// kubernetes.io/pvOrVolumeName, and for `mount` the pod's name, namespace, uid and service
// account and the secret's keys (kubernetes.io/secret/<key>, base64).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "api/codec.h"
#include "base/log.h"
#include "base/strings.h"
#include "os/format.h"
#include "volume/plugins/common.h"
#include "volume/plugins/plugins.h"
#include "volume/util/cleanup.h"

namespace kvol::volume::plugins {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kNotSupported = "Not supported";

struct Capabilities {
  // As Kubernetes assumes for a driver that does not say.
  bool attach = true;
  bool requires_fs_resize = true;
};

struct Reply {
  std::string device;
  Capabilities capabilities;
};

// Runs one driver call and reads its reply. A reply of "Not supported" is Unimplemented; a
// "Failure" (or any status but "Success") is an error carrying the driver's message.
StatusOr<Reply> RunDriver(os::Exec& exec, const std::string& executable,
                          const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {executable};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string& command = args.front();
  auto run = exec.Run(argv, timeout);
  if (!run.ok()) {
    if (run.status().code() == StatusCode::kDeadlineExceeded) {
      return DeadlineExceededError(command + " command of driver " + executable +
                                   " timed out after " + std::to_string(timeout.count() / 1000) +
                                   "s");
    }
    return run.status();
  }
  const std::string output(TrimRight(run->output));
  api::Json reply = api::Json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (!reply.is_object() || !reply.contains("status") || !reply["status"].is_string()) {
    return InternalError("failed to unmarshal output for command: " + command + ", output: \"" +
                         output + "\", " + os::DescribeExit(run->exit_code));
  }
  const std::string status = reply["status"].get<std::string>();
  // A field of the wrong type is as if it were absent (never an exception).
  const std::string message = reply.contains("message") && reply["message"].is_string()
                                  ? reply["message"].get<std::string>()
                                  : std::string();
  if (status == kNotSupported) return UnimplementedError(std::string(kNotSupported));
  if (status != "Success") {
    return InternalError(command + " command failed, status: " + status + ", reason: " + message);
  }
  if (run->exit_code != 0) {
    return InternalError("driver " + executable + " answered Success to " + command +
                         " but exited with " + os::DescribeExit(run->exit_code));
  }
  Reply r;
  if (reply.contains("device") && reply["device"].is_string()) {
    r.device = reply["device"].get<std::string>();
  }
  if (reply.contains("capabilities") && reply["capabilities"].is_object()) {
    const api::Json& c = reply["capabilities"];
    if (c.contains("attach") && c["attach"].is_boolean()) r.capabilities.attach = c["attach"];
    if (c.contains("requiresFSResize") && c["requiresFSResize"].is_boolean()) {
      r.capabilities.requires_fs_resize = c["requiresFSResize"];
    }
  }
  return r;
}

bool IsNotSupported(const Status& s) { return s.code() == StatusCode::kUnimplemented; }

// The parts of a flexVolume source (pod volume or PersistentVolume) the calls use.
struct Source {
  std::string driver;
  std::string fs_type;
  bool read_only = false;
  api::StringMap options;
  std::optional<std::string> secret_name;
  std::string secret_namespace;  // "" for the pod's
};

std::optional<Source> SourceOf(const Spec& spec) {
  Source s;
  if (spec.pv) {
    if (!spec.pv->spec.flex_volume) return std::nullopt;
    const auto& f = *spec.pv->spec.flex_volume;
    s.driver = f.driver;
    s.fs_type = f.fs_type;
    s.read_only = f.read_only || spec.read_only;
    s.options = f.options;
    if (f.secret_ref) {
      s.secret_name = f.secret_ref->name;
      s.secret_namespace = f.secret_ref->namespace_;
    }
    return s;
  }
  if (!spec.volume.flex_volume) return std::nullopt;
  const auto& f = *spec.volume.flex_volume;
  s.driver = f.driver;
  s.fs_type = f.fs_type;
  s.read_only = f.read_only;
  s.options = f.options;
  if (f.secret_ref) s.secret_name = f.secret_ref->name;
  return s;
}

class FlexVolumePlugin;

class FlexMounter final : public Mounter, PodDirVolume {
 public:
  FlexMounter(FlexVolumePlugin& plugin, Host& host, const Spec& spec, const api::Pod& pod,
              Source source);
  std::string GetPath() const override { return path(); }
  bool ReadOnly() const override { return source_.read_only; }
  Status SetUp() override;

 private:
  Status MountByDriver();

  FlexVolumePlugin& plugin_;
  const Spec spec_;
  const api::Pod pod_;
  const Source source_;
};

class FlexUnmounter final : public Unmounter, PodDirVolume {
 public:
  FlexUnmounter(FlexVolumePlugin& plugin, Host& host, std::string_view volume_name,
                std::string_view pod_uid);
  std::string GetPath() const override { return path(); }
  Status TearDown() override;

 private:
  FlexVolumePlugin& plugin_;
};

class FlexVolumePlugin final : public VolumePlugin,
                               public AttachableVolumePlugin,
                               public DeviceMountableVolumePlugin,
                               public ExpandableVolumePlugin,
                               public NodeExpandableVolumePlugin {
 public:
  FlexVolumePlugin(Host& host, std::string driver, std::string executable,
                   Capabilities capabilities, std::chrono::milliseconds timeout)
      : host_(host),
        driver_(std::move(driver)),
        name_(std::string(kFlexVolumePrefix) + driver_),
        executable_(std::move(executable)),
        capabilities_(capabilities),
        timeout_(timeout) {}

  std::string_view Name() const override { return name_; }
  bool CanSupport(const Spec& spec) const override {
    auto source = SourceOf(spec);
    return source && source->driver == driver_;
  }
  StatusOr<std::unique_ptr<Mounter>> NewMounter(const Spec& spec, const api::Pod& pod) override {
    auto source = SourceOf(spec);
    if (!source) return InvalidArgumentError("volume " + spec.Name() + " is not a flexVolume");
    return std::unique_ptr<Mounter>(
        std::make_unique<FlexMounter>(*this, host_, spec, pod, *std::move(source)));
  }
  StatusOr<std::unique_ptr<Unmounter>> NewUnmounter(std::string_view volume_name,
                                                    std::string_view pod_uid) override {
    return std::unique_ptr<Unmounter>(
        std::make_unique<FlexUnmounter>(*this, host_, volume_name, pod_uid));
  }
  DeviceMountableVolumePlugin* AsDeviceMountable() override {
    return capabilities_.attach ? this : nullptr;
  }
  AttachableVolumePlugin* AsAttachable() override { return capabilities_.attach ? this : nullptr; }
  ExpandableVolumePlugin* AsExpandable() override { return this; }
  NodeExpandableVolumePlugin* AsNodeExpandable() override { return this; }

  // ---- attach ----
  bool NeedsAttach(const Spec& spec) override { return capabilities_.attach && CanSupport(spec); }
  StatusOr<std::string> Attach(const Spec& spec, const std::string& node_name) override {
    auto r = Call({"attach", Options(spec, {}), node_name});
    if (IsNotSupported(r.status())) return std::string();
    if (!r.ok()) return r.status();
    return r->device;
  }
  StatusOr<std::string> WaitForAttach(const Spec& spec, const std::string& device_path) override {
    auto r = Call({"waitforattach", device_path, Options(spec, {})});
    if (IsNotSupported(r.status())) return device_path;
    if (!r.ok()) return r.status();
    return r->device.empty() ? device_path : r->device;
  }
  Status Detach(const std::string& volume_name, const std::string& node_name) override {
    auto r = Call({"detach", volume_name, node_name});
    if (IsNotSupported(r.status())) return OkStatus();
    return r.status();
  }

  // ---- device mount ----
  bool NeedsDeviceMount(const Spec& spec) override {
    return capabilities_.attach && CanSupport(spec);
  }
  std::string GetDeviceMountPath(const Spec& spec) override {
    return host_.PluginDir(name_) + "/mounts/" + spec.Name();
  }
  Status MountDevice(const Spec& spec, const std::string& device_path) override {
    const std::string target = GetDeviceMountPath(spec);
    auto mounted = host_.mounter().IsMountPoint(target);
    if (mounted.ok() && *mounted) return OkStatus();
    KVOL_RETURN_IF_ERROR(MakeDir(target, 0750));
    auto r = Call({"mountdevice", target, device_path, Options(spec, {})});
    Status s = r.status();
    if (IsNotSupported(s)) {
      // The default: format the attached device if it is blank, and mount it.
      if (device_path.empty()) {
        s = FailedPreconditionError("driver " + driver_ +
                                    " implements neither mountdevice nor an attach that names "
                                    "the device");
      } else {
        auto source = SourceOf(spec);
        std::vector<std::string> options;
        if (source->read_only) options.push_back("ro");
        s = os::FormatAndMount(host_.exec(), host_.mounter(), device_path, target, source->fs_type,
                               options);
      }
    }
    if (!s.ok()) (void)util::CleanupDir(host_.mounter(), target, false);
    return s;
  }
  Status UnmountDevice(const std::string& device_mount_path) override {
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(device_mount_path, ec))) return OkStatus();
    auto r = Call({"unmountdevice", device_mount_path});
    if (!r.ok() && !IsNotSupported(r.status())) return r.status();
    // The default (and what a driver's unmountdevice leaves): unmount and remove the directory.
    return util::CleanupDir(host_.mounter(), device_mount_path, false);
  }
  std::vector<FoundDevice> FindDeviceMounts() override {
    return FoundDevicesUnder(host_.PluginDir(name_) + "/mounts");
  }

  // ---- expand ----
  StatusOr<int64_t> ExpandVolumeDevice(const Spec& spec, int64_t new_size,
                                       int64_t old_size) override {
    auto r = Call({"expandvolume", Options(spec, {}), GetDeviceMountPath(spec),
                   std::to_string(new_size), std::to_string(old_size)});
    if (!r.ok() && !IsNotSupported(r.status())) return r.status();
    return new_size;
  }
  bool RequiresFSResize(const Spec& /*spec*/) override { return capabilities_.requires_fs_resize; }
  Status NodeExpand(const Spec& spec, const NodeExpandOptions& o) override {
    auto r = Call({"expandfs", Options(spec, {}), o.device_path, o.device_mount_path,
                   std::to_string(o.new_size), std::to_string(o.old_size)});
    if (!IsNotSupported(r.status())) return r.status();
    // The default: grow the filesystem on the attached device.
    if (o.device_path.empty()) {
      return FailedPreconditionError("driver " + driver_ +
                                     " does not implement expandfs and volume " + spec.Name() +
                                     " has no device whose filesystem could be grown");
    }
    return os::ResizeFilesystem(host_.exec(), o.device_path, o.device_mount_path);
  }

  // ---- the driver ----
  // One call; "Not supported" is remembered, so that command is not run again.
  StatusOr<Reply> Call(const std::vector<std::string>& args) {
    {
      std::lock_guard lock(mu_);
      if (unsupported_.count(args.front())) return UnimplementedError(std::string(kNotSupported));
    }
    auto r = RunDriver(host_.exec(), executable_, args, timeout_);
    if (IsNotSupported(r.status())) {
      std::lock_guard lock(mu_);
      unsupported_.insert(args.front());
    } else if (!r.ok()) {
      log::Warn("FlexVolume driver " + driver_ + ": " + args.front() + ": " + r.status().message());
    }
    return r;
  }

  // The options argument: the source's options over the defaults and `extra`.
  static std::string Options(const Spec& spec, const api::StringMap& extra) {
    auto source = SourceOf(spec);
    api::Json o = api::Json::object();
    o["kubernetes.io/fsType"] = source ? source->fs_type : "";
    o["kubernetes.io/readwrite"] = source && source->read_only ? "ro" : "rw";
    o["kubernetes.io/pvOrVolumeName"] = spec.Name();
    for (const auto& [k, v] : extra) o[k] = v;
    if (source) {
      for (const auto& [k, v] : source->options) o[k] = v;
    }
    return o.dump(-1, ' ', false, api::Json::error_handler_t::replace);
  }

  const std::string& driver() const { return driver_; }
  bool attach() const { return capabilities_.attach; }

 private:
  Host& host_;
  const std::string driver_;
  const std::string name_;
  const std::string executable_;
  const Capabilities capabilities_;
  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::set<std::string> unsupported_;  // guarded by mu_
};

FlexMounter::FlexMounter(FlexVolumePlugin& plugin, Host& host, const Spec& spec,
                         const api::Pod& pod, Source source)
    : PodDirVolume(host, plugin.Name(), pod.metadata.uid, spec.Name()),
      plugin_(plugin),
      spec_(spec),
      pod_(pod),
      source_(std::move(source)) {}

Status FlexMounter::SetUp() {
  auto mounted = host_.mounter().IsMountPoint(path());
  if (mounted.ok() && *mounted) return OkStatus();
  KVOL_RETURN_IF_ERROR(MakeDir(path(), 0750));
  Status s = MountByDriver();
  if (IsNotSupported(s)) {
    // The default: bind the device mounted for the node (attachable drivers).
    if (!plugin_.attach()) {
      s = FailedPreconditionError("driver " + plugin_.driver() +
                                  " implements neither mount nor attach");
    } else {
      const std::string from = plugin_.GetDeviceMountPath(spec_);
      auto global = host_.mounter().IsMountPoint(from);
      if (!global.ok() || !*global) {
        s = FailedPreconditionError("volume " + spec_.Name() + " is not mounted at " + from);
      } else {
        std::vector<std::string> options = {"bind"};
        if (source_.read_only) options.push_back("ro");
        s = host_.mounter().Mount(from, path(), "", options);
      }
    }
  }
  if (!s.ok()) (void)util::CleanupDir(host_.mounter(), path(), false);
  return s;
}

Status FlexMounter::MountByDriver() {
  api::StringMap extra = {
      {"kubernetes.io/pod.name", pod_.metadata.name},
      {"kubernetes.io/pod.namespace", pod_.metadata.namespace_},
      {"kubernetes.io/pod.uid", pod_.metadata.uid},
      {"kubernetes.io/serviceAccount.name", pod_.spec.service_account_name},
  };
  if (source_.secret_name) {
    const std::string ns =
        source_.secret_namespace.empty() ? pod_.metadata.namespace_ : source_.secret_namespace;
    auto secret = host_.GetSecret(ns, *source_.secret_name);
    if (!secret.ok()) {
      return secret.status().Annotate("getting secret " + ns + "/" + *source_.secret_name +
                                      " for FlexVolume driver " + source_.driver);
    }
    // As Kubernetes: only a secret of the driver's own type reaches the driver.
    if (secret->type != source_.driver) {
      return FailedPreconditionError("secret " + ns + "/" + *source_.secret_name + " has type \"" +
                                     secret->type + "\"; FlexVolume driver " + source_.driver +
                                     " is given only secrets of type \"" + source_.driver + "\"");
    }
    for (const auto& [k, v] : secret->data) extra["kubernetes.io/secret/" + k] = v;
  }
  return plugin_.Call({"mount", path(), FlexVolumePlugin::Options(spec_, extra)}).status();
}

FlexUnmounter::FlexUnmounter(FlexVolumePlugin& plugin, Host& host, std::string_view volume_name,
                             std::string_view pod_uid)
    : PodDirVolume(host, plugin.Name(), pod_uid, volume_name), plugin_(plugin) {}

Status FlexUnmounter::TearDown() {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path(), ec))) return OkStatus();
  auto r = plugin_.Call({"unmount", path()});
  if (!r.ok() && !IsNotSupported(r.status())) return r.status();
  // The default (and what a driver's unmount leaves): unmount the bind, remove the directory.
  return util::CleanupDir(host_.mounter(), path(), false);
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// Drivers under options.dir not in `made` (by driver name), each made after its init.
std::vector<std::unique_ptr<VolumePlugin>> Probe(Host& host, const FlexVolumeOptions& options,
                                                 std::set<std::string>* made) {
  std::vector<std::unique_ptr<VolumePlugin>> out;
  std::error_code ec;
  for (fs::directory_iterator d(options.dir, ec), end; !ec && d != end; d.increment(ec)) {
    const std::string dir_name = d->path().filename().string();
    std::error_code ec2;
    if (dir_name.empty() || dir_name[0] == '.' || !d->is_directory(ec2)) continue;
    const std::string driver = UnescapePluginName(dir_name);
    if (made->count(driver)) continue;
    const size_t tilde = dir_name.rfind('~');
    const std::string executable =
        (d->path() / (tilde == std::string::npos ? dir_name : dir_name.substr(tilde + 1))).string();
    if (!IsExecutableFile(executable)) continue;  // being installed, perhaps
    auto init = RunDriver(host.exec(), executable, {"init"}, options.call_timeout);
    if (!init.ok()) {
      log::Warn("FlexVolume driver " + driver + " (" + executable +
                ") not loaded: init: " + init.status().message());
      continue;
    }
    log::Info("FlexVolume driver " + driver + " loaded from " + executable +
              (init->capabilities.attach ? " (attach)" : ""));
    made->insert(driver);
    out.push_back(std::make_unique<FlexVolumePlugin>(host, driver, executable, init->capabilities,
                                                     options.call_timeout));
  }
  return out;
}

}  // namespace

PluginManager::Prober FlexVolumeProber(Host& host, FlexVolumeOptions options) {
  struct State {
    std::mutex mu;
    std::set<std::string> made;
    std::optional<os::MonoTime> last;
  };
  auto state = std::make_shared<State>();
  return [&host, options = std::move(options), state] {
    std::lock_guard lock(state->mu);
    const os::MonoTime now = host.clock().Monotonic();
    if (state->last && now - *state->last < options.probe_interval) {
      return std::vector<std::unique_ptr<VolumePlugin>>();
    }
    state->last = now;
    return Probe(host, options, &state->made);
  };
}

}  // namespace kvol::volume::plugins
