// How fast the PV controller binds claims, on a real API over durable SQLite with the controller
// in the same process on the in-process client. Prints one figure per line; bench/RESULTS.md
// records them with the command.
//
//   bind_bench pairs [--n N] [--workers W] [--writers C]
//       N Available PVs (sizes 1-8Gi, half ReadWriteOnce, half ReadWriteOnce+ReadWriteMany),
//       then N claims that fit them created by C writers (default 64; each waits for its
//       create's commit, so 8 writers cannot create much more than 10,000 claims per second);
//       the time from the first claim created until every claim is Bound, and binds per
//       second. W: the controller's workers per queue (default 4). Without --n: N = 1,000,
//       10,000, 100,000. Before them, the time from the controller's start until its volume
//       sync has made all N PVs Available (available_seconds; the same over HTTPS). Then the
//       growth of the process's resident memory per pair while they bound, and the CPU per
//       bind by kind of thread (the threads' names: pv-claim, kvol-committer, ...).
//       With BIND_BENCH_PROGRESS=1, every 250 ms how many claims are created and how many
//       Bound (on stderr); with BIND_BENCH_MALLOC_STATS=1, jemalloc's malloc_stats_print()
//       (memory allocated, active and resident) once the PVs are Available and again once all
//       bound.
//   bind_bench latency [--pvs P] [--claims C]
//       P Available PVs; once the controller has settled (warm-up claims until ten in a row
//       bind within 5 ms), C claims created one at a time, each waited for until Bound: p50
//       and p99 of claim-created-to-Bound, then the tail: p99.9, the slowest, and how many
//       took over 5 ms. With BIND_BENCH_SLOW=1 in the environment, each claim slower than 5 ms
//       is printed with how long its own create took (the rest is the controller's sync, its
//       binding write and the Bound event's way back).
//   bind_bench https --kvol PATH [--n N] [--workers W] [--writers C]
//       As pairs, with `PATH server --no-controllers --no-agent` (the API server alone) and
//       `PATH controller-manager` as two processes: the controller reads and writes over HTTPS,
//       and so do the bench's C writers (default 64, as in process). The PVs are created by
//       as many writers, so each claim writer finds a connection open and no TLS handshake
//       falls inside the measured interval. CPU per bind of each process, and of each kind of
//       thread in the server and the controller-manager.
//   bind_bench growth [--from A] [--to B] [--rounds R] [--idle-seconds S] [--workers W]
//                     [--writers C]
//       Whether the total time grows no worse than N log N: R rounds (default 5), each running
//       `bind_bench pairs --n A` and then `--n B` as processes of their own (defaults 10,000
//       and 100,000), each after S seconds with nothing running here (default 10). Each
//       round's all-Bound times and their ratio, then the median time of each size, the ratio
//       of the medians and the N log N bound, (B log B) / (A log A). The pause puts every run
//       on the same footing: memory that a process has just freed is given to the next much
//       faster than memory the kernel has had free for a while (bench/memory_bench.cc), so
//       without it the small run, following the large one's exit, starts on warm memory. Where
//       the kernel reports free memory to its host, the pause also lasts until it has reported
//       all (a large run frees more than the kernel reports in 10 s). One run's time still
//       swings by a tenth or more on a shared machine; quote the medians.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <jemalloc/jemalloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/log.h"
#include "bound_watch.h"
#include "client/informer.h"
#include "client/testing/kvol_process.h"
#include "client/testing/parallel.h"
#include "client/testing/proc_stats.h"
#include "client/testing/test_server.h"
#include "controller/pv/controller.h"
#include "page_reporting.h"

namespace {

using namespace std::chrono_literals;
using kvol::api::PersistentVolume;
using kvol::api::PersistentVolumeClaim;
using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "bind_bench: %s\n", msg.c_str());
  std::exit(1);
}

std::vector<std::string> Modes(int i) {
  if (i % 2 == 0) return {"ReadWriteOnce"};
  return {"ReadWriteOnce", "ReadWriteMany"};
}

