// Store write throughput: W writer threads creating PV-sized objects as fast as they can,
// against the SQLite store (durable: acknowledged after COMMIT with fsync) and, when
// KVOL_BENCH_ETCD=host:port is set, against etcd. Prints one figure per line.
//
// Usage: store_bench [objects] [writers]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "store/etcd_store.h"
#include "store/sqlite_store.h"

namespace {

using kvol::store::Store;

double Run(Store& store, int objects, int writers, const std::string& prefix) {
  const std::string value(700, 'x');  // the size of a typical PV's JSON
  std::atomic<int> next{0};
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&] {
      for (int i = next++; i < objects; i = next++) {
        auto r = store.Create(prefix + std::to_string(i), kvol::store::MakeValue(value));
        if (!r.ok()) {
          std::fprintf(stderr, "create failed: %s\n", r.status().ToString().c_str());
          std::exit(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return objects / secs;
}

}  // namespace

int main(int argc, char** argv) {
  const int objects = argc > 1 ? std::atoi(argv[1]) : 100000;
  const int writers = argc > 2 ? std::atoi(argv[2]) : 8;
  namespace fs = std::filesystem;
  std::string dir = (fs::temp_directory_path() / "kvol-store-bench-XXXXXX").string();
  if (!mkdtemp(dir.data())) return 1;
  for (bool fsync : {true, false}) {
    kvol::store::SqliteOptions opts;
    opts.path = dir + (fsync ? "/fsync.db" : "/nofsync.db");
    opts.fsync = fsync;
    auto store = kvol::store::OpenSqliteStore(opts);
    if (!store.ok()) {
      std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
      return 1;
    }
    double rate = Run(**store, objects, writers, "/registry/persistentvolumes/pv-");
    std::printf("sqlite %s creates/s (%d writers, %d objects): %.0f\n",
                fsync ? "synchronous=FULL" : "synchronous=NORMAL", writers, objects, rate);
  }
  fs::remove_all(dir);
  if (const char* ep = std::getenv("KVOL_BENCH_ETCD")) {
    auto store = kvol::store::OpenEtcdStore({{ep}});
    if (!store.ok()) return 1;
    double rate = Run(**store, objects, writers, "/kvol-bench/" + std::to_string(getpid()) + "/");
    std::printf("etcd creates/s (%d writers, %d objects): %.0f\n", writers, objects, rate);
  }
  return 0;
}
