// The API's throughput, watch latency and memory, as the client library sees them. Prints one
// figure per line; bench/RESULTS.md records them with the command.
//
//   api_bench creates [--objects N] [--writers W] [--etcd] [--transport local|https]
//       PV creates per second: W threads on the in-process client, then W threads each with its
//       own keep-alive HTTPS connection; on durable SQLite, or on a fresh real etcd (--etcd).
//   api_bench watch [--watchers K] [--updates U] [--kvol PATH]
//       K watchers on persistentvolumes (over HTTPS, then in-process); U updates of one PV, one
//       at a time; the latency from issuing the update to each watcher decoding the event.
//       With K over 1,000: K watch connections to a real `kvol server` process (API only)
//       from one client thread; the server's threads and RSS per watcher, and the latency
//       from issuing an update to each connection receiving its event.
//   api_bench memory [--objects N] [--kvol PATH] [--api-only]
//       RSS of a real `kvol server` process, empty and holding N PVs created over HTTPS, and
//       after a restart that reloads them; per PV beyond the PV's JSON size. --api-only runs
//       the server without its controllers and node agent (`--no-controllers --no-agent`).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include "base/fd.h"
#include "base/log.h"
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

void RunManyWatchers(const Flags& f);

void RunWatch(const Flags& f) {
  if (f.watchers > 1000) return RunManyWatchers(f);
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

// ---- many watchers: a real server process, one client thread ----

std::string KvolBinary(const Flags& f) {
  std::string kvol = f.kvol;
  if (kvol.empty()) kvol = (fs::canonical("/proc/self/exe").parent_path() / ".." / "kvol").string();
  if (!fs::exists(kvol)) Die("no kvol binary at " + kvol + " (use --kvol PATH)");
  return kvol;
}

long ThreadsOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::atol(line.c_str() + 8);
  }
  return -1;
}

// K raw watch connections driven by one Asio thread: each reads what arrives and looks for the
// marker of the current round (a label value), remembering when it first saw it.
class WatchFanout {
 public:
  WatchFanout(const kvol::client::HttpConfig& cfg, int k, std::string path)
      : tls_(boost::asio::ssl::context::tls_client), path_(std::move(path)), token_(cfg.token) {
    tls_.add_certificate_authority(boost::asio::buffer(cfg.ca_pem));
    tls_.set_verify_mode(boost::asio::ssl::verify_peer);
    const std::string hostport = cfg.server.substr(cfg.server.find("://") + 3);
    const size_t colon = hostport.rfind(':');
    endpoint_ = {boost::asio::ip::make_address(hostport.substr(0, colon)),
                 static_cast<unsigned short>(std::atoi(hostport.c_str() + colon + 1))};
    conns_.resize(k);
    for (int i = 0; i < k; ++i) conns_[i] = std::make_unique<Conn>(io_, tls_);
  }

  // Opens every connection (at most 256 in flight), each sending its watch request; returns
  // once all have their response header.
  void Open() {
    thread_ = std::thread([this] { io_.run(); });
    const int k = static_cast<int>(conns_.size());
    for (int i = 0; i < k; ++i) {
      while (started_ - open_.load() >= 256) std::this_thread::sleep_for(1ms);
      ++started_;
      boost::asio::post(io_, [this, i] { Connect(i); });
    }
    const auto deadline = Clock::now() + 300s;
    while (open_.load() < k) {
      if (failed_) Die("a watch connection failed: " + failure_);
      if (Clock::now() > deadline) Die("watch connections did not open");
      std::this_thread::sleep_for(10ms);
    }
  }

  // The next round: connections look for `"round":"<u>"` from now on.
  void Expect(int u) {
    marker_ = "\"round\":\"" + std::to_string(u) + "\"";
    issued_ = Clock::now();
    received_ = 0;
    round_.store(u);
  }
  int received() const { return received_.load(); }
  std::vector<double>& latencies() { return latencies_; }

