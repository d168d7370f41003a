// `kvol server`: the API server on an embedded SQLite store (or etcd), reachable by kubectl over
// HTTPS with the kubeconfig it writes, with the controllers, the scheduler and the node agent for
// this machine in the same process.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "api/well_known.h"
#include "apiserver/api.h"
#include "apiserver/http_server.h"
#include "apiserver/rest.h"
#include "apiserver/service_account_token.h"
#include "apiserver/tls.h"
#include "base/log.h"
#include "client/local/local_client.h"
#include "cmd/commands.h"
#include "cmd/controllers.h"
#include "cmd/manager.h"
#include "cmd/node_connection.h"
#include "node/runtime/cri/containerd.h"
#include "os/files.h"
#include "node/runtime/cri/pause_image.h"
#include "store/etcd_store.h"
#include "store/instrumented_store.h"
#include "store/sqlite_store.h"

namespace kvol::cmd {
namespace {

namespace fs = std::filesystem;

// Holds an exclusive lock on <data-dir>/kvol.lock for the life of the process.
Status LockDataDir(const std::string& dir, int* fd_out) {
  std::string path = dir + "/kvol.lock";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return UnavailableError("cannot open " + path + ": " + strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {0};
    ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
    close(fd);
    std::string who = n > 0 ? " (pid " + std::string(pid, static_cast<size_t>(n)) + ")" : "";
    return UnavailableError("data directory " + dir + " is in use by another kvol server" + who);
  }
  std::string me = std::to_string(getpid());
  if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, me.data(), me.size(), 0);
  *fd_out = fd;
  return OkStatus();
}

Status PrepareDataDir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return UnavailableError("cannot create data directory " + dir + ": " + ec.message());
  if (!fs::is_directory(dir, ec)) return UnavailableError(dir + " is not a directory");
  chmod(dir.c_str(), 0700);
  std::string probe = dir + "/.write-test";
  {
    std::ofstream f(probe);
    if (!f) return UnavailableError("data directory " + dir + " is not writable");
  }
  fs::remove(probe, ec);
  return OkStatus();
}

StatusOr<std::pair<std::string, int>> ParseListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgumentError("--listen must be ADDRESS:PORT, got \"" + listen + "\"");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  int port = 0;
  try {
    port = std::stoi(listen.substr(colon + 1));
  } catch (const std::exception&) {
    port = -1;
  }
  if (port < 0 || port > 65535 || host.empty()) {
    return InvalidArgumentError("--listen must be ADDRESS:PORT, got \"" + listen + "\"");
  }
  return std::make_pair(host, port);
}

// The StorageClass local-path, the default class, as k3s has it; made again if deleted.
Status EnsureDefaultStorageClass(client::Client& c) {
  auto& classes = c.resource<api::StorageClass>();
  auto existing = classes.Get("", "local-path");
  if (existing.ok()) return OkStatus();
  if (!api::IsNotFound(existing.error())) {
    return UnavailableError("reading StorageClass local-path: " + existing.error().message);
  }
  api::StorageClass sc;
  sc.metadata.name = "local-path";
  sc.metadata.annotations[std::string(api::kDefaultClassAnnotation)] = "true";
  sc.provisioner = "kvol.io/local-path";
  sc.reclaim_policy = "Delete";
  sc.volume_binding_mode = "WaitForFirstConsumer";
  auto created = classes.Create(sc);
  if (!created.ok() && !api::IsAlreadyExists(created.error())) {
    return UnavailableError("creating StorageClass local-path: " + created.error().message);
  }
  return OkStatus();
}

// The StorageClass loop, of the bundled driver: volumes made on the node the pod goes to, which
// may grow; not the default. Made at start when missing (an administrator's edits are kept).
Status EnsureLoopStorageClass(client::Client& c) {
  auto& classes = c.resource<api::StorageClass>();
  auto existing = classes.Get("", "loop");
  if (existing.ok()) return OkStatus();
  if (!api::IsNotFound(existing.error())) {
    return UnavailableError("reading StorageClass loop: " + existing.error().message);
  }
  api::StorageClass sc;
  sc.metadata.name = "loop";
  sc.provisioner = std::string(csi::driver::kDriverName);
  sc.reclaim_policy = "Delete";
  sc.volume_binding_mode = "WaitForFirstConsumer";
  sc.allow_volume_expansion = true;
  auto created = classes.Create(sc);
  if (!created.ok() && !api::IsAlreadyExists(created.error())) {
    return UnavailableError("creating StorageClass loop: " + created.error().message);
  }
  return OkStatus();
}

