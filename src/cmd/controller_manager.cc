// `kvol controller-manager`: the controllers and the scheduler in their own process, talking to
// the API server over HTTPS with a kubeconfig, as kube-controller-manager does, with the
// FlexVolume drivers of --flex-volume-plugin-dir for attach, detach and expansion. Several may run;
// the Lease kube-system/kvol-controller-manager lets one lead (a `kvol server` that runs its own
// controllers competes for the same Lease).
#include <unistd.h>

#include "base/log.h"
#include "client/http.h"
#include "cmd/commands.h"
#include "cmd/controllers.h"
#include "cmd/manager.h"
#include "controller/host/controller_host.h"
#include "volume/plugins/plugins.h"

namespace kvol::cmd {

int RunControllerManager(const ControllerManagerOptions& opts) {
  BlockSignals();
  auto cfg = client::LoadKubeconfig(opts.kubeconfig);
  if (!cfg.ok()) {
    log::Error(cfg.status().message());
    return 1;
  }
  // Enough connections for every worker to write at once.
  cfg->max_idle_connections = static_cast<size_t>(std::max(16, opts.workers * 2 + 8));
  const std::string server = cfg->server;
  // Published in every namespace as kube-root-ca.crt: the CA this process trusts the server by.
  const std::string root_ca = cfg->ca_pem;
  auto client = client::HttpClient::Create(*std::move(cfg));
  if (!client.ok()) {
    log::Error(client.status().message());
    return 1;
  }
  // FlexVolume drivers' attach, detach and expandvolume run here, on the controllers' host.
  auto mounter = os::NewRealMounter();
  controller::ControllerHost host(**client, opts.data_dir + "/controller-manager", *mounter);
  volume::PluginManager plugins;
  auto provisioners = RegisterProvisioners(opts.provisioners, opts.data_dir, plugins);
  if (!provisioners.ok()) {
    log::Error(provisioners.status().message());
    return 1;
  }
  auto prober = volume::plugins::FlexVolumeProber(
      host, volume::plugins::FlexVolumeOptions{.dir = opts.flex_volume_plugin_dir});
  for (auto& p : prober()) {
    if (Status s = plugins.Register(std::move(p)); !s.ok()) log::Warn(s.message());
  }
  plugins.SetProber(std::move(prober));
  log::Info("controller-manager: API server " + server);
  log::Info("provisioners: kvol.io/local-path on " + provisioners->node_name +
            ", k8s-sigs.io/nfs-subdir-external-provisioner on " + provisioners->shared_dir);
  ManagerOptions mo;
  mo.workers = opts.workers;
  mo.plugins = &plugins;
  mo.attach_detach = AttachDetachReconcilerOptions(opts.attach_detach);
  mo.root_ca = root_ca;
  mo.identity = Hostname() + "_" + std::to_string(getpid());
  Manager controllers(**client, mo);
  controllers.Start();
  log::Info("controllers: leader election on kube-system/kvol-controller-manager as " +
            mo.identity);
  WaitForSignal();
  controllers.Stop();
  log::Info("stopped");
  return 0;
}

}  // namespace kvol::cmd
