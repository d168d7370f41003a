// How fast the node agent sets up pods' volumes, with real mounts (run as root), the API in the
// same process on durable SQLite and the agent on the in-process client. Prints one figure per
// line; bench/RESULTS.md records them with the command.
//
//   mount_bench pods [--n N]
//       N pods bound to the node, each with an emptyDir, a configMap volume and a claim bound
//       to its own local PV (a bind mount), created by 8 writers: the time from the first pod
//       created until every pod has kvol.io/VolumesReady=True. Default N = 1,000.
//   mount_bench latency [--n N]
//       N such pods created one at a time, each waited for: p50 and p99 of created-to-ready.
//   mount_bench configmaps [--n N]
//       One pod with N configMap volumes: created-to-ready. Default N = 100.
//   mount_bench csi [--n N]
//       N pods bound to the node, each with one claim bound to its own static volume of the
//       bundled CSI driver (loop.csi.kvol.io, run in process: a sparse file on a loop device,
//       attached by the built-in attacher, formatted at its first stage, staged and published),
//       created by 8 writers: the time from the first pod created until every pod has
//       kvol.io/VolumesReady=True, and p50/p99 of each pod's created-to-ready. Default N = 200.
//   mount_bench local-path [--n N]
//       The same with claims bound to volumes as kvol.io/local-path makes them (a hostPath
//       directory): the figures to set the CSI ones beside.
//   mount_bench provision-claims [--n N]
//       N claims of an Immediate class of the bundled driver, created by 8 writers, provisioned
//       by the built-in CSI provisioner (CreateVolume, a PV) and bound by the PV controller: the
//       time from the first claim created until all are Bound. Default N = 1,000.
//   mount_bench provision-pods [--n N]
//       N claims of a WaitForFirstConsumer class of the bundled driver, each with a pod without
//       a node: scheduled, provisioned on the node, bound, attached by the attach/detach
//       controller, staged and published; the time from the first pod created until every pod
//       has kvol.io/VolumesReady=True. Default N = 200.
//   mount_bench snapshots [--n N]
//       N claims of an Immediate class of the bundled driver, provisioned and bound; then a
//       VolumeSnapshot of each, created by 8 writers, taken by the snapshot controller and the
//       built-in CSI snapshotter: the time until all are ReadyToUse; then a claim restored from
//       each: the time until all are Bound. Default N = 100.
//   mount_bench idle [--volumes V] [--seconds S]
//       Pods holding V volumes (3 per pod) set up, then S seconds with nothing changing: the
//       process's CPU time over that span (API server and agent together, so an upper bound
//       for the agent). Defaults V = 5,000, S = 30.
//
// With KVOL_BENCH_PERF_CTL naming the control FIFO of `perf record --control fifo:CTL -D -1`,
// the profile covers the timed span of provision-claims alone, not setup or teardown.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "apiserver/tls.h"
#include "base/log.h"
#include "bound_watch.h"
#include "client/informer.h"
#include "client/testing/parallel.h"
#include "client/testing/test_server.h"
#include "controller/attachdetach/controller.h"
#include "controller/attacher/attacher.h"
#include "controller/protection/protection.h"
#include "controller/provisioner/provisioner.h"
#include "controller/pv/controller.h"
#include "controller/rootca/publisher.h"
#include "controller/snapshot/snapshot_controller_base.h"
#include "controller/snapshotter/snapshotter.h"
#include "csi/client.h"
#include "csi/driver/driver.h"
#include "node/agent.h"
#include "os/mounter.h"
#include "scheduler/scheduler.h"
#include "volume/plugins/csi/csi_plugin.h"
#include "volume/plugins/plugins.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace api = kvol::api;
namespace fs = std::filesystem;
using kvol::client::testing::Parallel;

constexpr const char* kNode = "bench-node";

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "mount_bench: %s\n", msg.c_str());
  std::exit(1);
}