// The `kubernetes` Service in default, as kube-apiserver keeps it: what clients in pods (and
// Kubernetes' e2e framework) look the API up by. Its target port follows the server's.
Status EnsureKubernetesService(client::Client& c, int port) {
  auto& services = c.resource<api::Service>();
  const api::Json ports = api::Json::array(
      {{{"name", "https"}, {"port", 443}, {"protocol", "TCP"}, {"targetPort", port}}});
  auto existing = services.Get("default", "kubernetes");
  if (existing.ok()) {
    if (existing->spec.is_object() && existing->spec.value("ports", api::Json()) == ports) {
      return OkStatus();
    }
    api::Service updated = *existing;
    if (!updated.spec.is_object()) updated.spec = api::Json::object();
    updated.spec["ports"] = ports;
    auto written = services.Update(updated);
    if (!written.ok()) {
      return UnavailableError("updating Service default/kubernetes: " + written.error().message);
    }
    return OkStatus();
  }
  if (!api::IsNotFound(existing.error())) {
    return UnavailableError("reading Service default/kubernetes: " + existing.error().message);
  }
  api::Service svc;
  svc.metadata.name = "kubernetes";
  svc.metadata.namespace_ = "default";
  svc.metadata.labels = {{"component", "apiserver"}, {"provider", "kubernetes"}};
  svc.spec = {{"clusterIP", "10.96.0.1"},
              {"clusterIPs", api::Json::array({"10.96.0.1"})},
              {"type", "ClusterIP"},
              {"sessionAffinity", "None"},
              {"ports", ports}};
  auto created = services.Create(svc);
  if (!created.ok() && !api::IsAlreadyExists(created.error())) {
    return UnavailableError("creating Service default/kubernetes: " + created.error().message);
  }
  return OkStatus();
}

// The bundled driver's CSIDriver object, made once (an administrator's edits are kept): attached
// before staging, and serving PersistentVolumes and inline ephemeral volumes.
Status EnsureBundledCsiDriverObject(client::Client& c) {
  auto& drivers = c.resource<api::CSIDriver>();
  api::CSIDriver d;
  d.metadata.name = csi::driver::kDriverName;
  d.spec.attach_required = true;
  d.spec.pod_info_on_mount = false;
  d.spec.volume_lifecycle_modes = {"Persistent", "Ephemeral"};
  d.spec.fs_group_policy = "ReadWriteOnceWithFSType";
  d.spec.storage_capacity = true;  // it answers GetCapacity for its node
  auto created = drivers.Create(d);
  if (!created.ok() && !api::IsAlreadyExists(created.error())) {
    return UnavailableError("creating CSIDriver " + d.metadata.name + ": " +
                            created.error().message);
  }
  return OkStatus();
}

int Fail(const Status& s) {
  log::Error(s.message());
  return 1;
}

// The embedded SQLite store in the data directory ("" or "sqlite"), or etcd at `store`'s URL.
StatusOr<std::unique_ptr<store::Store>> OpenStore(const std::string& url, const std::string& dir) {
  if (url.empty() || url == "sqlite") {
    store::SqliteOptions so;
    so.path = dir + "/kvol.db";
    KVOL_ASSIGN_OR_RETURN(auto opened, store::OpenSqliteStore(so));
    log::Info("store: sqlite " + so.path + " at revision " +
              std::to_string(opened->CurrentRevision().value()));
    return store::Instrumented(std::move(opened));
  }
  KVOL_ASSIGN_OR_RETURN(auto eo, store::ParseEtcdUrl(url));
  KVOL_ASSIGN_OR_RETURN(auto opened, store::OpenEtcdStore(eo));
  auto rev = opened->CurrentRevision();
  if (!rev.ok()) return rev.status().Annotate("cannot reach etcd at " + url);
  log::Info("store: etcd " + url + " at revision " + std::to_string(*rev));
  return store::Instrumented(std::move(opened));
}

// The names the serving certificate is for: loopback, the machine's name, and the address
// listened on.
std::vector<std::string> ServingNames(const std::string& host) {
  std::vector<std::string> names = {"127.0.0.1", "localhost", "::1"};
  if (const std::string h = Hostname(); h != "kvol") names.push_back(h);
  if (host != "0.0.0.0" && host != "::" && host != "127.0.0.1") names.push_back(host);
  return names;
}

// The URL clients on this machine reach the server at.
std::string ClientUrl(const std::string& host, int port) {
  const std::string client_host = host == "0.0.0.0" || host == "::" ? "127.0.0.1" : host;
  return "https://" +
         (client_host.find(':') != std::string::npos ? "[" + client_host + "]" : client_host) +
         ":" + std::to_string(port);
}

