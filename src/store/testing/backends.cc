// Test backends: SQLite in a temporary directory; etcd as a real server process.
#include "store/testing/backends.h"

#include <stdlib.h>

#include <atomic>
#include <filesystem>

#include "store/sqlite_store.h"
#include "store/testing/etcd_server.h"
#include "store/etcd_store.h"

namespace kvol::store::testing {
namespace {

// Owns a store and the directory its files live in.
class TempDirStore final : public ForwardingStore {
 public:
  TempDirStore(std::unique_ptr<Store> inner, std::string dir)
      : ForwardingStore(std::move(inner)), dir_(std::move(dir)) {}
  ~TempDirStore() override {
    inner_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

 private:
  std::string dir_;
};

}  // namespace

std::vector<std::string> BackendNames() { return {"sqlite", "etcd"}; }

std::string UniquePrefix() {
  static std::atomic<int> n{0};
  return "/t" + std::to_string(getpid()) + "-" + std::to_string(++n) + "/";
}

StatusOr<std::unique_ptr<Store>> OpenBackend(const std::string& name) {
  if (name == "sqlite") {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kvol-store-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) return InternalError("mkdtemp failed");
    SqliteOptions opts;
    opts.path = tmpl + "/kvol.db";
    auto s = OpenSqliteStore(opts);
    if (!s.ok()) return s.status();
    return std::unique_ptr<Store>(std::make_unique<TempDirStore>(std::move(*s), tmpl));
  }
  if (name == "etcd") {
    auto endpoint = SharedEtcdServer();
    if (!endpoint.ok()) return endpoint.status();
    return OpenEtcdStore({{*endpoint}});
  }
  return InvalidArgumentError("unknown backend " + name);
}

}  // namespace kvol::store::testing