PersistentVolume MakePV(int i) {
  PersistentVolume pv;
  pv.metadata.name = "pv-" + std::to_string(i);
  pv.spec.capacity["storage"] = kvol::api::Quantity::MustParse(std::to_string(1 + i % 8) + "Gi");
  pv.spec.access_modes = Modes(i);
  pv.spec.persistent_volume_reclaim_policy = "Retain";
  pv.spec.storage_class_name = "bench";
  pv.spec.host_path.emplace().path = "/srv/bench/pv-" + std::to_string(i);
  return pv;
}

// Claim i fits PV i exactly (same size and modes), so N claims can take N PVs.
PersistentVolumeClaim MakeClaim(int i, const std::string& prefix = "claim-") {
  PersistentVolumeClaim c;
  c.metadata.namespace_ = "default";
  c.metadata.name = prefix + std::to_string(i);
  c.spec.access_modes = Modes(i);
  c.spec.storage_class_name = "bench";
  c.spec.resources.requests["storage"] = kvol::api::Quantity::MustParse(std::to_string(1 + i % 8) + "Gi");
  return c;
}

using kvol::client::testing::CpuByThread;
using kvol::client::testing::CpuSecondsOf;
using kvol::client::testing::Parallel;
using kvol::client::testing::RssKiB;
using kvol::client::testing::ThreadCpu;

// CPU time (user + system) this process has used so far, in seconds.
double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

// Prints the CPU per bind of each kind of thread (by name: "pv-claim", "kvol-committer",
// "watch-pvc", ...) between two CpuByThread readings, most first; `figure` starts each line.
// Threads that ended in between are what the process used beyond the threads still there (in
// process, the claim writers).
void PrintCpuByThread(const std::string& figure, int n,
                      const std::map<std::string, ThreadCpu>& before,
                      const std::map<std::string, ThreadCpu>& after, double process_seconds,
                      const char* ended) {
  std::map<std::string, double> by_name;
  double counted = 0;
  for (const auto& [tid, t] : after) {
    auto was = before.find(tid);
    const double used = t.seconds - (was != before.end() ? was->second.seconds : 0);
    by_name[t.name] += used;
    counted += used;
  }
  std::vector<std::pair<double, std::string>> sorted;
  for (const auto& [name, secs] : by_name) sorted.emplace_back(secs, name);
  sorted.emplace_back(std::max(0.0, process_seconds - counted), ended);
  std::sort(sorted.rbegin(), sorted.rend());
  for (const auto& [secs, name] : sorted) {
    if (secs * 1e6 / n < 0.5) continue;
    std::printf("%s threads=%s cpu_us_per_bind=%.0f\n", figure.c_str(), name.c_str(),
                secs * 1e6 / n);
  }
}

// With BIND_BENCH_PERF_CTL=FIFO (perf record --control=fifo:FIFO -D -1, with -a for the
// https mode's processes), the profile covers only the measured interval.
void Perf(const char* command) {
  const char* fifo = std::getenv("BIND_BENCH_PERF_CTL");
  if (fifo == nullptr) return;
  if (FILE* f = std::fopen(fifo, "w")) {
    std::fprintf(f, "%s\n", command);
    std::fclose(f);
  }
}


// Waits until the volume sync has made all `n` PVs Available: the clock starts after. An
// informer follows the volumes (one list, then events) rather than listing them all again and
// again, which over HTTPS at 100,000 PVs took longer than the controller's first sync.
void WaitAvailable(kvol::client::Client& c, int n) {
  std::mutex mu;
  std::condition_variable cv;
  std::set<std::string> available;
  kvol::client::Informer<PersistentVolume> volumes(c.resource<PersistentVolume>());
  auto see = [&](const PersistentVolume& pv) {
    std::lock_guard lock(mu);
    if (pv.status.phase == "Available") {
      available.insert(pv.metadata.name);
    } else {
      available.erase(pv.metadata.name);
    }
    if (available.size() == static_cast<size_t>(n)) cv.notify_all();
  };
  volumes.AddHandlers({.on_add = [&](const auto& pv) { see(*pv); },
                       .on_update = [&](const auto&, const auto& pv) { see(*pv); },
                       .on_delete =
                           [&](const auto& pv) {
                             std::lock_guard lock(mu);
                             available.erase(pv->metadata.name);
                           }});
  volumes.Start();
  std::unique_lock lock(mu);
  if (!cv.wait_for(lock, 600s, [&] { return available.size() == static_cast<size_t>(n); })) {
    Die("PVs did not become Available: " + std::to_string(available.size()) + " of " +
        std::to_string(n) + " after 600 s");
  }
  lock.unlock();
  volumes.Stop();
}

