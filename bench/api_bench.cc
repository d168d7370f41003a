// The API's throughput, watch latency and memory, as the client library sees them. Prints one
// figure per line; bench/RESULTS.md records them with the command.
//
//   api_bench creates [--objects N] [--writers W] [--etcd] [--transport local|https]
//       PV creates per second: W threads on the in-process client, then W threads each with its
//       own keep-alive HTTPS connection; on durable SQLite, or on a fresh real etcd (--etcd).
//   api_bench watch [--watchers K] [--updates U]
//       K watchers on persistentvolumes (over HTTPS, then in-process); U updates of one PV, one
//       at a time; the latency from issuing the update to each watcher decoding the event.
//   api_bench memory [--objects N] [--kvol PATH] [--api-only]
//       RSS of a real `kvol server` process, empty and holding N PVs created over HTTPS, and
//       after a restart that reloads them; per PV beyond the PV's JSON size. --api-only runs
//       the server without its controllers and node agent (`--no-controllers --no-agent`).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/malloc.h"
#include "client/http.h"
#include "client/testing/proc_stats.h"
#include "client/testing/test_server.h"
#include "store/testing/etcd_server.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using kvol::api::PersistentVolume;
using Clock = std::chrono::steady_clock;

struct Flags {
  std::string what = "all";
  int objects = 0;
  int writers = 8;
  int watchers = 100;
  int updates = 200;
  bool etcd = false;
  std::string transport;  // "local" or "https" to run only one
  std::string kvol;
  bool api_only = false;
};

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "api_bench: %s\n", msg.c_str());
  std::exit(1);
}

PersistentVolume MakeTemplatePV() {
  PersistentVolume pv;
  pv.metadata.name = "pv-template";
  pv.metadata.labels = {{"app", "nfs"}, {"tier", "gold"}};
  pv.metadata.annotations = {{"pv.kubernetes.io/provisioned-by", "kvol.io/local-path"}};
  pv.spec.capacity["storage"] = kvol::api::Quantity::MustParse("5Gi");
  pv.spec.access_modes = {"ReadWriteOnce"};
  pv.spec.persistent_volume_reclaim_policy = "Delete";
  pv.spec.storage_class_name = "local-path";
  pv.spec.local.emplace().path = "/var/lib/kvol/volumes/pv-template";
  kvol::api::NodeSelectorRequirement req;
  req.key = "kubernetes.io/hostname";
  req.operator_ = "In";
  req.values = {"node-1"};
  kvol::api::NodeSelectorTerm term;
  term.match_expressions = {req};
  pv.spec.node_affinity.emplace().required.emplace().node_selector_terms = {term};
  return pv;
}

// A PV as a client would build it: the template with its own name and path.
PersistentVolume MakePV(int i) {
  static const PersistentVolume kTemplate = MakeTemplatePV();
  PersistentVolume pv = kTemplate;
  char name[32];
  std::snprintf(name, sizeof name, "pv-%06d", i);
  pv.metadata.name = name;
  pv.spec.local->path = std::string("/var/lib/kvol/volumes/") + name;
  return pv;
}

// W threads creating PVs [first, first + n) through `resource_of(thread)`.
template <class ResourceOf>
double Creates(int n, int writers, ResourceOf resource_of, int first = 0) {
  std::atomic<int> next{0};
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      auto& r = resource_of(w);
      for (int i = next++; i < n; i = next++) {
        auto c = r.Create(MakePV(first + i));
        if (!c.ok()) Die("create: " + c.error().message);
      }
    });
  }
  for (auto& t : threads) t.join();
  return n / std::chrono::duration<double>(Clock::now() - start).count();
}