// The controllers and the scheduler, on the in-process client, under leader election.
std::unique_ptr<Manager> StartControllers(client::Client& local, volume::PluginManager& plugins,
                                          client::SharedInformers& informers,
                                          const Provisioners& provisioners,
                                          const AttachDetachOptions& attach_detach,
                                          const std::string& root_ca) {
  log::Info("provisioners: kvol.io/local-path (default class local-path) on " +
            provisioners.node_name + ", k8s-sigs.io/nfs-subdir-external-provisioner on " +
            provisioners.shared_dir);
  ManagerOptions mo;
  mo.plugins = &plugins;
  mo.informers = &informers;
  mo.attach_detach = AttachDetachReconcilerOptions(attach_detach);
  mo.root_ca = root_ca;
  mo.identity = Hostname() + "_" + std::to_string(getpid());
  auto controllers = std::make_unique<Manager>(local, mo);
  controllers->Start();
  log::Info("controllers: leader election on kube-system/kvol-controller-manager as " +
            mo.identity);
  return controllers;
}

// The bundled CSI driver for this machine's node: its socket under the agent's plugins/
// directory (where kubelet's drivers put theirs), its volumes under DATA_DIR/csi-loop.
StatusOr<std::unique_ptr<csi::driver::Driver>> StartBundledCsiDriver(const NodeAgentOptions& node,
                                                                     const std::string& dir) {
  return csi::driver::Driver::Start({.endpoint = "unix://" + AgentRootDir(node, dir) + "/plugins/" +
                                                 csi::driver::kDriverName + "/csi.sock",
                                     .node_id = node.node_name,
                                     .data_dir = dir + "/csi-loop"});
}

// The issuer of service account tokens, signing with the key at
// --service-account-signing-key-file (DATA_DIR/pki/sa.key by default, made when missing).
Status StartServiceAccountTokens(apiserver::Api& api, const ServerOptions& opts,
                                 const std::string& dir) {
  const std::string key_file = opts.service_account_signing_key_file.empty()
                                   ? dir + "/pki/sa.key"
                                   : opts.service_account_signing_key_file;
  auto pem = opts.service_account_signing_key_file.empty()
                 ? apiserver::EnsureSigningKey(key_file)
                 : [&]() -> StatusOr<std::string> {
                     std::string text;
                     KVOL_RETURN_IF_ERROR(os::ReadFile(key_file, &text));
                     return text;
                   }();
  if (!pem.ok()) return pem.status().Annotate("the service account signing key " + key_file);
  auto signer = apiserver::JwtSigner::FromPem(*pem);
  if (!signer.ok()) return signer.status().Annotate(key_file);
  apiserver::ServiceAccountTokenOptions to;
  if (!opts.service_account_issuer.empty()) to.issuer = opts.service_account_issuer;
  to.max_expiration = opts.service_account_max_token_expiration;
  api.SetServiceAccountTokens(
      std::make_unique<apiserver::ServiceAccountTokens>(api, *std::move(signer), std::move(to)));
  log::Info("service account tokens: signed with " + key_file);
  return OkStatus();
}

}  // namespace

