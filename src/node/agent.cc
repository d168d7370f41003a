// The node agent's wiring: host, caches, node status, volume manager.
#include "node/agent.h"

#include "api/api_error.h"
#include "api/well_known.h"
#include "base/log.h"
#include "client/worker.h"
#include "node/runtime/cri/cri_backend.h"
#include "node/runtime/process_backend.h"
#include "node/runtime/rootfs.h"
#include "node/volume_usage.h"

namespace kvol::node {

// The Host the plugins run on: pod directories under the root, the real (or given) OS, and
// ConfigMaps/Secrets from the caches (read from the API when the cache has not seen them yet).
class Agent::AgentHost final : public volume::Host {
 public:
  AgentHost(Agent& agent, os::Mounter& mounter, os::Exec& exec, api::ResourceList allocatable)
      : agent_(agent), mounter_(mounter), exec_(exec), allocatable_(std::move(allocatable)) {}

  std::string PodVolumeDir(std::string_view pod_uid, std::string_view plugin,
                           std::string_view volume) const override {
    return volume::layout::PodVolumeDir(agent_.options_.root_dir, pod_uid, plugin, volume);
  }
  std::string PodDeviceDir(std::string_view pod_uid, std::string_view plugin,
                           std::string_view volume) const override {
    return volume::layout::PodDeviceDir(agent_.options_.root_dir, pod_uid, plugin, volume);
  }
  std::string PluginDir(std::string_view plugin) const override {
    return volume::layout::PluginDir(agent_.options_.root_dir, plugin);
  }
  os::Mounter& mounter() override { return mounter_; }
  os::Exec& exec() override { return exec_; }
  const os::Clock& clock() const override { return agent_.clock_; }
  std::string NodeName() const override { return agent_.options_.node_name; }
  api::ResourceList NodeAllocatable() const override { return allocatable_; }

  StatusOr<api::ConfigMap> GetConfigMap(std::string_view ns, std::string_view name) override {
    return Fetch(agent_.config_maps_, ns, name, "configmap");
  }
  StatusOr<api::Secret> GetSecret(std::string_view ns, std::string_view name) override {
    return Fetch(agent_.secrets_, ns, name, "secret");
  }
  StatusOr<api::authentication::TokenRequestStatus> ServiceAccountToken(
      const api::Pod& pod, std::string_view audience,
      std::optional<int64_t> expiration_seconds) override {
    return agent_.tokens_.Get(pod, audience, expiration_seconds);
  }
  volume::plugins::CsiDrivers* CsiDrivers() override { return agent_.csi_drivers_; }
  StatusOr<api::CSIDriver> GetCSIDriver(std::string_view name) override {
    // From the cache once it has synced: the populator asks at every pass, and a miss there is
    // an answer, not a reason to ask the API server.
    auto* cache = agent_.csi_driver_objects_;
    if (cache && cache->HasSynced()) {
      if (auto cached = cache->Get("", name)) return *cached;
      return NotFoundError("csidriver \"" + std::string(name) + "\" not found");
    }
    return Fetch<api::CSIDriver>(nullptr, "", name, "csidriver");
  }
  StatusOr<api::VolumeAttachment> GetVolumeAttachment(std::string_view name) override {
    return Fetch<api::VolumeAttachment>(nullptr, "", name, "volumeattachment");
  }
  StatusOr<api::VolumeAttachment> CreateVolumeAttachment(const api::VolumeAttachment& va) override {
    auto created = agent_.client_.resource<api::VolumeAttachment>().Create(va);
    if (created.ok()) return *std::move(created);
    return Status(client::ApiStatus(created.error()).code(), created.error().message);
  }
  Status DeleteVolumeAttachment(std::string_view name) override {
    auto deleted = agent_.client_.resource<api::VolumeAttachment>().Delete("", name);
    if (deleted.ok() || api::IsNotFound(deleted.error())) return OkStatus();
    return Status(client::ApiStatus(deleted.error()).code(), deleted.error().message);
  }

 private:
  template <class T>
  StatusOr<T> Fetch(client::Informer<T>* cache, std::string_view ns, std::string_view name,
                    std::string_view what) {
    if (cache) {
      if (auto cached = cache->Get(ns, name)) return *cached;
    }
    auto got = agent_.client_.resource<T>().Get(ns, name);
    if (got.ok()) return *std::move(got);
    if (api::IsNotFound(got.error())) {
      return NotFoundError(std::string(what) + " \"" + std::string(name) + "\" not found");
    }
    return UnavailableError(got.error().message);
  }