// Counts pods whose volumes are ready and remembers when each got there.
class ReadyWatch {
 public:
  explicit ReadyWatch(kvol::client::Client& c) : informer_(c.resource<api::Pod>()) {
    informer_.AddHandlers({.on_add = [this](const auto& p) { See(*p); },
                           .on_update = [this](const auto&, const auto& p) { See(*p); }});
    informer_.Start();
    if (!informer_.WaitForSync(60s)) Die("pod informer did not sync");
  }
  // The informer's thread calls See: it stops before the members See uses go.
  ~ReadyWatch() { informer_.Stop(); }
  bool WaitFor(size_t n, std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return ready_.size() >= n; });
  }
  // When each pod got its volumes, by name.
  std::map<std::string, Clock::time_point> ReadyTimes() {
    std::lock_guard lock(mu_);
    return times_;
  }
  bool WaitForName(const std::string& name, std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return ready_.count(name) > 0; });
  }
  Clock::time_point last() {
    std::lock_guard lock(mu_);
    return last_;
  }

 private:
  void See(const api::Pod& p) {
    for (const auto& c : p.status.conditions) {
      if (c.type != "kvol.io/VolumesReady" || c.status != "True") continue;
      std::lock_guard lock(mu_);
      if (ready_.insert(p.metadata.name).second) {
        last_ = Clock::now();
        times_[p.metadata.name] = last_;
      }
      cv_.notify_all();
    }
  }
  kvol::client::Informer<api::Pod> informer_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> ready_;
  std::map<std::string, Clock::time_point> times_;
  Clock::time_point last_;
};

// A server, the node agent with the in-tree plugins, and a directory for local volumes; with
// `csi`, also the bundled CSI driver registered on the node, the csi plugin, the attacher and
// the attach/detach controller; with `controllers`, also the PV controller, the scheduler, the
// built-in CSI provisioner, the snapshot controller and the built-in CSI snapshotter.
struct Setup {
  std::unique_ptr<kvol::client::testing::TestServer> server;
  // One informer per kind for the agent and the controllers, as `kvol server` has.
  std::unique_ptr<kvol::client::SharedInformers> informers;
  std::unique_ptr<kvol::os::Mounter> mounter;
  std::unique_ptr<kvol::csi::driver::Driver> driver;
  std::unique_ptr<kvol::node::Agent> agent;
  std::unique_ptr<kvol::controller::attacher::Controller> attacher;
  std::unique_ptr<kvol::controller::attachdetach::Controller> attach_detach;
  std::unique_ptr<kvol::controller::pv::Controller> pv_controller;
  std::unique_ptr<kvol::controller::protection::Controller> protection;
  std::unique_ptr<kvol::scheduler::Scheduler> scheduler;
  std::unique_ptr<kvol::controller::provisioner::Controller> provisioner;
  std::unique_ptr<kvol::controller::snapshot::Controller> snapshots;
  std::unique_ptr<kvol::controller::snapshotter::Controller> snapshotter;
  // kube-root-ca.crt, which every pod's kube-api-access-* volume projects.
  std::unique_ptr<kvol::controller::rootca::Publisher> root_ca;
  std::string root;
  std::string disks;
  std::string csi_endpoint;

