// The set of registries and cluster-wide admission lookups.
#include "apiserver/api.h"

#include <condition_variable>
#include <mutex>
#include <random>
#include <set>

#include "api/well_known.h"
#include "apiserver/errors.h"
#include "apiserver/request_metrics.h"
#include "apiserver/service_account_token.h"

namespace kvol::apiserver {

Api::Api(store::Store& store, os::Clock& clock) : store_(store), clock_(clock) {
  std::apply(
      [&](auto&... r) {
        ((r = std::make_unique<typename std::remove_reference_t<decltype(r)>::element_type>(
              store_, clock_, *this)),
         ...);
      },
      registries_);
}

void Api::SetServiceAccountTokens(std::unique_ptr<ServiceAccountTokens> tokens) {
  tokens_ = std::move(tokens);
}

Api::~Api() {
  Stop();
  if (storage_objects_) storage_objects_->Detach();
}

std::vector<ApiOr<api::AnySharedObject>> Api::UpdateTogether(
    std::vector<api::ObjectUpdate> updates) {
  const size_t n = updates.size();
  std::vector<std::optional<ApiOr<api::AnySharedObject>>> answers(n);
  std::vector<store::Write> batch;
  std::vector<std::function<ApiOr<api::AnySharedObject>(const StatusOr<store::Revision>&)>> finish;
  std::vector<size_t> slots;          // the update each write is for
  std::vector<int> write_of(n, -1);   // the write each update made, if any
  std::vector<std::string> names(n);  // "<resource> \"<name>\"", for messages
  for (size_t i = 0; i < n; ++i) {
    api::ObjectUpdate& u = updates[i];
    const api::KindInfo& kind = std::visit(
        [](const auto& obj) -> const api::KindInfo& {
          return api::KindInfoOf<std::decay_t<decltype(obj)>>();
        },
        u.object);
    const api::ObjectMeta& meta = api::MetaOf(u.object);
    names[i] = std::string(kind.resource) + " \"" + meta.name + "\"";
    const int a = u.after;
    if (a >= static_cast<int>(i)) {
      answers[i] = BadRequest(names[i] + ": an update can follow only an earlier one, not " +
                              std::to_string(a));
      continue;
    }
    if (a >= 0 && !answers[a]->ok()) {
      answers[i] = Conflict(kind, meta.name,
                            "not updated: the update of " + names[a] +
                                " it follows failed: " + answers[a]->error().message);
      continue;
    }
    if (a >= 0 && meta.resource_version.empty()) {
      answers[i] = BadRequest(names[i] +
                              ": an update made after another needs "
                              "metadata.resourceVersion");
      continue;
    }
    PreparedTogether p = std::visit(
        [&](auto& obj) {
          using T = std::decay_t<decltype(obj)>;
          return registry<T>().PrepareTogether(std::move(obj), u.main, u.status);
        },
        u.object);
    // Answered at once, or to be answered once the batch is written: an update it follows
    // finds its answer there, and its write's index.
    answers[i] =
        p.answer ? *std::move(p.answer) : ApiOr<api::AnySharedObject>(api::AnySharedObject());
    if (p.answer) continue;
    p.write.after = a >= 0 ? write_of[a] : -1;
    write_of[i] = static_cast<int>(batch.size());
    batch.push_back(std::move(p.write));
    finish.push_back(std::move(p.finish));
    slots.push_back(i);
  }
  if (!batch.empty()) {
    auto revs = store_.WriteMany(std::move(batch));
    for (size_t j = 0; j < slots.size(); ++j) answers[slots[j]] = finish[j](revs[j]);
  }
  std::vector<ApiOr<api::AnySharedObject>> out;
  out.reserve(n);
  for (auto& a : answers) out.push_back(*std::move(a));
  return out;
}

Status Api::Start() {
  Status result;
  std::apply([&](auto&... r) { ((result.ok() ? (result = r->Start(), 0) : 0), ...); }, registries_);
  KVOL_RETURN_IF_ERROR(result);
  if (!storage_objects_) {
    storage_objects_ =
        std::make_shared<metrics::Collector>([this] { return StorageObjectFamilies(*this); });
    metrics::AddCollector(storage_objects_);
  }
  for (std::string_view name : api::kSystemNamespaces) {
    api::Namespace ns;
    ns.metadata.name = name;
    auto created = registry<api::Namespace>().Create(ns, "");
    if (!created.ok() && created.error().reason != "AlreadyExists") {
      return UnavailableError("creating namespace " + std::string(name) + ": " +
                              created.error().message);
    }
  }
  return OkStatus();
}

void Api::Stop() {
  std::apply([](auto&... r) { ((r ? r->Stop() : void()), ...); }, registries_);
}

void Api::ForEachResource(const std::function<void(Resource&)>& f) {
  std::apply([&](auto&... r) { (f(*r), ...); }, registries_);
}

Resource* Api::Find(std::string_view group, std::string_view version, std::string_view resource) {
  Resource* found = nullptr;
  std::apply(
      [&](auto&... r) {
        ((found == nullptr && r->info().group == group && r->info().version == version &&
                  r->info().resource == resource
              ? (found = r.get(), 0)
              : 0),
         ...);
      },
      registries_);
  return found;
}

std::optional<ApiError> Api::CheckNamespace(std::string_view ns) {
  // A read of the store, not of the namespace cache: it sees a namespace created just before,
  // without waiting for the cache to catch up with every other write since.
  auto& reg = registry<api::Namespace>();
  auto stored = reg.GetStored("", ns);
  if (!stored.ok()) {
    if (api::IsNotFound(stored.error())) return NamespaceNotFound(ns);
    return stored.error();
  }
  auto obj = reg.DecodeShared(*stored);
  if (!obj.ok()) return obj.error();
  if ((*obj)->status.phase == "Terminating") {
    return Forbidden("unable to create new content in namespace " + std::string(ns) +
                     " because it is being terminated");
  }
  return std::nullopt;
}

ApiOr<std::shared_ptr<const api::ServiceAccount>> Api::FindServiceAccount(std::string_view ns,
                                                                         std::string_view name) {
  auto& reg = registry<api::ServiceAccount>();
  // Kubernetes' admission looks for "default" ten times, 100-200 ms apart, and for any other
  // account once.
  const int looks = name == "default" ? 10 : 1;
  thread_local std::minstd_rand random(std::random_device{}());
  const auto pause = std::chrono::milliseconds(100 + random() % 100);
  std::mutex mu;
  std::condition_variable cv;
  for (int look = 1;; ++look) {
    auto stored = reg.GetStored(ns, name);
    if (stored.ok()) return reg.DecodeShared(*stored);
    if (!api::IsNotFound(stored.error()) || look == looks) return stored.error();
    std::unique_lock lock(mu);
    clock_.WaitFor(cv, lock, pause);
  }
}

bool Api::AllowsVolumeExpansion(std::string_view name) {
  auto sc = registry<api::StorageClass>().Get("", name);
  return sc.ok() && sc->allow_volume_expansion.value_or(false);
}

std::optional<ApiError> Api::AdmitQuota(std::string_view ns, std::string_view name,
                                        const std::function<api::QuotaItem()>& item_of,
                                        bool dry_run) {
  auto& reg = registry<api::ResourceQuota>();
  // The namespace's quotas read from the store, as Kubernetes' admission looks them up live when
  // its informer has none: a quota created just before is enforced, and a create does not wait
  // for the quota cache to catch up with writes of other kinds (a consistent read of the cache
  // would). A charge is written with the quota's resourceVersion, so a quota that changes
  // meanwhile costs a retry, not a miscount. The first kMaxQuotasRead of a namespace count.
  constexpr int64_t kMaxQuotasRead = 1000;
  api::ListOptions live;
  live.limit = kMaxQuotasRead;
  auto listed = reg.List(ns, live, nullptr);
  if (!listed.ok()) return listed.error();
  if (listed->empty()) return std::nullopt;
  const api::QuotaItem item = item_of();
  std::lock_guard lock(quota_mu_);
  std::vector<api::ResourceQuota> quotas = std::move(*listed);
  std::set<std::string> charged;  // quotas already charged with this object
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::vector<api::ResourceQuota> charges;
    for (auto& q : quotas) {
      if (charged.count(q.metadata.name) || !api::QuotaMatches(q, item)) continue;
      auto d = api::CheckQuota(q, item);
      if (d.refusal) {
        return Forbidden(item.resource + " \"" + std::string(name) +
                         "\" is forbidden: " + *d.refusal);
      }
      if (d.used) {
        q.status.used = *std::move(d.used);
        charges.push_back(std::move(q));
      }
    }
    if (dry_run || charges.empty()) return std::nullopt;
    std::vector<std::string> moved_on;  // updated by someone else since they were read
    for (auto& q : charges) {
      auto updated = reg.Update(q, /*status=*/true);
      if (updated.ok()) {
        charged.insert(q.metadata.name);
      } else if (updated.error().code == 409) {
        moved_on.push_back(q.metadata.name);
      } else if (!api::IsNotFound(updated.error())) {
        return updated.error();
      }
    }
    if (moved_on.empty()) return std::nullopt;
    // Those read again from the store (the cache may lag behind), and checked again.
    quotas.clear();
    for (const auto& n : moved_on) {
      auto stored = reg.GetStored(ns, n);
      if (!stored.ok()) {
        if (api::IsNotFound(stored.error())) continue;
        return stored.error();
      }
      auto q = reg.DecodeTyped(*stored);
      if (!q.ok()) return q.error();
      quotas.push_back(*std::move(q));
    }
  }
  return Internal("resource quota evaluation timed out");
}

std::optional<std::string> Api::DefaultStorageClass() {
  auto& reg = registry<api::StorageClass>();
  auto classes = reg.List("", {}, nullptr);
  if (!classes.ok()) return std::nullopt;
  const api::StorageClass* best = nullptr;
  for (const auto& sc : *classes) {
    auto it = sc.metadata.annotations.find(std::string(kDefaultClassAnnotation));
    if (it == sc.metadata.annotations.end() || it->second != "true") continue;
    // Several defaults: the newest wins, as in Kubernetes.
    if (!best || sc.metadata.creation_timestamp > best->metadata.creation_timestamp ||
        (sc.metadata.creation_timestamp == best->metadata.creation_timestamp &&
         sc.metadata.name < best->metadata.name)) {
      best = &sc;
    }
  }
  if (!best) return std::nullopt;
  return best->metadata.name;
}

}  // namespace kvol::apiserver
