#include "cmd/controllers.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "api/well_known.h"
#include "base/log.h"
#include "volume/plugins/csi/csi_plugin.h"
#include "volume/plugins/plugins.h"

namespace kvol::cmd {
namespace {

sigset_t StopSignals() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  return s;
}

// "k=v,k2=v2" -> labels.
StatusOr<std::map<std::string, std::string>> ParseLabels(const std::string& text) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string pair = text.substr(start, end - start);
    const size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgumentError("--node-labels: \"" + pair + "\" is not KEY=VALUE");
    }
    out[pair.substr(0, eq)] = pair.substr(eq + 1);
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string AgentRootDir(const NodeAgentOptions& opts, const std::string& default_dir) {
  return opts.root_dir.empty() ? default_dir + "/agent" : opts.root_dir;
}

StatusOr<RunningAgent> StartNodeAgent(client::Client& client, const NodeAgentOptions& opts,
                                      const std::string& default_dir,
                                      volume::PluginManager* plugins, const AgentEndpoint* endpoint,
                                      client::SharedInformers* informers) {
  node::AgentOptions ao;
  ao.plugins = plugins;
  ao.informers = informers;
  ao.node_name = opts.node_name.empty() ? Hostname() : opts.node_name;
  ao.root_dir = AgentRootDir(opts, default_dir);
  ao.version = kVersion;
  ao.node_ip = opts.node_ip;
  ao.csi_endpoints = opts.csi_drivers;
  ao.volume_stats_period = opts.volume_stats_period;
  ao.resync = opts.sync_frequency;
  ao.controller_attach_detach = opts.controller_attach_detach;
  ao.container_runtime_endpoint = opts.container_runtime_endpoint;
  ao.pod_logs_dir = opts.pod_logs_dir;
  ao.eviction_hard = opts.eviction_hard;
  ao.eviction_pressure_transition_period = opts.eviction_pressure_transition_period;
  if (endpoint) {
    ao.daemon_port = endpoint->port;
    ao.node_annotations[std::string(api::kAnnAgentCertificateSha256)] =
        endpoint->certificate_sha256;
  }
  if (!opts.local_path_root.empty()) {
    ao.node_annotations[std::string(api::kAnnLocalPathRoot)] = opts.local_path_root;
  }
  KVOL_ASSIGN_OR_RETURN(ao.node_labels, ParseLabels(opts.node_labels));
  std::error_code ec;
  std::filesystem::create_directories(ao.root_dir, ec);
  if (ec) return InternalError("mkdir " + ao.root_dir + ": " + ec.message());
  ao.root_dir = std::filesystem::canonical(ao.root_dir).string();
  if (auto data = std::filesystem::canonical(default_dir, ec); !ec) {
    ao.hidden_paths.push_back(data.string());
  }
  for (const auto& f : opts.hidden_files) {
    if (auto file = std::filesystem::canonical(f, ec); !ec)
      ao.hidden_paths.push_back(file.string());
  }
  // Containers are started by this very binary (`kvol container-init`).
  ao.init_binary = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) return InternalError("cannot find the kvol binary: " + ec.message());
  RunningAgent r;
  r.mounter = os::NewRealMounter();
  r.agent = std::make_unique<node::Agent>(client, ao, *r.mounter);
  for (auto& p : volume::plugins::InTreePlugins(r.agent->host())) {
    KVOL_RETURN_IF_ERROR(r.agent->plugins().Register(std::move(p)));
  }
  KVOL_RETURN_IF_ERROR(r.agent->plugins().Register(volume::plugins::NewCsiPlugin(r.agent->host())));
  // FlexVolume drivers installed now are registered before the volume manager reconstructs
  // what is on disk; those installed later are found when a volume names them.
  volume::plugins::FlexVolumeOptions flex;
  flex.dir = opts.volume_plugin_dir;
  auto prober = volume::plugins::FlexVolumeProber(r.agent->host(), flex);
  for (auto& p : prober()) {
    if (Status s = r.agent->plugins().Register(std::move(p)); !s.ok()) log::Warn(s.message());
  }
  r.agent->plugins().SetProber(std::move(prober));
  KVOL_RETURN_IF_ERROR(r.agent->Start());
  r.attacher = std::make_unique<controller::attacher::Controller>(
      client,
      controller::attacher::Options{.node_name = ao.node_name, .drivers = &r.agent->csi_drivers()});
  KVOL_RETURN_IF_ERROR(r.attacher->Start());
  r.capacity = std::make_unique<controller::provisioner::CapacityPublisher>(
      client, controller::provisioner::CapacityOptions{.node_name = ao.node_name,
                                                       .drivers = &r.agent->csi_drivers(),
                                                       .informers = informers});
  KVOL_RETURN_IF_ERROR(r.capacity->Start());
  r.provisioner = std::make_unique<controller::provisioner::Controller>(
      client, controller::provisioner::Options{
                  .node_name = ao.node_name,
                  .drivers = &r.agent->csi_drivers(),
                  .central = opts.central_provisioner,
                  .informers = informers,
                  .on_volumes_changed = [capacity = r.capacity.get()] { capacity->Refresh(); }});
  KVOL_RETURN_IF_ERROR(r.provisioner->Start());
  r.resizer = std::make_unique<controller::resizer::Controller>(
      client, controller::resizer::Options{.node_name = ao.node_name,
                                           .drivers = &r.agent->csi_drivers(),
                                           .central = opts.central_provisioner,
                                           .informers = informers});
  KVOL_RETURN_IF_ERROR(r.resizer->Start());
  r.snapshotter = std::make_unique<controller::snapshotter::Controller>(
      client, controller::snapshotter::Options{.node_name = ao.node_name,
                                               .drivers = &r.agent->csi_drivers(),
                                               .central = opts.central_provisioner,
                                               .informers = informers});
  KVOL_RETURN_IF_ERROR(r.snapshotter->Start());
  if (!opts.local_path_root.empty()) {
    r.local_path = std::make_unique<volume::LocalPathProvisioner>(
        volume::LocalPathOptions{opts.local_path_root, ao.node_name});
    r.local_provisioner = std::make_unique<controller::provisioner::NodeLocalController>(
        client, controller::provisioner::NodeLocalOptions{.node_name = ao.node_name,
                                                          .provisioner = r.local_path.get(),
                                                          .informers = informers});
    KVOL_RETURN_IF_ERROR(r.local_provisioner->Start());
  }
  return r;
}

