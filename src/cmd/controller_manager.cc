// `kvol controller-manager`: the controllers and the scheduler in their own process, talking to
// the API server over HTTPS with a kubeconfig, as kube-controller-manager does. Several may run;
// the Lease kube-system/kvol-controller-manager lets one lead (a `kvol server` that runs its own
// controllers competes for the same Lease).
#include <unistd.h>

#include "base/log.h"
#include "client/http.h"
#include "cmd/commands.h"
#include "cmd/controllers.h"
#include "cmd/manager.h"

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
  auto client = client::HttpClient::Create(*std::move(cfg));
  if (!client.ok()) {
    log::Error(client.status().message());
    return 1;
  }
  volume::PluginManager plugins;
  auto provisioners = RegisterProvisioners(opts.provisioners, opts.data_dir, plugins);
  if (!provisioners.ok()) {
    log::Error(provisioners.status().message());
    return 1;
  }
  log::Info("controller-manager: API server " + server);
  log::Info("provisioners: kvol.io/local-path on " + provisioners->node_name +
            ", k8s-sigs.io/nfs-subdir-external-provisioner on " + provisioners->shared_dir);
  ManagerOptions mo;
  mo.workers = opts.workers;
  mo.plugins = &plugins;
  mo.attach_detach = AttachDetachReconcilerOptions(opts.attach_detach);
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