struct Setup {
  std::unique_ptr<kvol::client::testing::TestServer> server;
  std::unique_ptr<kvol::controller::pv::Controller> controller;
  Clock::time_point controller_started;
  // From the controller's start until its volume sync had made every PV Available.
  double available_seconds = 0;
};

Setup Start(int pvs, int workers) {
  kvol::client::testing::TestServerOptions o;
  o.http = false;
  auto s = kvol::client::testing::TestServer::Start(o);
  if (!s.ok()) Die(s.status().ToString());
  Setup setup;
  setup.server = std::move(*s);
  auto& c = setup.server->local();
  Parallel(pvs, 8, [&](int i) {
    auto r = c.resource<PersistentVolume>().CreateShared(MakePV(i));
    if (!r.ok()) Die("create PV: " + r.error().message);
  });
  kvol::controller::pv::ControllerOptions co;
  co.workers = workers;
  setup.controller = std::make_unique<kvol::controller::pv::Controller>(c, nullptr, co);
  setup.controller_started = Clock::now();
  if (auto st = setup.controller->Start(); !st.ok()) Die(st.ToString());
  WaitAvailable(c, pvs);
  setup.available_seconds =
      std::chrono::duration<double>(Clock::now() - setup.controller_started).count();
  return setup;
}

void Pairs(int n, int workers, int writers) {
  Setup s = Start(n, workers);
  const bool malloc_stats_wanted = std::getenv("BIND_BENCH_MALLOC_STATS") != nullptr;
  if (malloc_stats_wanted) malloc_stats_print(nullptr, nullptr, nullptr);
  std::printf("pvs=%d available_seconds=%.3f\n", n, s.available_seconds);
  auto& c = s.server->local();
  kvol::bench::BoundWatch bound(c);
  Perf("enable");
  const double cpu0 = CpuSeconds();
  const long rss0 = RssKiB();
  const auto threads0 = CpuByThread();
  const auto start = Clock::now();
  const bool progress_wanted = std::getenv("BIND_BENCH_PROGRESS") != nullptr;
  std::atomic<int> made{0};
  std::atomic<bool> measured{false};
  std::thread progress;
  if (progress_wanted) {
    progress = std::thread([&] {
      while (!measured) {
        std::this_thread::sleep_for(250ms);
        std::fprintf(stderr, "seconds=%.2f created=%d bound=%zu\n",
                     std::chrono::duration<double>(Clock::now() - start).count(), made.load(),
                     bound.Count());
      }
    });
  }
  Parallel(n, writers, [&](int i) {
    auto r = c.resource<PersistentVolumeClaim>().CreateShared(MakeClaim(i));
    if (!r.ok()) Die("create claim: " + r.error().message);
    if (progress_wanted) made.fetch_add(1, std::memory_order_relaxed);
  });
  const double created = std::chrono::duration<double>(Clock::now() - start).count();
  if (!bound.WaitFor(n, 600s)) Die("claims did not all bind");
  const double secs = std::chrono::duration<double>(bound.last() - start).count();
  const double cpu = CpuSeconds() - cpu0;
  const auto threads1 = CpuByThread();
  const long rss1 = RssKiB();
  measured = true;
  if (progress.joinable()) progress.join();
  Perf("disable");
  if (malloc_stats_wanted) malloc_stats_print(nullptr, nullptr, nullptr);
  std::printf("pairs=%d workers=%d writers=%d all_created_seconds=%.3f\n", n, workers, writers,
              created);
  std::printf("pairs=%d workers=%d all_bound_seconds=%.3f\n", n, workers, secs);
  std::printf("pairs=%d workers=%d binds_per_second=%.0f\n", n, workers, n / secs);
  std::printf("pairs=%d workers=%d cpu_us_per_bind=%.0f\n", n, workers, cpu * 1e6 / n);
  // What binding made resident (new memory is slow to get on some virtual machines).
  std::printf("pairs=%d workers=%d rss_growth_bytes_per_pair=%.0f\n", n, workers,
              (rss1 - rss0) * 1024.0 / n);
  PrintCpuByThread("pairs=" + std::to_string(n), n, threads0, threads1, cpu, "(ended: writers)");
  std::fflush(stdout);
  s.controller->Stop();
}