  Agent& agent_;
  os::Mounter& mounter_;
  os::Exec& exec_;
  const api::ResourceList allocatable_;
};

namespace {

api::ResourceList Allocatable(const os::MachineInfo& m) {
  return {{"cpu", api::Quantity::FromUnits(m.cpus)},
          {"memory", api::Quantity::FromUnits(m.memory_bytes)},
          {"ephemeral-storage", api::Quantity::FromUnits(m.disk_bytes)}};
}

os::MachineInfo MachineOf(const AgentOptions& o) {
  os::MachineInfo m = os::ReadMachineInfo(o.root_dir);
  if (!o.node_ip.empty()) m.address = o.node_ip;
  return m;
}

}  // namespace

Agent::Agent(client::Client& client, AgentOptions options, os::Mounter& mounter, os::Exec& exec,
             os::Clock& clock)
    : client_(client),
      options_(std::move(options)),
      clock_(clock),
      machine_(MachineOf(options_)),
      host_(std::make_unique<AgentHost>(*this, mounter, exec, Allocatable(machine_))),
      plugins_(options_.plugins ? options_.plugins : &own_plugins_),
      csi_drivers_(options_.csi_drivers ? options_.csi_drivers : &own_csi_drivers_),
      tokens_(client, clock) {}

Agent::~Agent() { Stop(); }

volume::Host& Agent::host() { return *host_; }

void Agent::MakeVolumeManager() {
  volumemanager::Sources sources;
  sources.pods = [this] { return pods_->List(); };
  sources.lookups.claim = [this](const std::string& ns, const std::string& name) {
    return claims_->Get(ns, name);
  };
  sources.lookups.volume = [this](const std::string& name) { return volumes_->Get("", name); };
  sources.lookups.config_map_version = [this](const std::string& ns, const std::string& name) {
    auto cm = config_maps_->Get(ns, name);
    return cm ? cm->metadata.resource_version : std::string();
  };
  sources.lookups.secret_version = [this](const std::string& ns, const std::string& name) {
    auto s = secrets_->Get(ns, name);
    return s ? s->metadata.resource_version : std::string();
  };
  volume_status_ =
      std::make_unique<VolumeStatusWriter>(client_, client::SinkTo(*recorder_), clock_,
                                           VolumeStatusOptions{.host_ip = machine_.address});
  volumemanager::Options vo;
  vo.root_dir = options_.root_dir;
  vo.resync = options_.resync;
  vo.on_reconciled = [this](const std::vector<volumemanager::PodVolumesState>& pods) {
    return volume_status_->Report(pods);
  };
  vo.finish_resize = [this](const volumemanager::DesiredVolume::FsResize& r) {
    return volume_status_->FinishClaimResize(r);
  };
  vo.on_volumes_in_use = [this](std::vector<std::string> names) {
    status_->SetVolumesInUse(std::move(names));
  };
  if (options_.controller_attach_detach) {
    vo.controller_attachments = [this] {
      volumemanager::ControllerAttachments out;
      auto node = node_->Get("", options_.node_name);
      if (!node) return out;
      for (const auto& v : node->status.volumes_attached) out.attached[v.name] = v.device_path;
      out.in_use.insert(node->status.volumes_in_use.begin(), node->status.volumes_in_use.end());
      return out;
    };
  } else {
    vo.on_volumes_attached = [this](std::vector<api::AttachedVolume> volumes) {
      status_->SetVolumesAttached(std::move(volumes));
    };
  }
  vo.on_pod_cleaned_up = [this] { runtime_->Kick(); };
  sources.containers_alive = [this](const std::string& uid) {
    return runtime_->ContainersAlive(uid);
  };
  volume_manager_ = std::make_unique<volumemanager::VolumeManager>(
      *host_, *plugins_, std::move(sources), client::SinkTo(*recorder_), clock_, vo);
  volume_health_ = std::make_unique<VolumeHealthMonitor>(
      *plugins_, [this] { return volume_manager_->MountedPodVolumes(); },
      client::SinkTo(*recorder_), clock_, options_.volume_stats_period,
      [this](const std::string& path) -> StatusOr<volume::VolumeStats> {
        KVOL_ASSIGN_OR_RETURN(auto mounts, host_->mounter().List());
        return PathUsage(path, mounts);
      });
}

StatusOr<std::unique_ptr<runtime::Backend>> Agent::MakeBackend() {
  if (!options_.container_runtime_endpoint.empty()) {
    cri::CriBackendOptions co;
    co.endpoint = options_.container_runtime_endpoint;
    co.logs_root = options_.pod_logs_dir;
    co.containers_dir = options_.root_dir + "/containers";
    co.secrets = [this](std::string_view ns, std::string_view name) {
      return host().GetSecret(ns, name);
    };
    auto backend = cri::CriBackend::New(co);
    if (!backend.ok()) return backend.status();
    return std::unique_ptr<runtime::Backend>(*std::move(backend));
  }
  if (options_.init_binary.empty()) return std::unique_ptr<runtime::Backend>();
  runtime::ProcessBackendOptions po;
  po.containers_dir = options_.root_dir + "/containers";
  po.init_binary = options_.init_binary;
  po.version = options_.version;
  po.hidden_paths = options_.hidden_paths;
  po.hidden_paths.push_back(options_.root_dir);
  for (auto& p : runtime::NodeSecretPaths()) po.hidden_paths.push_back(std::move(p));
  return std::unique_ptr<runtime::Backend>(
      std::make_unique<runtime::ProcessBackend>(std::move(po)));
}

void Agent::MakePodRuntime(std::unique_ptr<runtime::Backend> backend) {
  runtime::PodRuntimeSources rs;
  rs.pods = [this] { return pods_->List(); };
  rs.volumes = [this](const std::string& uid) {
    std::map<std::string, runtime::MountedVolume> out;
    for (auto& [name, v] : volume_manager_->PodVolumes(uid))
      out[name] = {v.path, v.block, v.read_only};
    return out;
  };
  rs.volumes_torn_down = [this](const std::string& uid) {
    return volume_manager_->PodVolumesTornDown(uid);
  };
  rs.containers_stopped = [this] { volume_manager_->Kick(); };
  runtime::PodRuntimeOptions rto;
  rto.root_dir = options_.root_dir;
  rto.host_ip = machine_.address;
  runtime_ = std::make_unique<runtime::PodRuntime>(
      client_, *host_, std::move(backend), std::move(rs), client::SinkTo(*recorder_), clock_, rto);
}

Status Agent::Start(std::chrono::milliseconds sync_timeout) {
  client::EventRecorderOptions ro;
  ro.component = "kubelet";
  ro.host = options_.node_name;
  recorder_ = std::make_unique<client::EventRecorder>(client_.resource<api::Event>(), ro, clock_);

  auto backend = MakeBackend();
  if (!backend.ok()) return backend.status();
  NodeStatusOptions so;
  if (*backend) so.runtime_version = (*backend)->RuntimeVersion();
  so.node_name = options_.node_name;
  so.labels = options_.node_labels;
  so.machine = machine_;
  so.version = options_.version;
  so.annotations = options_.node_annotations;
  if (options_.controller_attach_detach) {
    so.annotations[std::string(api::kAnnControllerManagedAttachDetach)] = "true";
  } else {
    so.absent_annotations.push_back(std::string(api::kAnnControllerManagedAttachDetach));
  }
  so.report_volumes_attached = !options_.controller_attach_detach;
  so.daemon_port = options_.daemon_port;
  PressureSources sources = MachineSources(options_.root_dir);
  if (runtime::Backend* b = backend->get()) sources.imagefs = [b] { return b->ImageFs(); };
  pressure_ = std::make_unique<PressureMonitor>(
      options_.eviction_hard, options_.eviction_pressure_transition_period, sources, clock_);
  so.pressure = [this] { return pressure_->Conditions(); };
  so.events = client::SinkTo(*recorder_);
  status_ = std::make_unique<NodeStatusManager>(client_, clock_, so);
  if (Status s = status_->Start(); !s.ok()) return s;
  if (Status s = StartPluginWatcher(); !s.ok()) return s;

  client::InformerOptions pod_opts;
  pod_opts.field_selector = "spec.nodeName=" + options_.node_name;
  pods_ = std::make_unique<client::Informer<api::Pod>>(client_.resource<api::Pod>(), pod_opts);
  client::InformerOptions node_opts;
  node_opts.field_selector = "metadata.name=" + options_.node_name;
  node_ = std::make_unique<client::Informer<api::Node>>(client_.resource<api::Node>(), node_opts);
  informers_ = std::make_unique<client::InformerScope>(client_, options_.informers);
  claims_ = &informers_->Get<api::PersistentVolumeClaim>();
  volumes_ = &informers_->Get<api::PersistentVolume>();
  config_maps_ = &informers_->Get<api::ConfigMap>();
  secrets_ = &informers_->Get<api::Secret>();
  csi_driver_objects_ = &informers_->Get<api::CSIDriver>();

  MakeVolumeManager();
  MakePodRuntime(*std::move(backend));

  // Every change to what a pod's volumes are made of wakes the reconciler and the runtime
  // (a container waiting for a ConfigMap key may start now).
  auto kick = [this](const auto&...) {
    volume_manager_->Kick();
    runtime_->Kick();
  };
  pods_->AddHandlers({.on_add =
                          [this, kick](const auto& pod) {
                            pod_claims_.Upsert(pod);
                            kick(pod);
                          },
                      .on_update =
                          [this, kick](const auto& old, const auto& pod) {
                            pod_claims_.Upsert(pod);
                            kick(old, pod);
                          },
                      .on_delete =
                          [this, kick](const auto& pod) {
                            tokens_.ForgetPod(pod->metadata.uid);
                            pod_claims_.Remove(pod->metadata.namespace_, pod->metadata.name);
                            kick(pod);
                          }});
  // The controller attached or detached something, or the node's volumesInUse was written.
  node_->AddHandlers({.on_add = kick, .on_update = kick, .on_delete = kick});
  // Of claims and volumes, only those this node's pods use.
  informers_->Handle<api::PersistentVolumeClaim>(client::WhenClaimUsed(pod_claims_, kick));
  informers_->Handle<api::PersistentVolume>(client::WhenVolumeUsed(pod_claims_, kick));
  informers_->Handle<api::ConfigMap>({.on_add = kick, .on_update = kick, .on_delete = kick});
  informers_->Handle<api::Secret>({.on_add = kick, .on_update = kick, .on_delete = kick});
  informers_->Handle<api::CSIDriver>({.on_add = kick, .on_update = kick, .on_delete = kick});
  pods_->Start();
  node_->Start();
  claims_->Start();
  volumes_->Start();
  config_maps_->Start();
  secrets_->Start();
  csi_driver_objects_->Start();
  const bool synced = pods_->WaitForSync(sync_timeout) && node_->WaitForSync(sync_timeout) &&
                      claims_->WaitForSync(sync_timeout) && volumes_->WaitForSync(sync_timeout) &&
                      config_maps_->WaitForSync(sync_timeout) &&
                      secrets_->WaitForSync(sync_timeout) &&
                      csi_driver_objects_->WaitForSync(sync_timeout);
  if (!synced) return UnavailableError("node agent: caches did not sync");
  // Containers a previous agent left running are found first, so that their volumes stay.
  if (Status s = runtime_->Start(); !s.ok()) return s;
  if (Status s = volume_manager_->Start(); !s.ok()) return s;
  volume_health_->Start();
  volume_metrics_ = std::make_shared<metrics::Collector>([this] {
    auto families = VolumeManagerFamilies(volume_manager_->VolumeCounts());
    for (auto& f : VolumeStatsFamilies(volume_health_->LatestByClaim())) {
      families.push_back(std::move(f));
    }
    return families;
  });
  metrics::AddCollector(volume_metrics_);
  return OkStatus();
}

Status Agent::StartPluginWatcher() {
  csi_node_info_ = std::make_unique<CsiNodeInfo>(client_, options_.node_name);
  csi_registration_ = std::make_unique<CsiRegistrationHandler>(*csi_node_info_, *csi_drivers_);
  plugin_watcher_ = std::make_unique<pluginwatcher::PluginWatcher>(
      pluginwatcher::PluginWatcherOptions{.dir = options_.root_dir + "/plugins_registry",
                                          .direct = options_.csi_endpoints},
      *csi_registration_);
  return plugin_watcher_->Start();
}

std::shared_ptr<const api::Pod> Agent::FindPod(std::string_view ns, std::string_view name) const {
  return pods_ ? pods_->Get(ns, name) : nullptr;
}

void Agent::Stop() {
  // Runtime and volume manager first (they read the caches), then the caches, then status
  // and events. Containers keep running.
  if (plugin_watcher_) plugin_watcher_->Stop();
  if (runtime_) runtime_->Stop();
  if (volume_metrics_) volume_metrics_->Detach();
  if (volume_health_) volume_health_->Stop();
  if (volume_manager_) volume_manager_->Stop();
  if (pods_) pods_->Stop();
  if (node_) node_->Stop();
  if (informers_) informers_->Stop();
  if (status_) status_->Stop();
  if (recorder_) recorder_->Flush(std::chrono::seconds(5));
}

}  // namespace kvol::node
