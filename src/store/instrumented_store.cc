// Timing the store's requests.
#include "store/instrumented_store.h"

#include <chrono>

#include "metrics/metrics.h"

namespace kvol::store {
namespace {

prometheus::Family<prometheus::Histogram>& Durations() {
  static auto& f = prometheus::BuildHistogram()
                       .Name("etcd_request_duration_seconds")
                       .Help("Etcd request latency in seconds for each operation and object type.")
                       .Register(metrics::Registry());
  return f;
}

// kube-apiserver's buckets.
const prometheus::Histogram::BucketBoundaries& Buckets() {
  static const prometheus::Histogram::BucketBoundaries b = {
      0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2,
      3,     4,     5,    6,   8,   10,  15,  20,  30,  45,   60};
  return b;
}

using Clock = std::chrono::steady_clock;

void Observe(std::string_view operation, std::string_view key, Clock::time_point start) {
  const std::chrono::duration<double> took = Clock::now() - start;
  Durations()
      .Add({{"operation", std::string(operation)}, {"type", std::string(RequestType(key))}},
           Buckets())
      .Observe(took.count());
}

class InstrumentedStore final : public Store {
 public:
  explicit InstrumentedStore(std::unique_ptr<Store> store) : store_(std::move(store)) {}

  bool WatchSharesValues() const override { return store_->WatchSharesValues(); }

  StatusOr<KeyValue> Get(std::string_view key, Revision revision) override {
    const auto start = Clock::now();
    auto r = store_->Get(key, revision);
    Observe("get", key, start);
    return r;
  }
  StatusOr<RangeResult> Range(const RangeOptions& opts) override {
    const auto start = Clock::now();
    auto r = store_->Range(opts);
    Observe("list", opts.prefix, start);
    return r;
  }
  StatusOr<Revision> Create(std::string_view key, Value value) override {
    const auto start = Clock::now();
    auto r = store_->Create(key, std::move(value));
    Observe("create", key, start);
    return r;
  }
  StatusOr<Revision> Update(std::string_view key, Value value, Revision expected) override {
    const auto start = Clock::now();
    auto r = store_->Update(key, std::move(value), expected);
    Observe("update", key, start);
    return r;
  }
  StatusOr<Revision> Delete(std::string_view key, Revision expected) override {
    const auto start = Clock::now();
    auto r = store_->Delete(key, expected);
    Observe("delete", key, start);
    return r;
  }
  std::vector<StatusOr<Revision>> WriteMany(std::vector<Write> writes) override {
    std::vector<std::pair<Write::Kind, std::string>> what;
    what.reserve(writes.size());
    for (const auto& w : writes) what.emplace_back(w.kind, w.key);
    const auto start = Clock::now();
    auto r = store_->WriteMany(std::move(writes));
    for (const auto& [kind, key] : what) {
      Observe(kind == Write::Kind::kCreate   ? "create"
              : kind == Write::Kind::kUpdate ? "update"
                                             : "delete",
              key, start);
    }
    return r;
  }
  StatusOr<WatchPtr> Watch(std::string_view prefix, Revision after) override {
    return store_->Watch(prefix, after);
  }
  Status Compact(Revision revision) override { return store_->Compact(revision); }
  StatusOr<Revision> CurrentRevision() override { return store_->CurrentRevision(); }
  StatusOr<Revision> CompactedRevision() override { return store_->CompactedRevision(); }

 private:
  std::unique_ptr<Store> store_;
};

}  // namespace

std::string_view RequestType(std::string_view key) {
  constexpr std::string_view kRoot = "/registry/";
  if (key.substr(0, kRoot.size()) == kRoot) key.remove_prefix(kRoot.size());
  while (!key.empty() && key.front() == '/') key.remove_prefix(1);
  return key.substr(0, key.find('/'));
}

std::unique_ptr<Store> Instrumented(std::unique_ptr<Store> store) {
  return std::make_unique<InstrumentedStore>(std::move(store));
}

}  // namespace kvol::store
