// Store backends for the conformance suite: each test gets a store through OpenBackend.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "store/store.h"

namespace kvol::store::testing {

// The backends this test binary runs against ("sqlite", and "etcd" when built with it).
std::vector<std::string> BackendNames();

// A store of that backend: a fresh SQLite file in a temporary directory, or a client of a real
// etcd started once for the whole binary.
StatusOr<std::unique_ptr<Store>> OpenBackend(const std::string& name);

// A key prefix no other test uses ("/t<n>/").
std::string UniquePrefix();

// A store that passes every call to another it owns: a base for tests that change one call.
class ForwardingStore : public Store {
 public:
  explicit ForwardingStore(std::unique_ptr<Store> inner) : inner_(std::move(inner)) {}
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

 protected:
  std::unique_ptr<Store> inner_;
};

}  // namespace kvol::store::testing