void Latency(int pvs, int claims) {
  Setup s = Start(pvs, 4);
  auto& c = s.server->local();
  kvol::bench::BoundWatch bound(c);
  // Settle first: the controller's first sync of every volume and the store's compaction of
  // the setup's history are start-up work, not what a claim arriving later meets. The store
  // compacts a backlog a slice at a time, between writes: wait until its compacted revision
  // has stood still for half a second. Then warm-up claims (not counted) run until ten in a
  // row bind within 5 ms. 60 s at most for both.
  const auto settle_deadline = Clock::now() + 60s;
  auto& store = s.server->store();
  auto compacted = store.CompactedRevision();
  for (auto stood_since = Clock::now();
       Clock::now() - stood_since < 500ms && Clock::now() < settle_deadline;) {
    std::this_thread::sleep_for(50ms);
    auto now = store.CompactedRevision();
    if (!now.ok()) Die(now.status().ToString());
    if (!compacted.ok() || *now != *compacted) {
      compacted = now;
      stood_since = Clock::now();
    }
  }
  int warm = 0, fast = 0;
  while (fast < 10 && Clock::now() < settle_deadline) {
    auto claim = MakeClaim(pvs - 1 - warm, "warm-");
    ++warm;
    const auto t0 = Clock::now();
    if (!c.resource<PersistentVolumeClaim>().CreateShared(claim).ok()) Die("create warm-up claim");
    if (!bound.WaitForName(claim.metadata.name, 30s)) Die("warm-up claim did not bind");
    fast = Clock::now() - t0 < 5ms ? fast + 1 : 0;
  }
  std::printf("single_claim_pvs=%d warmup_claims=%d\n", pvs, warm);
  std::vector<double> ms;
  for (int i = 0; i < claims; ++i) {
    auto claim = MakeClaim(i, "single-");
    const auto t0 = Clock::now();
    auto r = c.resource<PersistentVolumeClaim>().CreateShared(claim);
    if (!r.ok()) Die("create claim: " + r.error().message);
    const double create_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!bound.WaitForName(claim.metadata.name, 30s)) Die("claim did not bind");
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (std::getenv("BIND_BENCH_SLOW") && ms.back() > 5) {
      std::fprintf(stderr,
                   "claim %d took %.1f ms (its create %.1f ms), %.3f s after the controller started\n",
                   i, ms.back(), create_ms,
                   std::chrono::duration<double>(t0 - s.controller_started).count());
    }
  }
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) { return ms[std::min(ms.size() - 1, static_cast<size_t>(p * ms.size()))]; };
  std::printf("single_claim_pvs=%d claims=%d p50_ms=%.2f\n", pvs, claims, pct(0.50));
  std::printf("single_claim_pvs=%d claims=%d p99_ms=%.2f\n", pvs, claims, pct(0.99));
  std::printf("single_claim_pvs=%d claims=%d p999_ms=%.2f\n", pvs, claims, pct(0.999));
  std::printf("single_claim_pvs=%d claims=%d max_ms=%.2f\n", pvs, claims, ms.back());
  std::printf("single_claim_pvs=%d claims=%d over_5ms=%zu\n", pvs, claims,
              static_cast<size_t>(ms.end() - std::upper_bound(ms.begin(), ms.end(), 5.0)));
  s.controller->Stop();
}

