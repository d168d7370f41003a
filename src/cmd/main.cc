// The kvol binary: one executable whose subcommands run each part of the system.
#include <CLI/CLI.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "base/fd.h"
#include "cmd/commands.h"
#include "node/runtime/container.h"

namespace {

// A duration as Go writes one, "1m30s", "500ms", "2h": what kubelet's duration flags take.
std::optional<std::chrono::milliseconds> ParseGoDuration(const std::string& text) {
  static const std::map<std::string, double> kUnitMs = {
      {"ms", 1}, {"s", 1e3}, {"m", 60e3}, {"h", 3600e3}};
  double total = 0;
  size_t i = 0;
  if (text.empty()) return std::nullopt;
  while (i < text.size()) {
    size_t digits = i;
    while (digits < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
      ++digits;
    }
    size_t unit_end = digits;
    while (unit_end < text.size() && std::isalpha(static_cast<unsigned char>(text[unit_end]))) {
      ++unit_end;
    }
    auto unit = kUnitMs.find(text.substr(digits, unit_end - digits));
    if (digits == i || unit == kUnitMs.end()) return std::nullopt;
    total += std::stod(text.substr(i, digits - i)) * unit->second;
    i = unit_end;
  }
  return std::chrono::milliseconds(static_cast<int64_t>(total));
}

// A duration flag in Go's syntax, at least `min`, stored in `out`; the refusal says what is
// wanted and shows `examples`.
template <class Duration>
CLI::Option* AddDurationOption(CLI::App* app, const std::string& name, Duration& out,
                               std::chrono::milliseconds min, const std::string& examples,
                               const std::string& help) {
  const std::string wanted =
      min.count() <= 0   ? "a duration"
      : min.count() == 1 ? "a positive duration"
                         : "a duration of " + std::to_string(min.count() / 1000) + "s or more";
  return app
      ->add_option_function<std::string>(
          name,
          [name, &out, min, wanted, examples](const std::string& text) {
            auto d = ParseGoDuration(text);
            if (!d || *d < min) {
              throw CLI::ValidationError(
                  name, "\"" + text + "\" is not " + wanted + " (" + examples + ")");
            }
            out = std::chrono::duration_cast<Duration>(*d);
          },
          help)
      ->type_name("DURATION");
}

void AddProvisionerOptions(CLI::App* app, kvol::cmd::ProvisionerOptions& o) {
  app->add_option("--node-name", o.node_name, "This machine's node name (default: the hostname).");
  app->add_option("--local-path-root", o.local_path_root,
                  "Where kvol.io/local-path makes volume directories on this node "
                  "(default: DATA_DIR/storage).");
  app->add_option("--shared-dir", o.shared_dir,
                  "The share k8s-sigs.io/nfs-subdir-external-provisioner makes directories on: an "
                  "NFS export mounted here, or any directory (default: DATA_DIR/shared).");
  app->add_option("--shared-nfs", o.shared_nfs,
                  "SERVER:PATH when --shared-dir is that NFS export mounted: volumes are then nfs "
                  "volumes, hostPath ones otherwise.");
}

// --root-dir and --node-labels; --node-name is the provisioners' in `kvol server` (the same
// machine) and added by `kvol agent` itself.
void AddNodeAgentOptions(CLI::App* app, kvol::cmd::NodeAgentOptions& o) {
  app->add_option("--root-dir", o.root_dir,
                  "The node agent's directory: pods' volumes are mounted under ROOT_DIR/pods "
                  "(default: DATA_DIR/agent).");
  app->add_option("--node-labels", o.node_labels,
                  "Labels for this machine's Node, KEY=VALUE[,KEY=VALUE...].");
  app->add_option("--node-ip", o.node_ip,
                  "This machine's address on its Node (InternalIP, pods' hostIP; default: the "
                  "first non-loopback IPv4 address).");
  app->add_option("--volume-plugin-dir", o.volume_plugin_dir,
                  "Where FlexVolume drivers are installed, as <vendor~driver>/<driver>; drivers "
                  "installed while the agent runs are found too.")
      ->capture_default_str();
  app->add_option("--csi-driver", o.csi_drivers,
                  "A CSI driver's socket, unix:///path/csi.sock, to register on this node without "
                  "node-driver-registrar (its name from GetPluginInfo). May be repeated. Drivers "
                  "also register through ROOT_DIR/plugins_registry/.");
  AddDurationOption(app, "--sync-frequency", o.sync_frequency, std::chrono::milliseconds(1),
                    "1m0s, 10s",
                    "How often every pod's volumes are set up again, bringing configMap, secret, "
                    "downwardAPI and projected contents (and service account tokens) up to date "
                    "(default: 1m0s).");
  AddDurationOption(
      app, "--volume-stats-agg-period", o.volume_stats_period, std::chrono::milliseconds(1),
      "1m0s, 10s",
      "How often the usage and condition of pods' volumes are gathered; a volume whose "
      "condition turns abnormal gets a VolumeConditionAbnormal event (default: 1m0s).");
  app->add_option("--enable-controller-attach-detach", o.controller_attach_detach,
                  "Let the attach/detach controller attach and detach this node's volumes "
                  "(false: the agent attaches them itself).")
      ->capture_default_str();
  app->add_option("--container-runtime-endpoint", o.container_runtime_endpoint,
                  "A CRI runtime's socket, unix:///run/containerd/containerd.sock: pods' "
                  "containers run from their images through it. Without it, kvol's own runtime "
                  "runs them from this machine's binaries.");
  app->add_option("--pod-logs-dir", o.pod_logs_dir,
                  "Where a CRI runtime writes pods' logs, a directory per pod.")
      ->capture_default_str();
  app->add_option_function<std::string>(
         "--eviction-hard",
         [&o](const std::string& text) {
           auto t = kvol::node::ParseEvictionHard(text);
           if (!t.ok()) throw CLI::ValidationError(t.status().message());
           o.eviction_hard = *std::move(t);
         },
         "SIGNAL<VALUE[,...]: when what is left of memory.available, nodefs.available, "
         "nodefs.inodesFree, imagefs.available, imagefs.inodesFree or pid.available falls "
         "below VALUE (a quantity, or a percentage of the whole), the node reports "
         "MemoryPressure, DiskPressure or PIDPressure and takes no new pods. \"\" for none "
         "(default: " +
             std::string(kvol::node::kDefaultEvictionHard) + ").")
      ->type_name("THRESHOLDS");
  AddDurationOption(
      app, "--eviction-pressure-transition-period", o.eviction_pressure_transition_period,
      std::chrono::milliseconds(0), "5m0s, 30s",
      "How long a pressure condition stays True after its signal recovers (default: 5m0s).");
}

// The attach/detach controller's flags, for `kvol server` and `kvol controller-manager`.
void AddAttachDetachOptions(CLI::App* app, kvol::cmd::AttachDetachOptions& o) {
  AddDurationOption(
      app, "--max-wait-for-unmount", o.max_wait_for_unmount, std::chrono::milliseconds(1),
      "6m0s, 30s",
      "How long the attach/detach controller waits for a node that is not Ready to unmount "
      "a volume no pod there needs before it detaches the volume anyway (default: 6m0s).");
  app->add_flag("--disable-force-detach-on-timeout", o.disable_force_detach_on_timeout,
                "Never detach a volume a node that is not Ready may still use; only the "
                "node.kubernetes.io/out-of-service taint lets it go.");
}

CLI::App* AddServerCommand(CLI::App& app, kvol::cmd::ServerOptions& server) {
  CLI::App* s = app.add_subcommand(
      "server",
      "Run the API server, the controllers, the scheduler and the node agent for this machine, "
      "on an embedded store. Writes DATA_DIR/kubeconfig for kubectl.");
  s->add_option("--data-dir", server.data_dir, "State, certificates and kubeconfig live here.")
      ->capture_default_str();
  s->add_option("--listen", server.listen, "HTTPS address and port for the API.")
      ->capture_default_str();
  s->add_option("--store", server.store,
                "sqlite (embedded, in the data directory) or etcd://HOST:PORT[,HOST:PORT...]")
      ->capture_default_str();
  AddProvisionerOptions(s, server.provisioners);
  AddAttachDetachOptions(s, server.attach_detach);
  s->add_flag("!--no-controllers", server.controllers,
              "Do not run the controllers and the scheduler here (a `kvol controller-manager` "
              "runs them).");

  s->add_flag("!--no-bundled-csi-driver", server.bundled_csi_driver,
              "Do not run the bundled CSI driver, loop.csi.kvol.io (volumes on loop devices "
              "under DATA_DIR/csi-loop), for this machine.");
  s->add_flag("!--no-agent", server.agent,
              "Do not run the node agent for this machine here (no Node is registered and no "
              "volumes are mounted by this process).");
  s->add_option("--container-runtime", server.container_runtime,
                "kvol (this machine's own binaries run as containers) or containerd (a "
                "containerd of the server's own, under DATA_DIR/containerd, runs pods from "
                "their images; Debian's containerd, runc and containernetworking-plugins).")
      ->check(CLI::IsMember({"kvol", "containerd"}))
      ->capture_default_str();
  s->add_option("--pause-image", server.pause_image,
                "The image of pods' sandboxes for --container-runtime containerd; it must be "
                "present in containerd (imported) when no registry is reachable. Default: kvol's "
                "own, kvol.local/pause:1, imported at start.");
  s->add_option("--service-account-issuer", server.service_account_issuer,
                "The \"iss\" of service account tokens, and the API's audience (default: "
                "https://kubernetes.default.svc.cluster.local).");
  s->add_option("--service-account-signing-key-file", server.service_account_signing_key_file,
                "The EC P-256 private key (PEM) that signs service account tokens; servers "
                "sharing a store must share it (default: DATA_DIR/pki/sa.key, made at first "
                "start).");
  AddDurationOption(
      s, "--service-account-max-token-expiration", server.service_account_max_token_expiration,
      std::chrono::seconds(1), "24h, 1h",
      "The longest service account token issued: longer requests get tokens this long "
      "(default: no limit).");
  AddNodeAgentOptions(s, server.node);
  return s;
}

CLI::App* AddControllerManagerCommand(CLI::App& app, kvol::cmd::ControllerManagerOptions& cm) {
  CLI::App* c = app.add_subcommand(
      "controller-manager",
      "Run the controllers (binding, provisioning, reclaiming, protection) and the scheduler "
      "against an API server reached over HTTPS, under leader election with any other copies.");
  c->add_option("--kubeconfig", cm.kubeconfig, "The API server's address and credentials.")
      ->required();
  c->add_option("--data-dir", cm.data_dir,
                "Default home of the local-path and shared volume directories.")
      ->capture_default_str();
  c->add_option("--workers", cm.workers, "Workers per controller queue.")->capture_default_str();
  c->add_option("--flex-volume-plugin-dir", cm.flex_volume_plugin_dir,
                "Where FlexVolume drivers are installed, as <vendor~driver>/<driver>, for their "
                "attach, detach and expandvolume; drivers installed while it runs are found too.")
      ->capture_default_str();
  AddProvisionerOptions(c, cm.provisioners);
  AddAttachDetachOptions(c, cm.attach_detach);
  return c;
}

CLI::App* AddAgentCommand(CLI::App& app, kvol::cmd::AgentCommandOptions& agent) {
  CLI::App* a = app.add_subcommand(
      "agent",
      "Run the node agent on this machine against an API server reached over HTTPS: register "
      "the Node, keep it Ready, and set up the volumes of the pods bound to it.");
  a->add_option("--kubeconfig", agent.kubeconfig, "The API server's address and credentials.");
  a->add_option("--server", agent.server,
                "The API server, https://HOST:PORT (without --kubeconfig).");
  a->add_option("--token", agent.token, "Bearer token for --server.");
  a->add_option("--certificate-authority", agent.certificate_authority,
                "CA certificate file that signed the server's certificate (DATA_DIR/pki/ca.crt "
                "of `kvol server`).");
  a->add_flag("--insecure-skip-tls-verify", agent.insecure_skip_tls_verify,
              "Do not check the server's certificate.");
  a->add_option("--data-dir", agent.data_dir, "Default home of the agent's directory.")
      ->capture_default_str();
  a->add_option("--node-name", agent.node.node_name,
                "This machine's node name (default: the hostname).");
  AddNodeAgentOptions(a, agent.node);
  a->add_option("--local-path-root", agent.node.local_path_root,
                "Where kvol.io/local-path makes the directories of the volumes of claims given to "
                "this node (default: DATA_DIR/storage).");
  a->add_option("--address", agent.address,
                "The address to serve pods' logs and exec to the API server on.")
      ->capture_default_str();
  a->add_option("--port", agent.port,
                "The port to serve them on (0: any free port; the Node publishes it).")
      ->capture_default_str();
  return a;
}

CLI::App* AddCsiDriverCommand(CLI::App& app, kvol::csi::driver::DriverOptions& o) {
  CLI::App* d = app.add_subcommand(
      "csi-driver",
      "Run the bundled CSI driver, loop.csi.kvol.io: formatted volumes on this machine, each a "
      "sparse file of its size on a loop device, served over CSI's gRPC on a unix socket.");
  d->add_option("--endpoint", o.endpoint, "The socket to serve on, unix:///path/csi.sock.")
      ->required();
  d->add_option("--node-id", o.node_id, "This node's name, as NodeGetInfo answers it.")->required();
  d->add_option("--data-dir", o.data_dir, "Where the volumes' and snapshots' files live.")
      ->required();
  d->add_option("--max-volumes-per-node", o.max_volumes_per_node,
                "How many of its volumes a node may use at once.")
      ->capture_default_str();
  return d;
}

// `kvol csi create-volume ...`, `kvol csi delete-volume ...`, `kvol csi expand-volume ...`.
CLI::App* AddCsiCallCommand(CLI::App& app, kvol::cmd::CsiCallOptions& o) {
  CLI::App* c = app.add_subcommand(
      "csi", "Call a CSI driver's Controller service: make or remove a volume by hand.");
  c->require_subcommand(1);
  CLI::App* create = c->add_subcommand("create-volume", "CreateVolume; prints the volume as JSON.");
  create->add_option("--endpoint", o.endpoint, "The driver's socket, unix:///path/csi.sock.")
      ->required();
  create->add_option("--name", o.name, "The volume's name (creating it again is a no-op).")
      ->required();
  create->add_option("--size", o.size, "Its capacity in bytes.")->required();
  create->add_option("--fs-type", o.fs_type, "The filesystem it will be used with.");
  create->add_flag("--block", o.block, "It will be used as a raw block device.");
  create->callback([&o] { o.call = kvol::cmd::CsiCallOptions::Call::kCreate; });
  CLI::App* del = c->add_subcommand("delete-volume", "DeleteVolume.");
  del->add_option("--endpoint", o.endpoint, "The driver's socket, unix:///path/csi.sock.")
      ->required();
  del->add_option("--id", o.volume_id, "The volume's ID.")->required();
  del->callback([&o] { o.call = kvol::cmd::CsiCallOptions::Call::kDelete; });
  CLI::App* expand = c->add_subcommand("expand-volume",
                                       "ControllerExpandVolume; prints the new capacity as JSON.");
  expand->add_option("--endpoint", o.endpoint, "The driver's socket, unix:///path/csi.sock.")
      ->required();
  expand->add_option("--id", o.volume_id, "The volume's ID.")->required();
  expand->add_option("--size", o.size, "Its new capacity in bytes.")->required();
  expand->callback([&o] { o.call = kvol::cmd::CsiCallOptions::Call::kExpand; });
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  kvol::CloseOnExecAboveStdio();
  kvol::RaiseDescriptorLimit();
  CLI::App app{
      "kvol: the Kubernetes storage subsystem (PersistentVolumes, claims, storage classes, CSI)\n"
      "as one standalone program that unmodified kubectl can drive."};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", kvol::cmd::kVersion);

  kvol::cmd::ValidateOptions validate;
  CLI::App* v = app.add_subcommand(
      "validate",
      "Check manifests offline, as the API server would on create: decoding, defaults and "
      "validation with Kubernetes' field paths and messages. Prints `Kind/name: valid` or one "
      "line per problem; exits 0 only if every object is valid.");
  v->add_option("-f,--filename", validate.files,
                "A YAML or JSON file (several documents allowed), a directory of .yaml/.yml/.json "
                "files, or - for standard input. May be repeated.")
      ->required();

  kvol::cmd::ServerOptions server;
  CLI::App* s = AddServerCommand(app, server);
  kvol::cmd::ControllerManagerOptions cm;
  CLI::App* c = AddControllerManagerCommand(app, cm);
  kvol::cmd::AgentCommandOptions agent;
  CLI::App* a = AddAgentCommand(app, agent);
  kvol::csi::driver::DriverOptions csi_driver;
  CLI::App* cd = AddCsiDriverCommand(app, csi_driver);
  kvol::cmd::CsiCallOptions csi_call;
  CLI::App* cc = AddCsiCallCommand(app, csi_call);

  // Internal: the first process of a container, started by the node agent (not for users).
  std::string container_spec;
  CLI::App* ci = app.add_subcommand("container-init", "Set a container up and run it.");
  ci->group("");
  ci->add_option("spec", container_spec, "The container's spec.json.")->required();

  // Internal: a process run in a running container for `kubectl exec` (not for users).
  int exec_pid = 0;
  bool exec_tty = false;
  std::vector<std::string> exec_command;
  CLI::App* ce = app.add_subcommand("container-exec", "Run a command in a running container.");
  ce->group("");
  ce->add_option("--pid", exec_pid, "The container's PID 1.")->required();
  ce->add_flag("--tty", exec_tty, "stdin is a terminal.");
  ce->add_option("command", exec_command, "The command and its arguments.")->required();

  // Internal: what a container with no command runs (not for users).
  CLI::App* pa = app.add_subcommand("pause", "Wait until stopped.");
  pa->group("");

  CLI11_PARSE(app, argc, argv);

  if (v->parsed()) return kvol::cmd::RunValidate(validate);
  if (s->parsed()) return kvol::cmd::RunServer(server);
  if (c->parsed()) return kvol::cmd::RunControllerManager(cm);
  if (a->parsed()) return kvol::cmd::RunAgent(agent);
  if (cd->parsed()) return kvol::cmd::RunCsiDriver(csi_driver);
  if (cc->parsed()) return kvol::cmd::RunCsiCall(csi_call);
  if (ci->parsed()) return kvol::cmd::RunContainerInit(container_spec);
  if (pa->parsed()) return kvol::node::runtime::Pause();
  if (ce->parsed()) return kvol::node::runtime::RunInContainer(exec_pid, exec_command, exec_tty);
  std::fputs(app.help().c_str(), stdout);
  return 0;
}
