#include "controller/garbagecollector/garbage_collector.h"

#include <algorithm>

#include "api/scheme.h"
#include "api/well_known.h"
#include "client/worker.h"

namespace kvol::controller::garbagecollector {

using client::ApiStatus;

namespace {

bool Has(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string KindKey(std::string_view api_version, std::string_view kind) {
  return std::string(api_version) + "|" + std::string(kind);
}

std::optional<api::ApiError> ErrorOf(const api::ApiError& e) {
  if (api::IsNotFound(e)) return std::nullopt;  // gone: nothing left to do to it
  return e;
}

}  // namespace

template <class T>
void Collector::AddKind() {
  const api::KindInfo& k = api::KindInfoOf<T>();
  KindOps ops;
  ops.namespaced = k.namespaced;
  auto state_of = [](const T& obj) {
    return State{.uid = obj.metadata.uid,
                 .owners = obj.metadata.owner_references,
                 .deleting = obj.metadata.deletion_timestamp.has_value(),
                 .finalizers = obj.metadata.finalizers};
  };
  ops.cached = [this, state_of](const std::string& ns,
                                const std::string& name) -> std::optional<State> {
    if (!informers_) return std::nullopt;
    auto obj = informers_->Get<T>().Get(ns, name);
    if (!obj) return std::nullopt;
    return state_of(*obj);
  };
  ops.live = [this, state_of](const std::string& ns, const std::string& name) -> api::ApiOr<State> {
    auto obj = client_.resource<T>().Get(ns, name);
    if (!obj.ok()) return obj.error();
    return state_of(*obj);
  };
  ops.remove = [this](const std::string& ns, const std::string& name,
                      const api::DeleteOptions& opts) -> std::optional<api::ApiError> {
    auto deleted = client_.resource<T>().Delete(ns, name, opts);
    return deleted.ok() ? std::nullopt : ErrorOf(deleted.error());
  };
  ops.edit =
      [this](const std::string& ns, const std::string& name,
             const std::function<bool(api::ObjectMeta&)>& edit) -> std::optional<api::ApiError> {
    auto written = client::Mutate<T>(client_.resource<T>(), ns, name,
                                     [&](T& obj) { return edit(obj.metadata); });
    return written.ok() ? std::nullopt : ErrorOf(written.error());
  };
  kinds_.emplace(KindKey(k.ApiVersion(), k.kind), std::move(ops));
}

Collector::Collector(client::Client& client, Options options) : client_(client), options_(options) {
  api::ForEachKind([&]<class T>(std::type_identity<T>) {
    if constexpr (!std::is_same_v<T, api::Event>) AddKind<T>();
  });
}

Collector::~Collector() { Stop(); }

const Collector::KindOps* Collector::Ops(const std::string& api_version,
                                         const std::string& kind) const {
  auto it = kinds_.find(KindKey(api_version, kind));
  return it == kinds_.end() ? nullptr : &it->second;
}

StatusOr<std::optional<Collector::State>> Collector::Read(const KindOps& ops, const std::string& ns,
                                                          const std::string& name) const {
  if (auto cached = ops.cached(ns, name)) return std::optional<State>(*std::move(cached));
  auto live = ops.live(ns, name);
  if (live.ok()) return std::optional<State>(*std::move(live));
  if (api::IsNotFound(live.error())) return std::optional<State>();
  return ApiStatus(live.error());
}

void Collector::Enqueue(const std::string& key) {
  if (queue_) queue_->Add(key);
}

std::string Collector::OwnerKey(const api::OwnerReference& ref, const std::string& ns) const {
  const KindOps* ops = Ops(ref.api_version, ref.kind);
  if (!ops) return {};
  return ObjectKey(ref.api_version, ref.kind, ops->namespaced ? ns : "", ref.name);
}

void Collector::Observed(const std::string& key, const api::ObjectMeta& meta) {
  bool changed = false;
  for (const auto& ref : dependents_.Observe(key, meta.owner_references, &changed)) {
    if (auto owner = OwnerKey(ref, meta.namespace_); !owner.empty()) Enqueue(owner);
  }
  const bool collecting =
      meta.deletion_timestamp && (Has(meta.finalizers, api::kOrphanFinalizer) ||
                                  Has(meta.finalizers, api::kForegroundFinalizer));
  if (collecting || (changed && !meta.owner_references.empty())) Enqueue(key);
}

void Collector::Deleted(const std::string& key, const api::ObjectMeta& meta) {
  // Its owners may have waited for it; its dependents may have lost their last owner.
  for (const auto& ref : dependents_.Forget(key)) {
    if (auto owner = OwnerKey(ref, meta.namespace_); !owner.empty()) Enqueue(owner);
  }
  for (const auto& dependent : dependents_.Of(meta.uid)) Enqueue(dependent);
}

Status Collector::Sync(const std::string& key) {
  const ObjectId id = ParseObjectKey(key);
  const KindOps* ops = Ops(id.api_version, id.kind);
  if (!ops) return OkStatus();
  KVOL_ASSIGN_OR_RETURN(std::optional<State> obj, Read(*ops, id.ns, id.name));
  if (!obj) return OkStatus();
  if (obj->deleting && Has(obj->finalizers, api::kOrphanFinalizer)) {
    return Orphan(*ops, id, *obj);
  }
  if (obj->deleting && Has(obj->finalizers, api::kForegroundFinalizer)) {
    return Foreground(*ops, id, *obj);
  }
  if (obj->owners.empty()) return OkStatus();
  return AttemptToDelete(*ops, id, *obj);
}

Status Collector::Orphan(const KindOps& ops, const ObjectId& id, const State& obj) {
  // OBSERVATION: deleted with propagationPolicy Orphan: its dependents stay, without it.
  for (const auto& key : dependents_.Of(obj.uid)) {
    const ObjectId dep = ParseObjectKey(key);
    const KindOps* dep_ops = Ops(dep.api_version, dep.kind);
    if (!dep_ops) continue;
    auto err = dep_ops->edit(dep.ns, dep.name, [&](api::ObjectMeta& m) {
      return std::erase_if(m.owner_references, [&](const auto& r) { return r.uid == obj.uid; }) > 0;
    });
    if (err) return ApiStatus(*err);
  }
  auto err = ops.edit(id.ns, id.name, [&](api::ObjectMeta& m) {
    if (m.uid != obj.uid) return false;
    return std::erase(m.finalizers, std::string(api::kOrphanFinalizer)) > 0;
  });
  return err ? ApiStatus(*err) : OkStatus();
}

Status Collector::Foreground(const KindOps& ops, const ObjectId& id, const State& obj) {
  // OBSERVATION: deleted with propagationPolicy Foreground: it stays until the dependents
  // that block its deletion are gone; each dependent decides for itself (it may have another
  // owner that stays).
  bool blocked = false;
  for (const auto& key : dependents_.Of(obj.uid)) {
    auto ref = dependents_.Reference(key, obj.uid);
    if (ref && ref->block_owner_deletion.value_or(false)) blocked = true;
    Enqueue(key);
  }
  if (blocked) return OkStatus();  // each dependent's deletion brings it back
  auto err = ops.edit(id.ns, id.name, [&](api::ObjectMeta& m) {
    if (m.uid != obj.uid) return false;
    return std::erase(m.finalizers, std::string(api::kForegroundFinalizer)) > 0;
  });
  return err ? ApiStatus(*err) : OkStatus();
}

Status Collector::AttemptToDelete(const KindOps& ops, const ObjectId& id, const State& obj) {
  std::vector<std::string> solid, dangling, waiting;  // owner uids
  for (const auto& ref : obj.owners) {
    const KindOps* owner_ops = Ops(ref.api_version, ref.kind);
    if (!owner_ops) {
      solid.push_back(ref.uid);  // a kind not served here: nothing tells it is gone
      continue;
    }
    KVOL_ASSIGN_OR_RETURN(std::optional<State> owner,
                          Read(*owner_ops, owner_ops->namespaced ? id.ns : "", ref.name));
    if (!owner || owner->uid != ref.uid) {
      dangling.push_back(ref.uid);
    } else if (owner->deleting && Has(owner->finalizers, api::kForegroundFinalizer)) {
      waiting.push_back(ref.uid);
    } else {
      solid.push_back(ref.uid);
    }
  }
  if (!solid.empty()) {
    // OBSERVATION: an owner stays: only the references to owners gone or going go.
    if (dangling.empty() && waiting.empty()) return OkStatus();
    auto err = ops.edit(id.ns, id.name, [&](api::ObjectMeta& m) {
      if (m.uid != obj.uid) return false;
      return std::erase_if(m.owner_references, [&](const auto& r) {
               return Has(dangling, r.uid) || Has(waiting, r.uid);
             }) > 0;
    });
    return err ? ApiStatus(*err) : OkStatus();
  }
  // OBSERVATION: no owner stays: the object goes, its own dependents first if an owner waits
  // for them.
  if (obj.deleting) return OkStatus();
  api::DeleteOptions opts;
  opts.precondition_uid = obj.uid;
  opts.propagation_policy =
      !waiting.empty() && !dependents_.Of(obj.uid).empty() ? "Foreground" : "Background";
  auto err = ops.remove(id.ns, id.name, opts);
  return err ? ApiStatus(*err) : OkStatus();
}

Status Collector::Start(std::chrono::milliseconds sync_timeout) {
  queue_ = std::make_unique<client::WorkQueue>(
      *options_.clock, client::WorkQueueOptions{.name = "garbage_collector_attempt_to_delete"});
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  std::vector<std::function<bool()>> synced;
  api::ForEachKind([&]<class T>(std::type_identity<T>) {
    if constexpr (!std::is_same_v<T, api::Event>) {
      auto& informer = informers_->Handle<T>(
          {.on_add = [this](const auto& obj) { Observe(*obj); },
           .on_update = [this](const auto&, const auto& obj) { Observe(*obj); },
           .on_delete = [this](const auto& obj) { ObserveDeleted(*obj); }});
      informer.Start();
      synced.push_back([&informer, sync_timeout] { return informer.WaitForSync(sync_timeout); });
    }
  });
  for (const auto& wait : synced) {
    if (!wait()) {
      Stop();
      return UnavailableError("garbage collector: caches did not fill in time");
    }
  }
  workers_.Start(
      *queue_, options_.workers, "gc", [this](const std::string& key) { return Sync(key); },
      "garbage-collector");
  return OkStatus();
}

void Collector::Stop() {
  if (informers_) informers_->Stop();
  workers_.Stop();
  informers_.reset();
}

}  // namespace kvol::controller::garbagecollector