// Pairs with the server and the controllers as separate kvol processes, everything over HTTPS.
void Https(const std::string& kvol, int n, int workers, int writers) {
  namespace testing = kvol::client::testing;
  auto dir = testing::MakeTempDir("kvol-bind-bench");
  if (!dir.ok()) Die(dir.status().ToString());
  auto server = testing::KvolProcess::Start(
      kvol,
      {"server", "--no-controllers", "--no-agent", "--data-dir", *dir + "/data", "--listen",
       "127.0.0.1:0"},
      *dir + "/server.log", "kvol is ready");
  if (!server.ok()) Die(server.status().ToString());
  auto c = testing::ClientFromKubeconfig(*dir + "/data/kubeconfig");
  if (!c.ok()) Die(c.status().ToString());
  auto& client = **c;
  // As many threads as the claims' writers: the client's pool (up to 64 idle connections)
  // then holds a connection for each writer, and no handshake falls inside the interval.
  Parallel(n, writers, [&](int i) {
    auto r = client.resource<PersistentVolume>().Create(MakePV(i));
    if (!r.ok()) Die("create PV: " + r.error().message);
  });
  const auto cm_started = Clock::now();  // until the volume sync has made every PV Available
  auto cm = testing::KvolProcess::Start(
      kvol, {"controller-manager", "--kubeconfig", *dir + "/data/kubeconfig", "--data-dir", *dir + "/cm",
             "--workers", std::to_string(workers)},
      *dir + "/cm.log", "persistentvolume-controller, pvc-protection, pv-protection", 600s);
  if (!cm.ok()) Die(cm.status().ToString());
  WaitAvailable(client, n);
  std::printf("https_pvs=%d available_seconds=%.3f\n", n,
              std::chrono::duration<double>(Clock::now() - cm_started).count());
  double created = 0, secs = 0, server_cpu = 0, cm_cpu = 0, bench_cpu = 0;
  const pid_t server_pid = (*server)->pid(), cm_pid = (*cm)->pid();
  std::map<std::string, ThreadCpu> server_threads[2], cm_threads[2];
  {
    kvol::bench::BoundWatch bound(client);
    Perf("enable");
    const double server0 = CpuSecondsOf(server_pid), cm0 = CpuSecondsOf(cm_pid);
    const double bench0 = CpuSeconds();
    server_threads[0] = CpuByThread(server_pid);
    cm_threads[0] = CpuByThread(cm_pid);
    const auto start = Clock::now();
    Parallel(n, writers, [&](int i) {
      auto r = client.resource<PersistentVolumeClaim>().Create(MakeClaim(i));
      if (!r.ok()) Die("create claim: " + r.error().message);
    });
    created = std::chrono::duration<double>(Clock::now() - start).count();
    if (!bound.WaitFor(n, 600s)) Die("claims did not all bind");
    secs = std::chrono::duration<double>(bound.last() - start).count();
    server_cpu = CpuSecondsOf(server_pid) - server0;
    cm_cpu = CpuSecondsOf(cm_pid) - cm0;
    server_threads[1] = CpuByThread(server_pid);
    cm_threads[1] = CpuByThread(cm_pid);
    bench_cpu = CpuSeconds() - bench0;
    Perf("disable");
  }
  std::printf("https_pairs=%d workers=%d writers=%d all_created_seconds=%.3f\n", n, workers,
              writers, created);
  std::printf("https_pairs=%d workers=%d all_bound_seconds=%.3f\n", n, workers, secs);
  std::printf("https_pairs=%d workers=%d binds_per_second=%.0f\n", n, workers, n / secs);
  // CPU per bind, counted from the first claim created until the last is Bound.
  std::printf("https_pairs=%d workers=%d server_cpu_us_per_bind=%.0f\n", n, workers,
              server_cpu * 1e6 / n);
  std::printf("https_pairs=%d workers=%d controller_manager_cpu_us_per_bind=%.0f\n", n, workers,
              cm_cpu * 1e6 / n);
  std::printf("https_pairs=%d workers=%d bench_cpu_us_per_bind=%.0f\n", n, workers,
              bench_cpu * 1e6 / n);
  const std::string pairs = "https_pairs=" + std::to_string(n);
  PrintCpuByThread(pairs + " process=server", n, server_threads[0], server_threads[1],
                   server_cpu, "(ended)");
  PrintCpuByThread(pairs + " process=controller-manager", n, cm_threads[0], cm_threads[1],
                   cm_cpu, "(ended)");
  std::fflush(stdout);
  (*cm)->Stop();
  (*server)->Stop();
  std::error_code ec;
  std::filesystem::remove_all(*dir, ec);
}