void RunCreates(const Flags& f) {
  const int n = f.objects > 0 ? f.objects : 100'000;
  std::string etcd;
  if (f.etcd) {
    auto ep = kvol::store::testing::SharedEtcdServer();
    if (!ep.ok()) Die(ep.status().ToString());
    etcd = *ep;
  }
  const char* backend = f.etcd ? "etcd" : "sqlite";
  if (f.transport != "https") {
    auto s = kvol::client::testing::TestServer::Start({.http = false, .etcd = etcd});
    if (!s.ok()) Die(s.status().ToString());
    auto& pvs = (*s)->local().resource<PersistentVolume>();
    double rate = Creates(n, f.writers, [&](int) -> auto& { return pvs; });
    std::printf("in-process creates/s (%s, %d writers, %d PVs): %.0f\n", backend, f.writers, n,
                rate);
    std::fflush(stdout);
  }
  if (f.transport != "local") {
    auto s = kvol::client::testing::TestServer::Start({.http = true, .etcd = etcd});
    if (!s.ok()) Die(s.status().ToString());
    std::vector<std::unique_ptr<kvol::client::HttpClient>> clients;
    for (int w = 0; w < f.writers; ++w) {
      kvol::client::HttpConfig cfg = (*s)->http_config();
      cfg.max_idle_connections = 1;
      auto c = kvol::client::HttpClient::Create(cfg);
      if (!c.ok()) Die(c.status().ToString());
      clients.push_back(std::move(*c));
    }
    const int m = f.etcd ? std::min(n, 20'000) : n;
    // On etcd the PVs of the in-process run are still there: new names.
    double rate = Creates(
        m, f.writers, [&](int w) -> auto& { return clients[w]->resource<PersistentVolume>(); },
        n);
    std::printf("https creates/s (%s, %d keep-alive connections, %d PVs): %.0f\n", backend,
                f.writers, m, rate);
  }
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

void WatchLatency(kvol::client::Client& writer_client,
                  std::vector<kvol::client::Resource<PersistentVolume>*> watch_from,
                  int updates, const char* label, int pv_number) {
  auto& pvs = writer_client.resource<PersistentVolume>();
  auto created = pvs.Create(MakePV(pv_number));
  if (!created.ok()) Die(created.error().message);
  const int k = static_cast<int>(watch_from.size());

  std::vector<Clock::time_point> issued(updates);
  std::vector<std::vector<double>> latencies(k);
  std::atomic<int> received{0};
  std::atomic<bool> stop{false};
  std::vector<std::unique_ptr<kvol::client::Watcher<PersistentVolume>>> watches;
  kvol::client::ListOptions wo;
  wo.resource_version = created->metadata.resource_version;
  for (int i = 0; i < k; ++i) {
    auto w = watch_from[i]->Watch("", wo);
    if (!w.ok()) Die("watch: " + w.error().message);
    watches.push_back(std::move(*w));
  }
  std::vector<std::thread> readers;
  for (int i = 0; i < k; ++i) {
    readers.emplace_back([&, i] {
      while (!stop) {
        auto evs = watches[i]->Next(100ms);
        if (!evs.ok()) break;
        for (auto& e : *evs) {
          auto it = e.object->metadata.labels.find("round");
          if (it == e.object->metadata.labels.end()) continue;
          const int u = std::atoi(it->second.c_str());
          latencies[i].push_back(
              std::chrono::duration<double, std::milli>(Clock::now() - issued[u]).count());
          ++received;
        }
      }
    });
  }
  PersistentVolume pv = *created;
  for (int u = 0; u < updates; ++u) {
    pv.metadata.labels["round"] = std::to_string(u);
    issued[u] = Clock::now();
    auto r = pvs.Update(pv);
    if (!r.ok()) Die("update: " + r.error().message);
    pv = *r;
    // Every watcher has this update before the next is issued.
    const auto deadline = Clock::now() + 10s;
    while (received.load() < (u + 1) * k) {
      if (Clock::now() > deadline) Die("watchers did not receive update " + std::to_string(u));
      std::this_thread::sleep_for(50us);
    }
  }
  stop = true;
  for (auto& w : watches) w->Close();
  for (auto& t : readers) t.join();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::printf("watch latency p50 ms (%d %s watchers, %d updates): %.2f\n", k, label, updates,
              Percentile(all, 0.50));
  std::printf("watch latency p99 ms (%d %s watchers, %d updates): %.2f\n", k, label, updates,
              Percentile(all, 0.99));
  std::fflush(stdout);
}

void RunWatch(const Flags& f) {
  auto s = kvol::client::testing::TestServer::Start({.http = true});
  if (!s.ok()) Die(s.status().ToString());
  // Over HTTPS: each watcher its own connection, as separate processes would have.
  std::vector<std::unique_ptr<kvol::client::HttpClient>> clients;
  std::vector<kvol::client::Resource<PersistentVolume>*> https;
  for (int i = 0; i < f.watchers; ++i) {
    auto c = kvol::client::HttpClient::Create((*s)->http_config());
    if (!c.ok()) Die(c.status().ToString());
    https.push_back(&(*c)->resource<PersistentVolume>());
    clients.push_back(std::move(*c));
  }
  WatchLatency((*s)->local(), https, f.updates, "https", 999'998);
  std::vector<kvol::client::Resource<PersistentVolume>*> local(
      f.watchers, &(*s)->local().resource<PersistentVolume>());
  WatchLatency((*s)->local(), local, f.updates, "in-process", 999'999);
}

// ---- memory: a real server process ----

using kvol::client::testing::RssKiB;

struct ServerProcess {
  pid_t pid = -1;
  std::unique_ptr<kvol::client::HttpClient> client;

  void Start(const std::string& kvol, const std::string& dir, bool api_only) {
    fs::remove(dir + "/kubeconfig");
    std::fflush(stdout);  // or the child's freopen writes the parent's buffered lines again
    std::fflush(stderr);
    pid = fork();
    if (pid == 0) {
      std::string log = dir + "/server.log";
      freopen(log.c_str(), "a", stderr);
      freopen("/dev/null", "w", stdout);
      if (api_only) {
        execl(kvol.c_str(), kvol.c_str(), "server", "--data-dir", dir.c_str(), "--listen",
              "127.0.0.1:0", "--no-controllers", "--no-agent", static_cast<char*>(nullptr));
      } else {
        execl(kvol.c_str(), kvol.c_str(), "server", "--data-dir", dir.c_str(), "--listen",
              "127.0.0.1:0", static_cast<char*>(nullptr));
      }
      _exit(127);
    }
    const auto deadline = Clock::now() + 120s;
    while (true) {
      if (Clock::now() > deadline) Die("kvol server did not become ready (see " + dir + "/server.log)");
      int status;
      if (waitpid(pid, &status, WNOHANG) == pid) Die("kvol server exited (see " + dir + "/server.log)");
      if (fs::exists(dir + "/kubeconfig")) {
        auto cfg = kvol::client::LoadKubeconfig(dir + "/kubeconfig");
        if (cfg.ok()) {
          auto c = kvol::client::HttpClient::Create(*cfg);
          if (c.ok() && (*c)->resource<PersistentVolume>().List("", {.limit = 1}).ok()) {
            client = std::move(*c);
            return;
          }
        }
      }
      std::this_thread::sleep_for(20ms);
    }
  }
  void Stop() {
    client.reset();
    if (pid > 0) {
      kill(pid, SIGTERM);
      int status;
      waitpid(pid, &status, 0);
    }
    pid = -1;
  }
  ~ServerProcess() { Stop(); }
};

void RunMemory(const Flags& f) {
  const int n = f.objects > 0 ? f.objects : 100'000;
  std::string kvol = f.kvol;
  if (kvol.empty()) kvol = (fs::canonical("/proc/self/exe").parent_path() / ".." / "kvol").string();
  if (!fs::exists(kvol)) Die("no kvol binary at " + kvol + " (use --kvol PATH)");
  std::string dir = (fs::temp_directory_path() / "kvol-mem-bench-XXXXXX").string();
  if (!mkdtemp(dir.data())) Die("mkdtemp");

  ServerProcess server;
  server.Start(kvol, dir, f.api_only);
  std::this_thread::sleep_for(500ms);
  const long empty = RssKiB(server.pid);
  std::printf("server RSS MiB, empty: %.1f\n", empty / 1024.0);

  const std::string cfg_path = dir + "/kubeconfig";
  auto cfg = kvol::client::LoadKubeconfig(cfg_path);
  if (!cfg.ok()) Die(cfg.status().ToString());
  std::vector<std::unique_ptr<kvol::client::HttpClient>> clients;
  for (int w = 0; w < f.writers; ++w) {
    auto c = kvol::client::HttpClient::Create(*cfg);
    if (!c.ok()) Die(c.status().ToString());
    clients.push_back(std::move(*c));
  }
  std::atomic<long long> json_bytes{0};
  {
    std::atomic<int> next{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < f.writers; ++w) {
      threads.emplace_back([&, w] {
        auto& r = clients[w]->resource<PersistentVolume>();
        for (int i = next++; i < n; i = next++) {
          auto c = r.Create(MakePV(i));
          if (!c.ok()) Die("create: " + c.error().message);
          json_bytes += static_cast<long long>(kvol::api::DumpJson(kvol::api::EncodeStruct(*c)).size());
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  clients.clear();
  const double json_avg = static_cast<double>(json_bytes) / n;
  std::this_thread::sleep_for(500ms);
  const long full = RssKiB(server.pid);
  std::printf("server RSS MiB, %d PVs created over HTTPS: %.1f\n", n, full / 1024.0);
  std::printf("PV JSON bytes, average: %.0f\n", json_avg);
  std::printf("RSS bytes per PV beyond its JSON, after creating: %.0f\n",
              (full - empty) * 1024.0 / n - json_avg);

  server.Stop();
  server.Start(kvol, dir, f.api_only);
  std::this_thread::sleep_for(500ms);
  const long reloaded = RssKiB(server.pid);
  std::printf("server RSS MiB, %d PVs after a restart: %.1f\n", n, reloaded / 1024.0);
  std::printf("RSS bytes per PV beyond its JSON, after a restart: %.0f\n",
              (reloaded - empty) * 1024.0 / n - json_avg);
  server.Stop();
  fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  kvol::ReexecWithHugePages(argv);  // as the kvol binary's servers do
  kvol::ConfigureAllocator();  // as the kvol binary does
  kvol::log::SetQuiet(true);
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--objects") f.objects = std::atoi(value().c_str());
    else if (a == "--writers") f.writers = std::atoi(value().c_str());
    else if (a == "--watchers") f.watchers = std::atoi(value().c_str());
    else if (a == "--updates") f.updates = std::atoi(value().c_str());
    else if (a == "--kvol") f.kvol = value();
    else if (a == "--etcd") f.etcd = true;
    else if (a == "--api-only") f.api_only = true;
    else if (a == "--transport") f.transport = value();
    else if (a == "creates" || a == "watch" || a == "memory" || a == "all") f.what = a;
    else Die("unknown argument " + a);
  }
  signal(SIGPIPE, SIG_IGN);
  if (f.what == "creates" || f.what == "all") RunCreates(f);
  if (f.what == "watch" || f.what == "all") RunWatch(f);
  if (f.what == "memory" || f.what == "all") RunMemory(f);
  return 0;
}