  explicit Setup(bool csi = false, bool controllers = false) {
    kvol::client::testing::TestServerOptions o;
    o.http = false;
    auto s = kvol::client::testing::TestServer::Start(o);
    if (!s.ok()) Die(s.status().ToString());
    server = std::move(*s);
    informers = std::make_unique<kvol::client::SharedInformers>(server->local());
    auto tls = kvol::apiserver::EnsureTls(server->dir(), {"127.0.0.1"});
    if (!tls.ok()) Die(tls.status().ToString());
    root_ca = std::make_unique<kvol::controller::rootca::Publisher>(
        server->local(), kvol::controller::rootca::Options{.ca_bundle = tls->ca_cert_pem,
                                                           .informers = informers.get()});
    if (auto st = root_ca->Start(); !st.ok()) Die(st.ToString());
    root = server->dir() + "/agent";
    disks = server->dir() + "/disks";
    fs::create_directories(root);
    fs::create_directories(disks);
    mounter = kvol::os::NewRealMounter();
    kvol::node::AgentOptions ao;
    ao.node_name = kNode;
    ao.root_dir = root;
    ao.informers = informers.get();
    if (csi) {
      csi_endpoint = "unix://" + server->dir() + "/csi/csi.sock";
      auto d = kvol::csi::driver::Driver::Start({.endpoint = csi_endpoint,
                                                 .node_id = kNode,
                                                 .data_dir = server->dir() + "/csi/data",
                                                 .max_volumes_per_node = 100'000});
      if (!d.ok()) Die(d.status().ToString());
      driver = std::move(*d);
      ao.csi_endpoints = {csi_endpoint};
    }
    agent = std::make_unique<kvol::node::Agent>(server->local(), ao, *mounter);
    for (auto& p : kvol::volume::plugins::InTreePlugins(agent->host())) {
      if (!agent->plugins().Register(std::move(p)).ok()) Die("register plugin");
    }
    if (!agent->plugins().Register(kvol::volume::plugins::NewCsiPlugin(agent->host())).ok()) {
      Die("register the csi plugin");
    }
    if (auto st = agent->Start(); !st.ok()) Die(st.ToString());
    if (csi) {
      attacher = std::make_unique<kvol::controller::attacher::Controller>(
          server->local(), kvol::controller::attacher::Options{.node_name = kNode,
                                                               .drivers = &agent->csi_drivers()});
      if (auto st = attacher->Start(); !st.ok()) Die(st.ToString());
      attach_detach = std::make_unique<kvol::controller::attachdetach::Controller>(
          server->local(), nullptr,
          kvol::controller::attachdetach::Options{.informers = informers.get()});
      if (auto st = attach_detach->Start(); !st.ok()) Die(st.ToString());
    }
    if (controllers) {
      pv_controller = std::make_unique<kvol::controller::pv::Controller>(
          server->local(), nullptr,
          kvol::controller::pv::ControllerOptions{.informers = informers.get()});
      if (auto st = pv_controller->Start(); !st.ok()) Die(st.ToString());
      // Deleted claims keep their pvc-protection finalizer until this controller removes it.
      protection = std::make_unique<kvol::controller::protection::Controller>(
          server->local(), kvol::controller::protection::Options{.informers = informers.get()});
      if (auto st = protection->Start(); !st.ok()) Die(st.ToString());
      scheduler = std::make_unique<kvol::scheduler::Scheduler>(
          server->local(), nullptr, kvol::scheduler::Options{.informers = informers.get()});
      if (auto st = scheduler->Start(); !st.ok()) Die(st.ToString());
      provisioner = std::make_unique<kvol::controller::provisioner::Controller>(
          server->local(),
          kvol::controller::provisioner::Options{
              .node_name = kNode,
              .drivers = &agent->csi_drivers(),
              .central = true,
              .informers = informers.get()});
      if (auto st = provisioner->Start(); !st.ok()) Die(st.ToString());
      snapshots = std::make_unique<kvol::controller::snapshot::Controller>(
          server->local(), kvol::controller::snapshot::Options{.informers = informers.get()});
      if (auto st = snapshots->Start(); !st.ok()) Die(st.ToString());
      snapshotter = std::make_unique<kvol::controller::snapshotter::Controller>(
          server->local(), kvol::controller::snapshotter::Options{.node_name = kNode,
                                                                  .drivers = &agent->csi_drivers(),
                                                                  .central = true,
                                                                  .informers = informers.get()});
      if (auto st = snapshotter->Start(); !st.ok()) Die(st.ToString());
      api::VolumeSnapshotClass snap_class;
      snap_class.metadata.name = "loop-snapshots";
      snap_class.driver = "loop.csi.kvol.io";
      snap_class.deletion_policy = "Delete";
      if (!server->local().resource<api::VolumeSnapshotClass>().Create(snap_class).ok()) {
        Die("create snapshot class");
      }
      for (const char* mode : {"Immediate", "WaitForFirstConsumer"}) {
        api::StorageClass cls;
        cls.metadata.name = mode[0] == 'I' ? "loop-immediate" : "loop-delayed";
        cls.provisioner = "loop.csi.kvol.io";
        cls.volume_binding_mode = mode;
        cls.parameters["csi.storage.k8s.io/fstype"] = "ext4";
        if (!server->local().resource<api::StorageClass>().Create(cls).ok()) Die("create class");
      }
    }
    api::ConfigMap cm;
    cm.metadata.namespace_ = "default";
    cm.metadata.name = "settings";
    cm.data = {{"mode", "fast"}, {"level", "info"}};
    if (!server->local().resource<api::ConfigMap>().Create(cm).ok()) Die("create configmap");
  }

  // Tears every pod down through the agent, so no mount outlives the benchmark.
  ~Setup() {
    auto& pods = server->local().resource<api::Pod>();
    auto list = pods.List("default");
    if (list.ok()) {
      Parallel(static_cast<int>(list->items.size()), 8,
               [&](int i) { (void)pods.Delete("default", list->items[i].metadata.name); });
    }
    const auto deadline = Clock::now() + 300s;
    while (Clock::now() < deadline) {
      std::error_code ec;
      if (fs::is_empty(root + "/pods", ec) || ec) break;
      std::this_thread::sleep_for(50ms);
    }
    // The CSI volumes' attachments go after their pods: then their loop devices are detached.
    auto& attachments = server->local().resource<api::VolumeAttachment>();
    while (!csi_endpoint.empty() && Clock::now() < deadline) {
      auto left = attachments.List("");
      if (left.ok() && left->items.empty()) break;
      std::this_thread::sleep_for(50ms);
    }
    // Snapshots go before the claims they are of, their storage snapshots with them.
    if (snapshots) {
      auto& vs = server->local().resource<api::VolumeSnapshot>();
      if (auto all = vs.List("default"); all.ok()) {
        Parallel(static_cast<int>(all->items.size()), 8,
                 [&](int i) { (void)vs.Delete("default", all->items[i].metadata.name); });
      }
      auto& contents = server->local().resource<api::VolumeSnapshotContent>();
      for (;;) {
        auto left = contents.List("");
        if ((left.ok() && left->items.empty()) || Clock::now() > deadline) break;
        std::this_thread::sleep_for(50ms);
      }
    }
    // Provisioned volumes go with their claims, through the provisioner.
    if (provisioner) {
      auto& claims = server->local().resource<api::PersistentVolumeClaim>();
      if (auto all = claims.List("default"); all.ok()) {
        Parallel(static_cast<int>(all->items.size()), 8,
                 [&](int i) { (void)claims.Delete("default", all->items[i].metadata.name); });
      }
      auto& pvs = server->local().resource<api::PersistentVolume>();
      for (;;) {
        auto left = pvs.List("");
        if (left.ok() && left->items.empty()) break;
        if (Clock::now() > deadline) {
          // Say what stayed, so a teardown that does not finish is not silent.
          std::map<std::string, int> phases;
          if (left.ok()) {
            for (const auto& pv : left->items) phases[pv.status.phase + " " + pv.status.message]++;
          }
          for (const auto& [phase, count] : phases) {
            std::fprintf(stderr, "teardown: %d volumes left %s\n", count, phase.c_str());
          }
          break;
        }
        std::this_thread::sleep_for(50ms);
      }
      snapshotter->Stop();
      snapshots->Stop();
      provisioner->Stop();
      protection->Stop();
      scheduler->Stop();
      pv_controller->Stop();
    }
    if (attach_detach) attach_detach->Stop();
    if (attacher) attacher->Stop();
    agent->Stop();
    driver.reset();
    // Whatever is left mounted (an interrupted teardown) comes off before the directory goes.
    if (auto table = mounter->List(); table.ok()) {
      for (auto it = table->rbegin(); it != table->rend(); ++it) {
        if (it->path.rfind(root + "/", 0) == 0) (void)mounter->Unmount(it->path);
      }
    }
  }

  // A claim Bound to its own local PV (a directory), written as the PV controller would.
  void MakeClaim(const std::string& name) {
    const std::string dir = disks + "/" + name;
    fs::create_directories(dir);
    api::PersistentVolume pv = NewVolume(name, "1Gi");
    pv.spec.local.emplace().path = dir;
    BindClaim(name, std::move(pv));
  }
  // A volume for claim `name`, of `size`, with node affinity to the node; its source to be set.
  static api::PersistentVolume NewVolume(const std::string& name, const char* size) {
    api::PersistentVolume pv;
    pv.metadata.name = "pv-" + name;
    pv.spec.capacity["storage"] = api::Quantity::MustParse(size);
    pv.spec.access_modes = {"ReadWriteOnce"};
    pv.spec.storage_class_name = "bench";
    api::VolumeNodeAffinity aff;
    api::NodeSelectorTerm term;
    term.match_expressions.push_back({"kubernetes.io/hostname", "In", {kNode}});
    aff.required.emplace().node_selector_terms.push_back(term);
    pv.spec.node_affinity = aff;
    return pv;
  }

  // A claim Bound to a volume of its own: a static volume of the bundled CSI driver (made here
  // with CreateVolume), or a hostPath directory as kvol.io/local-path makes it.
  void MakeOneVolumeClaim(const std::string& name, bool csi) {
    api::PersistentVolume pv = NewVolume(name, "16Mi");
    if (csi) {
      auto client = kvol::csi::Client::New(csi_endpoint);
      if (!client.ok()) Die(client.status().ToString());
      ::csi::v1::CreateVolumeRequest req;
      req.set_name(name);
      req.mutable_capacity_range()->set_required_bytes(16 << 20);
      auto* cap = req.add_volume_capabilities();
      cap->mutable_mount()->set_fs_type("ext4");
      cap->mutable_access_mode()->set_mode(
          ::csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
      auto made = (*client)->Call(&::csi::v1::Controller::Stub::CreateVolume, req);
      if (!made.ok()) Die("CreateVolume: " + made.status().ToString());
      pv.spec.csi.emplace() = {.driver = "loop.csi.kvol.io",
                               .volume_handle = made->volume().volume_id(),
                               .fs_type = "ext4"};
    } else {
      pv.spec.host_path.emplace() = {.path = disks + "/" + name, .type = "DirectoryOrCreate"};
    }
    BindClaim(name, std::move(pv));
  }
  // Creates the claim, then `pv` bound to it, as the PV controller would.
  void BindClaim(const std::string& name, api::PersistentVolume pv) {
    auto& c = server->local();
    api::PersistentVolumeClaim claim;
    claim.metadata.namespace_ = "default";
    claim.metadata.name = name;
    claim.spec.access_modes = {"ReadWriteOnce"};
    claim.spec.storage_class_name = "bench";
    claim.spec.volume_name = pv.metadata.name;
    claim.spec.resources.requests["storage"] = pv.spec.capacity["storage"];
    auto made = c.resource<api::PersistentVolumeClaim>().Create(claim);
    if (!made.ok()) Die("create claim: " + made.error().message);
    pv.spec.claim_ref.emplace();
    pv.spec.claim_ref->kind = "PersistentVolumeClaim";
    pv.spec.claim_ref->namespace_ = "default";
    pv.spec.claim_ref->name = name;
    pv.spec.claim_ref->uid = made->metadata.uid;
    if (!c.resource<api::PersistentVolume>().Create(pv).ok()) Die("create pv");
    api::PersistentVolumeClaim bound = *made;
    bound.status.phase = "Bound";
    if (!c.resource<api::PersistentVolumeClaim>().UpdateStatus(bound).ok()) Die("claim status");
  }

  static api::Pod Pod(const std::string& name, const std::string& claim) {
    api::Pod p;
    p.metadata.namespace_ = "default";
    p.metadata.name = name;
    p.spec.node_name = kNode;
    api::Container c;
    c.name = "app";
    c.image = "busybox";
    p.spec.containers.push_back(c);
    api::Volume scratch;
    scratch.name = "scratch";
    scratch.empty_dir.emplace();
    api::Volume config;
    config.name = "config";
    config.config_map.emplace().name = "settings";
    api::Volume data;
    data.name = "data";
    data.persistent_volume_claim.emplace().claim_name = claim;
    p.spec.volumes = {scratch, config, data};
    return p;
  }
  void CreatePod(const api::Pod& p) {
    auto r = server->local().resource<api::Pod>().Create(p);
    if (!r.ok()) Die("create pod: " + r.error().message);
  }
};

int Flag(int argc, char** argv, const std::string& name, int def) {
  for (int i = 2; i + 1 < argc; ++i) {
    if (argv[i] == name) return std::atoi(argv[i + 1]);
  }
  return def;
}

// Writes `command` ("enable" or "disable") to the perf control FIFO named by
// KVOL_BENCH_PERF_CTL, when it is set.
void PerfControl(const char* command) {
  const char* fifo = std::getenv("KVOL_BENCH_PERF_CTL");
  if (fifo == nullptr) return;
  if (FILE* f = std::fopen(fifo, "w")) {
    std::fprintf(f, "%s\n", command);
    std::fclose(f);
  }
}

// The process's CPU time (user and system) so far, in seconds.
double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

void Pods(int n) {
  Setup s;
  Parallel(n, 8, [&](int i) { s.MakeClaim("c" + std::to_string(i)); });
  ReadyWatch ready(s.server->local());
  PerfControl("enable");
  const auto start = Clock::now();
  const double cpu0 = CpuSeconds();
  Parallel(n, 8, [&](int i) {
    s.CreatePod(Setup::Pod("p" + std::to_string(i), "c" + std::to_string(i)));
  });
  if (!ready.WaitFor(n, 600s)) Die("pods did not all get their volumes");
  const double cpu = CpuSeconds() - cpu0;
  PerfControl("disable");
  const double secs = std::chrono::duration<double>(ready.last() - start).count();
  std::printf("pods=%d volumes=%d all_ready_seconds=%.3f\n", n, 3 * n, secs);
  std::printf("pods=%d volumes=%d pods_per_second=%.0f cpu_us_per_pod=%.0f\n", n, 3 * n, n / secs,
              cpu * 1e6 / n);
  std::fflush(stdout);
}

void Latency(int n) {
  Setup s;
  Parallel(n, 8, [&](int i) { s.MakeClaim("c" + std::to_string(i)); });
  ReadyWatch ready(s.server->local());
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    const std::string name = "p" + std::to_string(i);
    const auto t0 = Clock::now();
    s.CreatePod(Setup::Pod(name, "c" + std::to_string(i)));
    if (!ready.WaitForName(name, 60s)) Die("pod " + name + " did not get its volumes");
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("single_pod_count=%d p50_ms=%.2f\n", n, ms[ms.size() / 2]);
  std::printf("single_pod_count=%d p99_ms=%.2f\n", n,
              ms[std::min(ms.size() - 1, ms.size() * 99 / 100)]);
  std::fflush(stdout);
}

// N pods with one claim each, on the bundled CSI driver or on local-path volumes.
void OneVolumePods(int n, bool csi) {
  Setup s(csi);
  Parallel(n, 8, [&](int i) { s.MakeOneVolumeClaim("c" + std::to_string(i), csi); });
  ReadyWatch ready(s.server->local());
  std::vector<Clock::time_point> created(n);
  const auto start = Clock::now();
  Parallel(n, 8, [&](int i) {
    api::Pod p = Setup::Pod("p" + std::to_string(i), "c" + std::to_string(i));
    p.spec.volumes = {p.spec.volumes.back()};  // the claim alone
    created[i] = Clock::now();
    s.CreatePod(p);
  });
  if (!ready.WaitFor(n, 600s)) Die("pods did not all get their volumes");
  const double secs = std::chrono::duration<double>(ready.last() - start).count();
  auto times = ready.ReadyTimes();
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    ms.push_back(
        std::chrono::duration<double, std::milli>(times.at("p" + std::to_string(i)) - created[i])
            .count());
  }
  std::sort(ms.begin(), ms.end());
  const char* kind = csi ? "csi" : "local-path";
  std::printf("%s pods=%d all_ready_seconds=%.3f pods_per_second=%.0f\n", kind, n, secs, n / secs);
  std::printf("%s pods=%d per_pod_p50_ms=%.0f per_pod_p99_ms=%.0f\n", kind, n, ms[ms.size() / 2],
              ms[std::min(ms.size() - 1, ms.size() * 99 / 100)]);
  std::fflush(stdout);
}

// A claim of `cls` asking for 16 MiB.
api::PersistentVolumeClaim ClassClaim(const std::string& name, const std::string& cls) {
  api::PersistentVolumeClaim c;
  c.metadata.namespace_ = "default";
  c.metadata.name = name;
  c.spec.access_modes = {"ReadWriteOnce"};
  c.spec.storage_class_name = cls;
  c.spec.resources.requests["storage"] = api::Quantity::MustParse("16Mi");
  return c;
}

// N claims of an Immediate class of the bundled driver: created to all Bound.
void ProvisionClaims(int n) {
  Setup s(/*csi=*/true, /*controllers=*/true);
  auto& claims = s.server->local().resource<api::PersistentVolumeClaim>();
  kvol::bench::BoundWatch bound(s.server->local());
  PerfControl("enable");
  const auto start = Clock::now();
  const double cpu0 = CpuSeconds();
  Parallel(n, 8, [&](int i) {
    if (!claims.Create(ClassClaim("c" + std::to_string(i), "loop-immediate")).ok()) {
      Die("create claim");
    }
  });
  if (!bound.WaitFor(n, 600s)) Die("claims were not all Bound: " + std::to_string(bound.Count()));
  const Clock::time_point done = bound.last();
  const double cpu = CpuSeconds() - cpu0;
  PerfControl("disable");
  const double secs = std::chrono::duration<double>(done - start).count();
  std::printf("provision claims=%d all_bound_seconds=%.3f claims_per_second=%.0f "
              "cpu_us_per_claim=%.0f\n",
              n, secs, n / secs, cpu * 1e6 / n);
  std::fflush(stdout);
}

// N pods without a node, each with its own claim of a WaitForFirstConsumer class of the
// bundled driver: created to every pod's volumes ready.
void ProvisionPods(int n) {
  Setup s(/*csi=*/true, /*controllers=*/true);
  auto& claims = s.server->local().resource<api::PersistentVolumeClaim>();
  Parallel(n, 8, [&](int i) {
    if (!claims.Create(ClassClaim("c" + std::to_string(i), "loop-delayed")).ok()) {
      Die("create claim");
    }
  });
  ReadyWatch ready(s.server->local());
  const auto start = Clock::now();
  Parallel(n, 8, [&](int i) {
    api::Pod p = Setup::Pod("p" + std::to_string(i), "c" + std::to_string(i));
    p.spec.node_name.clear();  // the scheduler's to place
    p.spec.volumes = {p.spec.volumes.back()};
    s.CreatePod(p);
  });
  if (!ready.WaitFor(n, 600s)) Die("pods did not all get their volumes");
  const double secs = std::chrono::duration<double>(ready.last() - start).count();
  std::printf("provision pods=%d all_ready_seconds=%.3f pods_per_second=%.0f\n", n, secs, n / secs);
  std::fflush(stdout);
}

// Waits until `n` snapshots in "default" are ReadyToUse; false after `timeout`.
bool WaitForReadySnapshots(kvol::client::Client& c, int n, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    auto all = c.resource<api::VolumeSnapshot>().ListShared("default");
    int ready = 0;
    if (all.ok()) {
      for (const auto& s : all->items) {
        ready += s->status && s->status->ready_to_use.value_or(false) ? 1 : 0;
      }
    }
    if (ready >= n) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

// N claims provisioned and bound; a snapshot of each until all are ready; a claim restored from
// each until all are Bound.
void Snapshots(int n) {
  Setup s(/*csi=*/true, /*controllers=*/true);
  auto& c = s.server->local();
  auto& claims = c.resource<api::PersistentVolumeClaim>();
  kvol::bench::BoundWatch bound(c);
  Parallel(n, 8, [&](int i) {
    if (!claims.Create(ClassClaim("c" + std::to_string(i), "loop-immediate")).ok()) Die("create claim");
  });
  if (!bound.WaitFor(n, 600s)) Die("claims were not all Bound");
  auto t0 = Clock::now();
  double cpu0 = CpuSeconds();
  Parallel(n, 8, [&](int i) {
    api::VolumeSnapshot vs;
    vs.metadata.namespace_ = "default";
    vs.metadata.name = "s" + std::to_string(i);
    vs.spec.volume_snapshot_class_name = "loop-snapshots";
    vs.spec.source.persistent_volume_claim_name = "c" + std::to_string(i);
    if (!c.resource<api::VolumeSnapshot>().Create(vs).ok()) Die("create snapshot");
  });
  if (!WaitForReadySnapshots(c, n, 600s)) Die("snapshots were not all ready");
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("snapshots=%d all_ready_seconds=%.3f snapshots_per_second=%.0f cpu_ms_per_snapshot=%.2f\n",
              n, secs, n / secs, (CpuSeconds() - cpu0) * 1e3 / n);
  std::fflush(stdout);
  t0 = Clock::now();
  cpu0 = CpuSeconds();
  Parallel(n, 8, [&](int i) {
    api::PersistentVolumeClaim r = ClassClaim("r" + std::to_string(i), "loop-immediate");
    r.spec.data_source = api::TypedLocalObjectReference{
        .api_group = "snapshot.storage.k8s.io", .kind = "VolumeSnapshot", .name = "s" + std::to_string(i)};
    if (!claims.Create(r).ok()) Die("create restore");
  });
  if (!bound.WaitFor(2 * n, 600s)) Die("restores were not all Bound: " + std::to_string(bound.Count()));
  secs = std::chrono::duration<double>(bound.last() - t0).count();
  std::printf("restores=%d all_bound_seconds=%.3f restores_per_second=%.0f cpu_ms_per_restore=%.2f\n",
              n, secs, n / secs, (CpuSeconds() - cpu0) * 1e3 / n);
  std::fflush(stdout);
}

void ConfigMaps(int n) {
  Setup s;
  ReadyWatch ready(s.server->local());
  api::Pod p = Setup::Pod("many", "unused");
  p.spec.volumes.clear();
  for (int i = 0; i < n; ++i) {
    api::Volume v;
    v.name = "cm" + std::to_string(i);
    v.config_map.emplace().name = "settings";
    p.spec.volumes.push_back(v);
  }
  const auto t0 = Clock::now();
  s.CreatePod(p);
  if (!ready.WaitForName("many", 60s)) Die("the pod did not get its volumes");
  std::printf("configmap_volumes=%d ready_ms=%.1f\n", n,
              std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  std::fflush(stdout);
}


void Idle(int volumes, int seconds) {
  const int n = (volumes + 2) / 3;  // at least `volumes`
  Setup s;
  Parallel(n, 8, [&](int i) { s.MakeClaim("c" + std::to_string(i)); });
  ReadyWatch ready(s.server->local());
  Parallel(n, 8, [&](int i) {
    s.CreatePod(Setup::Pod("p" + std::to_string(i), "c" + std::to_string(i)));
  });
  if (!ready.WaitFor(n, 600s)) Die("pods did not all get their volumes");
  std::this_thread::sleep_for(2s);  // status writes and events of the set-up settle
  const double cpu0 = CpuSeconds();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const double cpu = CpuSeconds() - cpu0;
  std::printf("idle_volumes=%d idle_seconds=%d cpu_seconds=%.3f\n", 3 * n, seconds, cpu);
  std::printf("idle_volumes=%d cpu_percent_of_a_core=%.2f\n", 3 * n, 100.0 * cpu / seconds);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  kvol::log::SetQuiet(true);
  const std::string mode = argc > 1 ? argv[1] : "pods";
  if (mode == "pods") {
    Pods(Flag(argc, argv, "--n", 1000));
  } else if (mode == "latency") {
    Latency(Flag(argc, argv, "--n", 200));
  } else if (mode == "csi" || mode == "local-path") {
    OneVolumePods(Flag(argc, argv, "--n", 200), mode == "csi");
  } else if (mode == "snapshots") {
    Snapshots(Flag(argc, argv, "--n", 100));
  } else if (mode == "provision-claims") {
    ProvisionClaims(Flag(argc, argv, "--n", 1000));
  } else if (mode == "provision-pods") {
    ProvisionPods(Flag(argc, argv, "--n", 200));
  } else if (mode == "configmaps") {
    ConfigMaps(Flag(argc, argv, "--n", 100));
  } else if (mode == "idle") {
    Idle(Flag(argc, argv, "--volumes", 5000), Flag(argc, argv, "--seconds", 30));
  } else {
    Die("usage: mount_bench pods|latency|csi|local-path|provision-claims|provision-pods|snapshots|"
        "configmaps|idle [--n N] [--volumes V] [--seconds S]");
  }
  return 0;
}