// Runs `bind_bench pairs --n N` as a process of its own; its all_bound_seconds.
double PairsProcess(int n, int workers, int writers) {
  std::string cmd = "/proc/" + std::to_string(getpid()) + "/exe pairs --n " + std::to_string(n) +
                    " --workers " + std::to_string(workers) + " --writers " +
                    std::to_string(writers);
  FILE* out = popen(cmd.c_str(), "r");
  if (out == nullptr) Die("cannot run " + cmd);
  double secs = -1;
  char line[512];
  while (std::fgets(line, sizeof line, out) != nullptr) {
    int got_n = 0, got_workers = 0;
    double v = 0;
    if (std::sscanf(line, "pairs=%d workers=%d all_bound_seconds=%lf", &got_n, &got_workers,
                    &v) == 3) {
      secs = v;
    }
  }
  int rc = pclose(out);
  if (rc != 0 || secs <= 0) Die(cmd + " failed (status " + std::to_string(rc) + ")");
  return secs;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

void Growth(int from, int to, int rounds, int idle_seconds, int workers, int writers) {
  std::vector<double> small, large;
  auto idle = [&] {
    std::this_thread::sleep_for(std::chrono::seconds(idle_seconds));
    // Where the kernel reports free memory to its host, until it has reported what the run
    // before freed, so that no run starts on memory still backed.
    kvol::bench::WaitForFreeMemoryReported();
  };
  for (int r = 1; r <= rounds; ++r) {
    idle();
    small.push_back(PairsProcess(from, workers, writers));
    idle();
    large.push_back(PairsProcess(to, workers, writers));
    std::printf("round=%d seconds_%d=%.3f seconds_%d=%.3f ratio=%.2f\n", r, from, small.back(),
                to, large.back(), large.back() / small.back());
    std::fflush(stdout);
  }
  double ms = Median(small), ml = Median(large);
  auto nlogn = [](double n) { return n * std::log(n); };
  std::printf("median_seconds_%d=%.3f\n", from, ms);
  std::printf("median_seconds_%d=%.3f\n", to, ml);
  std::printf("ratio_of_medians=%.2f\n", ml / ms);
  std::printf("n_log_n_ratio=%.2f\n", nlogn(to) / nlogn(from));
}

}  // namespace

int main(int argc, char** argv) {
  kvol::log::SetQuiet(true);
  std::string what = argc > 1 ? argv[1] : "";
  int n = 0, workers = 4, pvs = 100000, claims = 200, writers = 0;
  int from = 10000, to = 100000, rounds = 5, idle_seconds = 10;
  std::string kvol;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string f = argv[i];
    int v = std::atoi(argv[i + 1]);
    if (f == "--n") n = v;
    else if (f == "--workers") workers = v;
    else if (f == "--pvs") pvs = v;
    else if (f == "--claims") claims = v;
    else if (f == "--writers") writers = v;
    else if (f == "--from") from = v;
    else if (f == "--to") to = v;
    else if (f == "--rounds") rounds = v;
    else if (f == "--idle-seconds") idle_seconds = v;
    else if (f == "--kvol") kvol = argv[i + 1];
    else Die("unknown flag " + f);
  }
  if (what == "https") {
    if (writers == 0) writers = 64;
    if (kvol.empty()) Die("https needs --kvol PATH (the kvol binary)");
    if (n > 0) {
      Https(kvol, n, workers, writers);
    } else {
      for (int size : {1000, 10000, 100000}) Https(kvol, size, workers, writers);
    }
  } else if (what == "pairs") {
    if (writers == 0) writers = 64;
    if (n > 0) {
      Pairs(n, workers, writers);
    } else {
      for (int size : {1000, 10000, 100000}) Pairs(size, workers, writers);
    }
  } else if (what == "latency") {
    Latency(pvs, claims);
  } else if (what == "growth") {
    if (writers == 0) writers = 64;
    if (from < 2 || to <= from || rounds < 1 || idle_seconds < 0) {
      Die("growth needs 2 <= --from < --to, --rounds >= 1 and --idle-seconds >= 0");
    }
    Growth(from, to, rounds, idle_seconds, workers, writers);
  } else {
    Die("usage: bind_bench pairs [--n N] [--workers W] [--writers C] | latency [--pvs P] "
        "[--claims C] | https --kvol PATH [--n N] [--workers W] [--writers C] | growth "
        "[--from A] [--to B] [--rounds R] [--idle-seconds S] [--workers W] [--writers C]");
  }
  return 0;
}