std::string Hostname() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) == 0 && name[0]) return name;
  return "kvol";
}

StatusOr<Provisioners> RegisterProvisioners(const ProvisionerOptions& opts,
                                            const std::string& default_dir,
                                            volume::PluginManager& plugins) {
  Provisioners p;
  p.node_name = opts.node_name.empty() ? Hostname() : opts.node_name;
  auto local_path = std::make_unique<volume::LocalPathProvisioner>(volume::LocalPathOptions{
      opts.local_path_root.empty() ? default_dir + "/storage" : opts.local_path_root, p.node_name});
  volume::SubdirOptions so;
  so.share = opts.shared_dir.empty() ? default_dir + "/shared" : opts.shared_dir;
  if (!opts.shared_nfs.empty()) {
    size_t colon = opts.shared_nfs.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == opts.shared_nfs.size()) {
      return InvalidArgumentError("--shared-nfs must be SERVER:PATH, got \"" + opts.shared_nfs +
                                  "\"");
    }
    so.nfs_server = opts.shared_nfs.substr(0, colon);
    so.nfs_path = opts.shared_nfs.substr(colon + 1);
  }
  p.shared_dir = so.share;
  KVOL_RETURN_IF_ERROR(plugins.RegisterProvisioner(std::move(local_path)));
  KVOL_RETURN_IF_ERROR(
      plugins.RegisterProvisioner(std::make_unique<volume::SubdirProvisioner>(so)));
  return p;
}

void BlockSignals() {
  sigset_t s = StopSignals();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

void WaitForSignal() {
  sigset_t s = StopSignals();
  int sig = 0;
  sigwait(&s, &sig);
  log::Info(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ", shutting down");
}

}  // namespace kvol::cmd