int RunServer(const ServerOptions& opts) {
  // Signals are taken by WaitForSignal below; every thread started from here inherits the mask.
  BlockSignals();

  auto listen = ParseListen(opts.listen);
  if (!listen.ok()) return Fail(listen.status());
  const std::string dir = fs::absolute(opts.data_dir).lexically_normal().string();
  if (Status s = PrepareDataDir(dir); !s.ok()) return Fail(s);
  int lock_fd = -1;
  if (Status s = LockDataDir(dir, &lock_fd); !s.ok()) return Fail(s);
  log::Info("data directory " + dir);

  auto opened = OpenStore(opts.store, dir);
  if (!opened.ok()) return Fail(opened.status());
  std::unique_ptr<store::Store> store = *std::move(opened);

  apiserver::Api api(*store, os::RealClock());
  if (Status s = api.Start(); !s.ok()) return Fail(s.Annotate("starting the API"));
  log::Info(
      "api: watch caches filled, namespaces default, kube-system, kube-public, kube-node-lease");

  const auto& [host, port] = *listen;
  auto tls = apiserver::EnsureTls(dir, ServingNames(host));
  if (!tls.ok()) return Fail(tls.status());
  auto token = apiserver::EnsureAdminToken(dir);
  if (!token.ok()) return Fail(token.status());
  log::Info("tls: CA and serving certificate in " + dir + "/pki");
  if (Status s = StartServiceAccountTokens(api, opts, dir); !s.ok()) return Fail(s);

  apiserver::NodeConnections nodes;
  apiserver::RestOptions ro;
  ro.token = *token;
  ro.nodes = &nodes;
  apiserver::RestHandler rest(api, ro);
  apiserver::HttpServerOptions ho{
      .host = host, .port = port, .cert_pem = tls->server_cert_pem, .key_pem = tls->server_key_pem};
  apiserver::HttpServer http(ho, [&](const apiserver::HttpRequest& req,
                                     apiserver::ResponseWriter& w) { rest.Handle(req, w); });
  if (Status s = http.Start(); !s.ok()) return Fail(s);
  const std::string url = ClientUrl(host, http.port());
  if (Status s = apiserver::WriteKubeconfig(dir, url, tls->ca_cert_pem, *token); !s.ok()) {
    return Fail(s);
  }
  log::Info("https: listening on " + host + ":" + std::to_string(http.port()));

  // The controllers use the in-process client: no HTTP, no JSON between them and the API.
  client::LocalClient local(api);
  // One plugin manager for the process: the controllers' provisioners and the agent's plugins.
  volume::PluginManager plugins;
  auto provisioners = RegisterProvisioners(opts.provisioners, dir, plugins);
  if (!provisioners.ok()) return Fail(provisioners.status());
  if (Status s = EnsureDefaultStorageClass(local); !s.ok()) return Fail(s);
  if (Status s = EnsureKubernetesService(local, http.port()); !s.ok()) return Fail(s);
  // One informer per kind for the controllers and the agent.
  client::SharedInformers informers(local);
  std::unique_ptr<Manager> controllers;
  if (opts.controllers) {
    controllers = StartControllers(local, plugins, informers, *provisioners, opts.attach_detach,
                                   tls->ca_cert_pem);
  } else {
    log::Info("controllers: not run here (--no-controllers)");
  }
  std::optional<RunningAgent> agent;
  std::unique_ptr<LocalNodeConnection> local_node;
  std::unique_ptr<csi::driver::Driver> bundled_driver;
  std::unique_ptr<node::cri::Containerd> containerd;
  if (opts.agent) {
    NodeAgentOptions no = opts.node;
    if (opts.container_runtime == "containerd") {
      // Sandboxes run kvol's own pause image unless told otherwise: no registry is needed.
      const std::string pause =
          opts.pause_image.empty() ? std::string(node::cri::kPauseImage) : opts.pause_image;
      auto started = node::cri::Containerd::Start(
          {.dir = dir + "/containerd", .sandbox_image = pause}, std::chrono::minutes(1));
      if (!started.ok()) return Fail(started.status().Annotate("starting containerd"));
      containerd = *std::move(started);
      if (opts.pause_image.empty()) {
        Status s = node::cri::ImportPauseImage(containerd->socket(), dir + "/containerd");
        if (!s.ok()) return Fail(s);
      }
      no.container_runtime_endpoint = containerd->endpoint();
      log::Info("containerd: running on " + containerd->endpoint());
    }
    no.node_name = provisioners->node_name;
    no.central_provisioner = true;
    if (opts.bundled_csi_driver) {
      auto started = StartBundledCsiDriver(no, dir);
      if (!started.ok()) return Fail(started.status().Annotate("starting the bundled CSI driver"));
      bundled_driver = *std::move(started);
      no.csi_drivers.push_back("unix://" + bundled_driver->socket_path());
      if (Status s = EnsureBundledCsiDriverObject(local); !s.ok()) return Fail(s);
      if (Status s = EnsureLoopStorageClass(local); !s.ok()) return Fail(s);
    }
    auto started = StartNodeAgent(local, no, dir, &plugins, nullptr, &informers);
    if (!started.ok()) return Fail(started.status().Annotate("starting the node agent"));
    agent = *std::move(started);
    local_node = std::make_unique<LocalNodeConnection>(*agent->agent);
    nodes.Register(agent->agent->node_name(), local_node.get());
    log::Info("agent: node " + agent->agent->node_name() + " registered, pods' volumes under " +
              AgentRootDir(no, dir));
  } else {
    log::Info("agent: not run here (--no-agent)");
  }
  log::Info("kvol is ready. To use it: export KUBECONFIG=" + dir + "/kubeconfig; kubectl get pv");
  log::Info("the live view: kubectl proxy, then http://127.0.0.1:8001/ui/");

  WaitForSignal();
  if (agent) nodes.Register(agent->agent->node_name(), nullptr);
  if (agent) agent->Stop();
  if (containerd) {
    if (Status s = containerd->Stop(std::chrono::seconds(10)); !s.ok()) log::Warn(s.message());
  }
  if (bundled_driver) bundled_driver->Shutdown();
  if (controllers) controllers->Stop();
  informers.Stop();
  rest.Shutdown();
  http.Stop();
  api.Stop();
  store.reset();
  close(lock_fd);
  log::Info("stopped");
  return 0;
}

}  // namespace kvol::cmd
