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
class TempDirStore final : public Store {
 public:
  TempDirStore(std::unique_ptr<Store> inner, std::string dir)
      : inner_(std::move(inner)), dir_(std::move(dir)) {}
  ~TempDirStore() override {
    inner_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  StatusOr<KeyValue> Get(std::string_view k, Revision r) override { return inner_->Get(k, r); }
  StatusOr<RangeResult> Range(const RangeOptions& o) override { return inner_->Range(o); }
  StatusOr<Revision> Create(std::string_view k, Value v) override {
    return inner_->Create(k, std::move(v));
  }
  StatusOr<Revision> Update(std::string_view k, Value v, Revision e) override {
    return inner_->Update(k, std::move(v), e);
  }
  StatusOr<Revision> Delete(std::string_view k, Revision e) override { return inner_->Delete(k, e); }
  std::vector<StatusOr<Revision>> WriteMany(std::vector<Write> w) override {
    return inner_->WriteMany(std::move(w));
  }
  bool WatchSharesValues() const override { return inner_->WatchSharesValues(); }
  StatusOr<WatchPtr> Watch(std::string_view p, Revision a) override { return inner_->Watch(p, a); }
  Status Compact(Revision r) override { return inner_->Compact(r); }
  StatusOr<Revision> CurrentRevision() override { return inner_->CurrentRevision(); }
  StatusOr<Revision> CompactedRevision() override { return inner_->CompactedRevision(); }

 private:
  std::unique_ptr<Store> inner_;
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