  void Close() {
    boost::asio::post(io_, [this] {
      for (auto& c : conns_) {
        boost::beast::error_code ec;
        c->s.next_layer().socket().close(ec);
      }
    });
    work_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Conn {
    Conn(boost::asio::io_context& io, boost::asio::ssl::context& tls) : s(io, tls) {}
    boost::beast::ssl_stream<boost::beast::tcp_stream> s;
    std::string req;
    std::array<char, 4096> buf;
    std::string tail;
    bool header_seen = false;
    int seen_round = -1;
  };

  void Fail(const std::string& what) {
    failure_ = what;
    failed_ = true;
  }

  void Connect(int i) {
    auto& c = *conns_[i];
    c.s.next_layer().async_connect(endpoint_, [this, i](boost::beast::error_code ec) {
      if (ec) return Fail("connect: " + ec.message());
      auto& c = *conns_[i];
      c.s.async_handshake(boost::asio::ssl::stream_base::client, [this, i](boost::beast::error_code ec) {
        if (ec) return Fail("handshake: " + ec.message());
        auto& c = *conns_[i];
        c.req = "GET " + path_ + " HTTP/1.1\r\nHost: kvol\r\nAuthorization: Bearer " + token_ +
                "\r\nAccept: application/json\r\n\r\n";
        boost::asio::async_write(c.s, boost::asio::buffer(c.req),
                                 [this, i](boost::beast::error_code ec, size_t) {
                                   if (ec) return Fail("write: " + ec.message());
                                   Read(i);
                                 });
      });
    });
  }

  void Read(int i) {
    auto& c = *conns_[i];
    c.s.async_read_some(boost::asio::buffer(c.buf), [this, i](boost::beast::error_code ec, size_t n) {
      if (ec) return Fail("read: " + ec.message());
      auto& c = *conns_[i];
      std::string data = c.tail;
      data.append(c.buf.data(), n);
      if (!c.header_seen && data.find("\r\n\r\n") != std::string::npos) {
        if (data.rfind("HTTP/1.1 200", 0) != 0) return Fail("answer: " + data.substr(0, 40));
        c.header_seen = true;
        ++open_;
      }
      const int u = round_.load();
      if (u >= 0 && c.seen_round < u && !marker_.empty() && data.find(marker_) != std::string::npos) {
        c.seen_round = u;
        latencies_.push_back(std::chrono::duration<double, std::milli>(Clock::now() - issued_).count());
        ++received_;
      }
      c.tail = data.size() > 64 ? data.substr(data.size() - 64) : data;
      Read(i);
    });
  }

  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_{
      io_.get_executor()};
  boost::asio::ssl::context tls_;
  boost::asio::ip::tcp::endpoint endpoint_;
  const std::string path_;
  const std::string token_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::thread thread_;
  int started_ = 0;
  std::atomic<int> open_{0};
  std::atomic<bool> failed_{false};
  std::string failure_;
  // Set by the main thread between rounds, while every connection has the previous one.
  std::string marker_;
  Clock::time_point issued_;
  std::atomic<int> round_{-1};
  std::atomic<int> received_{0};
  std::vector<double> latencies_;  // the client thread's
};

void RunManyWatchers(const Flags& f) {
  kvol::RaiseDescriptorLimit();
  const std::string kvol = KvolBinary(f);
  std::string dir = (fs::temp_directory_path() / "kvol-watch-bench-XXXXXX").string();
  if (!mkdtemp(dir.data())) Die("mkdtemp");
  ServerProcess server;
  server.Start(kvol, dir, /*api_only=*/true);
  auto& pvs = server.client->resource<PersistentVolume>();
  auto created = pvs.Create(MakePV(999'997));
  if (!created.ok()) Die(created.error().message);
  std::this_thread::sleep_for(1s);
  const long rss0 = RssKiB(server.pid);
  const long threads0 = ThreadsOf(server.pid);

  auto cfg = kvol::client::LoadKubeconfig(dir + "/kubeconfig");
  if (!cfg.ok()) Die(cfg.status().ToString());
  WatchFanout fan(*cfg, f.watchers,
                  "/api/v1/persistentvolumes?watch=true&resourceVersion=" +
                      created->metadata.resource_version);
  const auto opening = Clock::now();
  fan.Open();
  const double open_s = std::chrono::duration<double>(Clock::now() - opening).count();
  std::this_thread::sleep_for(2s);  // handler threads that served the requests go idle
  const long rss1 = RssKiB(server.pid);
  const long threads1 = ThreadsOf(server.pid);
  std::printf("%d watch connections opened in %.1f s\n", f.watchers, open_s);
  std::printf("server threads, before the watchers: %ld, with them: %ld\n", threads0, threads1);
  std::printf("server RSS MiB, before the watchers: %.1f, with them: %.1f\n", rss0 / 1024.0,
              rss1 / 1024.0);
  std::printf("server RSS KiB per watcher: %.2f\n",
              static_cast<double>(rss1 - rss0) / f.watchers);

  PersistentVolume pv = *created;
  const int updates = std::min(f.updates, 50);
  for (int u = 0; u < updates; ++u) {
    pv.metadata.labels["round"] = std::to_string(u);
    fan.Expect(u);
    auto r = pvs.Update(pv);
    if (!r.ok()) Die("update: " + r.error().message);
    pv = *r;
    const auto deadline = Clock::now() + 60s;
    while (fan.received() < f.watchers) {
      if (Clock::now() > deadline) Die("watchers did not receive update " + std::to_string(u));
      std::this_thread::sleep_for(100us);
    }
  }
  // Handler threads that served the burst of watch requests exit once idle (30 s).
  const auto idle_by = Clock::now() + 45s;
  while (ThreadsOf(server.pid) > threads0 && Clock::now() < idle_by) std::this_thread::sleep_for(1s);
  const long threads2 = ThreadsOf(server.pid);
  const long rss2 = RssKiB(server.pid);
  fan.Close();
  std::printf("server threads after %d updates, once idle handler threads exited: %ld\n", updates,
              threads2);
  std::printf("server RSS KiB per watcher then: %.2f\n",
              static_cast<double>(rss2 - rss0) / f.watchers);
  std::printf("watch latency p50 ms (%d watchers, %d updates): %.2f\n", f.watchers, updates,
              Percentile(fan.latencies(), 0.50));
  std::printf("watch latency p99 ms (%d watchers, %d updates): %.2f\n", f.watchers, updates,
              Percentile(fan.latencies(), 0.99));
  std::fflush(stdout);
  server.Stop();
  fs::remove_all(dir);
}

void RunMemory(const Flags& f) {
  const int n = f.objects > 0 ? f.objects : 100'000;
  const std::string kvol = KvolBinary(f);
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
