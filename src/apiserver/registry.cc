// Registry<T>: the generic API behaviour, instantiated for every kind kvol serves. This file has
// its storage and the typed operations (create, get, update, batches, delete); lists and watches
// are in registry_list_watch.cc, the JSON requests in registry_json.cc.
#include "apiserver/registry.h"

#include <algorithm>
#include <utility>

#include "api/node_selector.h"
#include "apiserver/registry_internal.h"

namespace kvol::apiserver {

using registry_internal::IndexObject;
using registry_internal::kConflictRetries;
using registry_internal::ParseRevision;

namespace {


template <class T>
std::shared_ptr<const T> Own(T&& obj) {
  return std::make_shared<const T>(std::move(obj));
}

// What the watch cache keeps of an object about to be written (json and rev are the cache's
// to fill in).
template <class T>
CachedObject IndexTyped(const T& obj) {
  CachedObject c;
  c.ns = obj.metadata.namespace_;
  c.name = obj.metadata.name;
  c.labels = obj.metadata.labels;
  c.fields = api::KindFields(obj);
  return c;
}

}  // namespace

std::string StoredObject::Json() const { return WithResourceVersion(*json, rev); }

template <class T>
Registry<T>::Registry(store::Store& store, os::Clock& clock, Cluster& cluster)
    : store_(store), clock_(clock), cluster_(cluster), memo_owner_(store::NewMemoOwner()) {
  cache_ = std::make_unique<WatchCache>(store_, StoragePrefix(info()), IndexObject<T>,
                                        WatchCache::kDefaultHistory,
                                        "watch-" + std::string(info().ShortName()));
}

template <class T>
Registry<T>::~Registry() {
  Stop();
}

template <class T>
Status Registry<T>::Start() {
  return cache_->Start();
}

template <class T>
void Registry<T>::Stop() {
  cache_->Stop();
}

template <class T>
api::Time Registry<T>::Now() const {
  return api::Time::FromTimePoint(clock_.Now());
}

template <class T>
std::string Registry<T>::Encode(T& obj) {
  // Stored without resourceVersion: it is the store's revision, spliced in on the way out.
  std::string rv;
  rv.swap(obj.metadata.resource_version);
  // Written into a buffer the thread keeps, then copied to a string of its own size: the text
  // is held for as long as the version is, and an encoder's spare capacity would double it.
  thread_local std::string buffer;
  buffer.clear();
  api::EncodeText(obj, buffer);
  rv.swap(obj.metadata.resource_version);
  std::string json(buffer);
  if (buffer.capacity() > (64 << 10)) buffer = std::string();  // not kept for a rare large one
  return json;
}

template <class T>
T Registry<T>::Written::Take() {
  // Nothing else can reach an object not memoized once this is its only owner.
  if (obj.use_count() == 1 && !memoized) return std::move(const_cast<T&>(*obj));
  return *obj;
}

template <class T>
ApiOr<T> Registry<T>::DecodeTyped(const StoredObject& o) {
  auto shared = DecodeShared(o);
  if (!shared.ok()) return shared.error();
  return T(**shared);
}

template <class T>
ApiOr<std::shared_ptr<const T>> Registry<T>::DecodeShared(const StoredObject& o) {
  std::string rv = std::to_string(o.rev);
  std::shared_ptr<const T> hit;
  {
    std::lock_guard lock(decoded_mu_);
    hit = FindDecoded(o.json);
    if (hit && hit->metadata.resource_version.empty()) {
      if (o.deleted) {
        hit = nullptr;  // its writer may still be setting it: parse instead
      } else {
        // Memoized by its writer and not handed out before: nobody else reads it yet, and
        // the revision that stored this value is its resourceVersion.
        const_cast<T&>(*hit).metadata.resource_version = rv;
      }
    }
    // Objects with a resourceVersion never change again: they are read outside the lock.
    if (hit && hit->metadata.resource_version == rv) return hit;
  }
  // Apart from its reference counts (see decoded_mu_ in the header).
  std::shared_ptr<T> out(hit ? new T(*hit) : new T());
  if (!hit) {
    if (!api::DecodeJsonText(*o.json, *out)) {
      auto j = api::ParseJson(*o.json);
      if (!j.ok()) return Internal("stored object does not parse: " + j.status().message());
      api::FieldErrors errs;
      *out = api::DecodeStruct<T>(*j, &errs);
      if (!errs.empty()) {
        return Internal("stored object does not decode: " + api::AggregateMessage(errs));
      }
    }
  }
  out->metadata.resource_version = std::move(rv);
  // Every reader of a stored value sees it at the revision that wrote it, except a deletion's
  // event (the last state, at the deleting revision): the copy with its version serves the
  // readers to come.
  if (!o.deleted) Memoize(o.json, out);
  return std::shared_ptr<const T>(std::move(out));
}

template <class T>
std::shared_ptr<const T> Registry<T>::FindDecoded(const store::Value& json) {
  // Each stored value is its key's, and each key is one registry's.
  if (json->memo_owner != memo_owner_) return nullptr;
  return std::static_pointer_cast<const T>(json->memo.lock());
}

template <class T>
void Registry<T>::Memoize(const store::Value& json, std::shared_ptr<const T> obj) {
  std::shared_ptr<const T> evicted;  // released after the lock
  std::lock_guard lock(decoded_mu_);
  json->memo = obj;
  json->memo_owner = memo_owner_;
  if (recent_.size() < kDecodedMemo) {
    recent_.push_back(std::move(obj));
    return;
  }
  evicted = std::exchange(recent_[recent_next_], std::move(obj));
  recent_next_ = (recent_next_ + 1) % kDecodedMemo;
}

template <class T>
std::shared_ptr<T> Registry<T>::MemoizeWritten(const store::Value& json, T obj) {
  // What a decode of `json` gives: the object as encoded, without a resourceVersion.
  obj.metadata.resource_version.clear();
  std::shared_ptr<T> shared(new T(std::move(obj)));
  Memoize(json, shared);
  return shared;
}

template <class T>
std::shared_ptr<const T> Registry<T>::WrittenAt(std::shared_ptr<T> obj, store::Revision rev) {
  std::lock_guard lock(decoded_mu_);
  // A reader of the write's event may have set it already, to the same revision.
  if (obj->metadata.resource_version.empty()) obj->metadata.resource_version = std::to_string(rev);
  return obj;
}

template <class T>
T Registry<T>::Unwritten(const store::Value& json, std::shared_ptr<T> obj) {
  std::lock_guard lock(decoded_mu_);
  // The value never reached the store, so no reader can have been handed the object (the
  // ring of recent ones keeps an empty shell of it).
  json->memo.reset();
  json->memo_owner = 0;
  return std::move(*obj);
}

template <class T>
ApiOr<typename Registry<T>::Written> Registry<T>::CreateImpl(T obj, std::string_view ns,
                                                             const WriteOptions& opts) {
  const auto& k = info();
  auto& m = obj.metadata;
  if (k.namespaced) {
    if (m.namespace_.empty()) {
      m.namespace_ = std::string(ns);
    } else if (!ns.empty() && m.namespace_ != ns) {
      return BadRequest(
          "the namespace of the provided object does not match the namespace sent on the request");
    }
    if (m.namespace_.empty())
      return BadRequest("a namespace is required to create " + std::string(k.resource));
    if (auto err = cluster_.CheckNamespace(m.namespace_)) return *err;
  } else {
    m.namespace_.clear();
  }
  obj.api_version = k.ApiVersion();
  obj.kind = std::string(k.kind);
  const bool generated = m.name.empty() && !m.generate_name.empty();
  const api::Time now = Now();
  m.uid = NewUid();
  m.creation_timestamp = api::Time::FromUnixSeconds(now.unix_seconds());
  m.resource_version.clear();
  m.generation = HasSpec<T> ? 1 : 0;
  m.deletion_timestamp.reset();
  m.deletion_grace_period_seconds.reset();
  PrepareForCreate(obj, now);
  api::SetDefaults(obj);
  if (auto refused = AdmitCreate(obj, cluster_)) return *std::move(refused);

  for (int attempt = 0;; ++attempt) {
    if (generated) {
      std::string base = m.generate_name.substr(0, 58);
      m.name = base + RandomSuffix();
    }
    api::FieldErrors errs = api::Validate(obj);
    if (!errs.empty())
      return Invalid(k, m.name.empty() ? m.generate_name : m.name, std::move(errs));
    if (attempt == 0 && k.namespaced) {
      auto refused = cluster_.AdmitQuota(
          m.namespace_, m.name, [&] { return api::QuotaItemOf(obj); }, opts.dry_run);
      if (refused) return *std::move(refused);
    }
    std::string json = Encode(obj);
    StoredObject stored{store::MakeValue(std::move(json)), 0};
    if (opts.dry_run) return Written{Own(std::move(obj)), std::move(stored)};
    const std::string key = StorageKey(k, m.namespace_, m.name);
    cache_->Prime(stored.json, IndexTyped(obj));
    auto shared = MemoizeWritten(stored.json, std::move(obj));
    auto rev = store_.Create(key, stored.json);
    if (rev.ok()) {
      stored.rev = *rev;
      return Written{WrittenAt(std::move(shared), *rev), std::move(stored), true};
    }
    cache_->Unprime(stored.json);
    obj = Unwritten(stored.json, std::move(shared));
    if (rev.status().code() == StatusCode::kAlreadyExists) {
      if (generated && attempt < 3) continue;
      return AlreadyExists(k, m.name);
    }
    return FromStatus(rev.status());
  }
}

template <class T>
ApiOr<StoredObject> Registry<T>::GetStored(std::string_view ns, std::string_view name) {
  const auto& k = info();
  auto kv = store_.Get(StorageKey(k, ns, name));
  if (!kv.ok()) {
    if (kv.status().code() == StatusCode::kNotFound) return NotFound(k, name);
    return FromStatus(kv.status());
  }
  return StoredObject{kv->value, kv->mod_revision};
}

template <class T>
std::optional<ApiError> Registry<T>::CheckUpdateTarget(T& obj, std::string_view ns,
                                                       std::string_view name) {
  const auto& k = info();
  if (obj.metadata.name.empty()) obj.metadata.name = std::string(name);
  if (obj.metadata.name != name) {
    return BadRequest("the name of the object (" + obj.metadata.name +
                      ") does not match the name on the URL (" + std::string(name) + ")");
  }
  if (k.namespaced) {
    if (obj.metadata.namespace_.empty()) obj.metadata.namespace_ = std::string(ns);
    if (obj.metadata.namespace_ != ns) {
      return BadRequest(
          "the namespace of the provided object does not match the namespace sent on the request");
    }
  } else {
    obj.metadata.namespace_.clear();
  }
  const std::string& precondition = obj.metadata.resource_version;
  if (!precondition.empty() && !ParseRevision(precondition)) {
    return Invalid(k, name,
                   {api::Invalid(api::Path("metadata").Child("resourceVersion"), precondition,
                                 "must be a valid resource version")});
  }
  return std::nullopt;
}

template <class T>
typename Registry<T>::UpdateStep Registry<T>::PrepareUpdate(T next, const std::string& key,
                                                            std::string_view name, Parts parts,
                                                            const WriteOptions& opts,
                                                            const std::string& precondition) {
  const auto& k = info();
  UpdateStep step;
  auto kv = store_.Get(key);
  if (!kv.ok()) {
    if (kv.status().code() == StatusCode::kNotFound) return Answered(NotFound(k, name));
    return Answered(FromStatus(kv.status()));
  }
  if (!precondition.empty() && precondition != std::to_string(kv->mod_revision)) {
    return Answered(ObjectModified(k, name));
  }
  StoredObject current{kv->value, kv->mod_revision};
  auto shared_old = DecodeShared(current);
  if (!shared_old.ok()) return Answered(shared_old.error());
  const T& old = **shared_old;
  const api::Time now = Now();
  if constexpr (HasStatus<T>) {
    if (parts == Parts::kMainAndStatus || parts == Parts::kWhole) {
      auto status = std::move(next.status);
      PrepareForUpdate(next, old, false, now);
      next.status = std::move(status);
    } else {
      PrepareForUpdate(next, old, parts == Parts::kStatus, now);
    }
  } else {
    PrepareForUpdate(next, old, parts == Parts::kStatus, now);
  }
  if (parts == Parts::kMain || parts == Parts::kMainAndStatus) PrepareForMainUpdate(next, old);
  api::SetDefaults(next);
  AfterUpdate(next, old, now);
  api::FieldErrors errs =
      parts == Parts::kWhole ? api::Validate(next) : api::ValidateUpdate(next, old);
  if (!errs.empty()) return Answered(Invalid(k, name, std::move(errs)));
  if (parts != Parts::kStatus) {
    if (auto refused = AdmitUpdate(next, old, cluster_)) return Answered(*std::move(refused));
    // A claim that asks for more storage, or a service that becomes a load balancer or takes
    // more node ports, is charged the growth (a claim's only when its requests change: claims
    // are updated often, and mostly otherwise).
    if constexpr (std::is_same_v<T, api::PersistentVolumeClaim> ||
                  std::is_same_v<T, api::Service>) {
      bool may_grow = true;
      if constexpr (std::is_same_v<T, api::PersistentVolumeClaim>) {
        may_grow = next.spec.resources.requests != old.spec.resources.requests;
      }
      api::QuotaItem growth;
      if (may_grow) growth = api::QuotaGrowth(api::QuotaItemOf(next), api::QuotaItemOf(old));
      if (!growth.usage.empty()) {
        auto refused = cluster_.AdmitQuota(
            next.metadata.namespace_, name, [&] { return growth; }, opts.dry_run);
        if (refused) return Answered(*std::move(refused));
      }
    }
  }

  // The last finalizer removed from an object being deleted (and not waiting out a grace
  // period): it goes now.
  if (next.metadata.deletion_timestamp && !HeldForDeletion(next) &&
      next.metadata.deletion_grace_period_seconds.value_or(0) == 0) {
    if (opts.dry_run) return Answered(Written{Own(std::move(next)), current});
    auto rev = store_.Delete(key, kv->mod_revision);
    if (rev.ok()) {
      StoredObject gone{store::MakeValue(Encode(next)), *rev, true};
      next.metadata.resource_version = std::to_string(*rev);
      return Answered(Written{Own(std::move(next)), std::move(gone)});
    }
    if (rev.status().code() == StatusCode::kAborted) {
      if (!precondition.empty()) return Answered(ObjectModified(k, name));
      step.retry = true;
      return step;
    }
    if (rev.status().code() == StatusCode::kNotFound) return Answered(NotFound(k, name));
    return Answered(FromStatus(rev.status()));
  }

  std::string json = Encode(next);
  if (json == *kv->value && !opts.dry_run) {  // nothing changed: no write, same version
    // The stored object answers, shared as any reader of it gets it.
    return Answered(Written{*std::move(shared_old), std::move(current), true});
  }
  if (opts.dry_run) {
    next.metadata.resource_version = std::to_string(kv->mod_revision);
    return Answered(Written{Own(std::move(next)),
                            StoredObject{store::MakeValue(std::move(json)), kv->mod_revision}});
  }
  step.write.key = key;
  step.write.stored = StoredObject{store::MakeValue(std::move(json)), 0};
  step.write.expected = kv->mod_revision;
  cache_->Prime(step.write.stored.json, IndexTyped(next));
  step.write.obj = MemoizeWritten(step.write.stored.json, std::move(next));
  return step;
}

template <class T>
std::optional<ApiOr<typename Registry<T>::Written>> Registry<T>::FinishUpdate(
    PreparedUpdate write, const StatusOr<store::Revision>& rev, std::string_view name,
    bool conditional) {
  if (rev.ok()) {
    write.stored.rev = *rev;
    return Written{WrittenAt(std::move(write.obj), *rev), std::move(write.stored), true};
  }
  cache_->Unprime(write.stored.json);
  Unwritten(write.stored.json, std::move(write.obj));
  const auto& k = info();
  if (rev.status().code() == StatusCode::kAborted) {
    if (conditional) return ObjectModified(k, name);
    return std::nullopt;  // an unconditional update retries on the new version
  }
  if (rev.status().code() == StatusCode::kNotFound) return NotFound(k, name);
  return FromStatus(rev.status());
}

template <class T>
ApiOr<typename Registry<T>::Written> Registry<T>::UpdateImpl(T obj, std::string_view ns,
                                                             std::string_view name, Parts parts,
                                                             const WriteOptions& opts) {
  if (auto bad = CheckUpdateTarget(obj, ns, name)) return *std::move(bad);
  const std::string precondition = obj.metadata.resource_version;
  const std::string key = StorageKey(info(), obj.metadata.namespace_, name);
  for (int attempt = 0; attempt < kConflictRetries; ++attempt) {
    // An update with a resourceVersion is tried once: it can have the object itself.
    UpdateStep step = PrepareUpdate(precondition.empty() ? obj : std::move(obj), key, name, parts,
                                    opts, precondition);
    if (step.retry) continue;
    if (step.answer) return *std::move(step.answer);
    auto rev = store_.Update(key, step.write.stored.json, step.write.expected);
    if (auto done = FinishUpdate(std::move(step.write), rev, name, !precondition.empty())) {
      return *std::move(done);
    }
  }
  return ObjectModified(info(), name);
}

template <class T>
std::vector<ApiOr<std::shared_ptr<const T>>> Registry<T>::UpdateSharedMany(
    std::vector<T> objs, bool main, bool status, const WriteOptions& opts) {
  auto written = UpdateMany(objs, PartsOfShared(main, status), opts);
  std::vector<ApiOr<std::shared_ptr<const T>>> out;
  out.reserve(written.size());
  for (auto& w : written) out.push_back(SharedOf(std::move(w)));
  return out;
}

template <class T>
typename Registry<T>::UpdateStep Registry<T>::PrepareBatched(T& obj, Parts parts,
                                                             const WriteOptions& opts) {
  if (obj.metadata.resource_version.empty() || opts.dry_run) {
    // Unconditional updates retry their conflicts; dry runs write nothing.
    return Answered(UpdateTyped(std::move(obj), parts, opts));
  }
  const std::string ns = obj.metadata.namespace_;
  const std::string name = obj.metadata.name;
  if (auto bad = CheckUpdateTarget(obj, ns, name)) return Answered(*std::move(bad));
  const std::string precondition = obj.metadata.resource_version;
  return PrepareUpdate(std::move(obj), StorageKey(info(), ns, name), name, parts, opts,
                       precondition);
}

template <class T>
template <class Objects>
std::vector<ApiOr<typename Registry<T>::Written>> Registry<T>::UpdateMany(
    Objects& objs, Parts parts, const WriteOptions& opts) {
  std::vector<std::optional<ApiOr<Written>>> answers(objs.size());
  std::vector<PreparedUpdate> writes;
  std::vector<size_t> slots;  // the object each write is for
  for (size_t i = 0; i < objs.size(); ++i) {
    T* item;
    if constexpr (std::is_same_v<typename Objects::value_type, T>) {
      item = &objs[i];
    } else {
      if (!objs[i].ok()) {
        answers[i] = objs[i].error();
        continue;
      }
      item = &*objs[i];
    }
    UpdateStep step = PrepareBatched(*item, parts, opts);
    if (step.answer) {
      answers[i] = *std::move(step.answer);
      continue;
    }
    writes.push_back(std::move(step.write));
    slots.push_back(i);
  }
  if (!writes.empty()) {
    std::vector<store::Write> batch;
    batch.reserve(writes.size());
    for (const auto& w : writes) {
      batch.push_back({store::Write::Kind::kUpdate, w.key, w.stored.json, w.expected});
    }
    auto revs = store_.WriteMany(std::move(batch));
    for (size_t j = 0; j < writes.size(); ++j) {
      const std::string name = writes[j].obj->metadata.name;
      // Conditional: never asks for another attempt.
      answers[slots[j]] = *FinishUpdate(std::move(writes[j]), revs[j], name, true);
    }
  }
  std::vector<ApiOr<Written>> out;
  out.reserve(answers.size());
  for (auto& a : answers) out.push_back(*std::move(a));
  return out;
}

template <class T>
PreparedTogether Registry<T>::PrepareTogether(T obj, bool main, bool status) {
  PreparedTogether out;
  UpdateStep step = PrepareBatched(obj, PartsOfShared(main, status), {});
  if (step.answer) {
    out.answer = api::ToAny(SharedOf(*std::move(step.answer)));
    return out;
  }
  out.write = {store::Write::Kind::kUpdate, step.write.key, step.write.stored.json,
               step.write.expected};
  auto prepared = std::make_shared<PreparedUpdate>(std::move(step.write));
  out.finish = [this,
                prepared](const StatusOr<store::Revision>& rev) -> ApiOr<api::AnySharedObject> {
    const std::string name = prepared->obj->metadata.name;
    // Conditional: never asks for another attempt.
    return api::ToAny(SharedOf(*FinishUpdate(std::move(*prepared), rev, name, true)));
  };
  return out;
}

template <class T>
ApiOr<typename Registry<T>::Written> Registry<T>::DeleteImpl(std::string_view ns,
                                                             std::string_view name,
                                                             const DeleteOptions& opts) {
  const auto& k = info();
  const std::string key = StorageKey(k, ns, name);
  for (int attempt = 0; attempt < kConflictRetries; ++attempt) {
    auto kv = store_.Get(key);
    if (!kv.ok()) {
      if (kv.status().code() == StatusCode::kNotFound) return NotFound(k, name);
      return FromStatus(kv.status());
    }
    StoredObject current{kv->value, kv->mod_revision};
    auto old = DecodeTyped(current);
    if (!old.ok()) return old.error();
    if (opts.precondition_uid && *opts.precondition_uid != old->metadata.uid) {
      return Conflict(k, name,
                      "Precondition failed: UID in precondition: " + *opts.precondition_uid +
                          ", UID in object meta: " + old->metadata.uid);
    }
    if (opts.precondition_resource_version &&
        *opts.precondition_resource_version != std::to_string(kv->mod_revision)) {
      return Conflict(k, name,
                      "Precondition failed: ResourceVersion in precondition: " +
                          *opts.precondition_resource_version +
                          ", ResourceVersion in object meta: " + std::to_string(kv->mod_revision));
    }
    if (auto refused = AdmitDelete(*old)) return *std::move(refused);
    // The object stays, marked as being deleted, while its grace period runs (until whoever
    // finishes it deletes it again with none; a second delete may only shorten the wait),
    // while finalizers hold it, or, for a kind deleted in two steps, until a second delete.
    const auto& meta = old->metadata;
    const std::optional<int64_t> grace = GracefulDeletion(*old, opts);
    const int64_t marked =
        meta.deletion_timestamp ? meta.deletion_grace_period_seconds.value_or(0) : -1;
    std::optional<int64_t> mark;  // the grace period to mark it with
    bool keep = false;            // already marked as it should be
    // Orphan and Foreground propagation: the garbage collector's finalizer holds the object
    // until it has dealt with its dependents.
    const std::string_view collect = CollectorFinalizer(opts);
    const bool add_collect = !collect.empty() && !HasFinalizer(meta, collect);
    if (grace) {
      if (marked < 0 || (marked > 0 && *grace < marked)) {
        mark = *grace;
      } else {
        keep = true;
      }
    } else if (HeldForDeletion(*old) || add_collect ||
               (DeletesInTwoSteps(*old) && !meta.deletion_timestamp)) {
      if (marked != 0) {
        mark = 0;
      } else {
        keep = true;
      }
    }
    if (keep && !add_collect) return Written{Own(std::move(*old)), current};
    if (mark || add_collect) {
      T next = *old;
      if (mark) {
        const api::Time now = Now();
        next.metadata.deletion_timestamp = api::Time::FromUnixSeconds(now.unix_seconds() + *mark);
        next.metadata.deletion_grace_period_seconds = *mark;
        MarkDeleting(next);
      }
      if (add_collect) {
        // The two policies exclude each other: the one asked for last wins.
        auto& f = next.metadata.finalizers;
        std::erase_if(f, [](const std::string& x) {
          return x == api::kOrphanFinalizer || x == api::kForegroundFinalizer;
        });
        f.emplace_back(collect);
      }
      std::string json = Encode(next);
      StoredObject stored{store::MakeValue(std::move(json)), 0};
      if (opts.dry_run) return Written{Own(std::move(next)), std::move(stored)};
      cache_->Prime(stored.json, IndexTyped(next));
      auto shared = MemoizeWritten(stored.json, std::move(next));
      auto rev = store_.Update(key, stored.json, kv->mod_revision);
      if (rev.ok()) {
        stored.rev = *rev;
        return Written{WrittenAt(std::move(shared), *rev), std::move(stored), true};
      }
      cache_->Unprime(stored.json);
      Unwritten(stored.json, std::move(shared));
      if (rev.status().code() == StatusCode::kAborted) continue;
      if (rev.status().code() == StatusCode::kNotFound) return NotFound(k, name);
      return FromStatus(rev.status());
    }
    if (opts.dry_run) return Written{Own(std::move(*old)), current};
    auto rev = store_.Delete(key, kv->mod_revision);
    if (rev.ok()) {
      current.rev = *rev;
      current.deleted = true;
      old->metadata.resource_version = std::to_string(*rev);
      return Written{Own(std::move(*old)), std::move(current)};
    }
    if (rev.status().code() == StatusCode::kAborted) continue;
    if (rev.status().code() == StatusCode::kNotFound) return NotFound(k, name);
    return FromStatus(rev.status());
  }
  return ObjectModified(k, name);
}

namespace {

// The body of a PUT on a collection: a list of the kind's objects.
template <class T>
struct UpdateListBody {
  std::string api_version;
  std::string kind;
  std::vector<T> items;
  KVOL_FIELDS(UpdateListBody) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("items", s.items);
  }
};

}  // namespace

template <class T>
ApiOr<std::vector<ApiOr<StoredObject>>> Registry<T>::UpdateManyJsonText(std::string_view ns,
                                                                        std::string_view body,
                                                                        bool main, bool status,
                                                                        const WriteOptions& opts) {
  const auto& k = info();
  std::vector<ApiOr<T>> objs;
  std::vector<std::vector<std::string>> warnings;
  UpdateListBody<T> fast;
  if (api::DecodeJsonText(body, fast)) {
    if (!fast.kind.empty() && fast.kind != std::string(k.kind) + "List" && fast.kind != "List") {
      return BadRequest("kind: Invalid value: \"" + fast.kind + "\": the body must be a " +
                        std::string(k.kind) + "List");
    }
    warnings.resize(fast.items.size());
    objs.reserve(fast.items.size());
    for (size_t i = 0; i < fast.items.size(); ++i) {
      objs.push_back(CheckBody(std::move(fast.items[i]), opts, &warnings[i]));
    }
  } else {
    auto j = api::ParseJson(body);
    if (!j.ok()) return BadRequest("error decoding the request body: " + j.status().message());
    if (!j->is_object()) return BadRequest("the request body must be a JSON object");
    auto kind = j->find("kind");
    if (kind != j->end() &&
        (!kind->is_string() || (*kind != std::string(k.kind) + "List" && *kind != "List"))) {
      return BadRequest("kind: Invalid value: " + api::JsonValueForError(*kind) +
                        ": the body must be a " + std::string(k.kind) + "List");
    }
    auto items = j->find("items");
    if (items == j->end() || !items->is_array()) {
      return BadRequest("items: Required value: the list of objects to write");
    }
    warnings.resize(items->size());
    objs.reserve(items->size());
    for (size_t i = 0; i < items->size(); ++i) {
      objs.push_back(DecodeBody((*items)[i], opts, &warnings[i]));
    }
  }
  for (auto& obj : objs) {
    if (!obj.ok()) continue;
    // Each item names itself; a namespace on the path is the only one allowed.
    if (k.namespaced) {
      if (obj->metadata.namespace_.empty()) obj->metadata.namespace_ = std::string(ns);
      if (obj->metadata.namespace_.empty()) {
        obj = BadRequest("metadata.namespace: Required value: the item names no namespace");
      } else if (!ns.empty() && obj->metadata.namespace_ != ns) {
        obj = BadRequest(
            "the namespace of the provided object does not match the namespace "
            "sent on the request");
      }
    }
    if (obj.ok() && obj->metadata.name.empty()) {
      obj = BadRequest("metadata.name: Required value: the item names no object");
    }
  }
  auto written = UpdateMany(objs, PartsOfShared(main, status), opts);
  std::vector<ApiOr<StoredObject>> out;
  out.reserve(written.size());
  for (size_t i = 0; i < written.size(); ++i) {
    if (!written[i].ok()) {
      out.push_back(written[i].error());
      continue;
    }
    written[i]->stored.warnings = std::move(warnings[i]);
    out.push_back(std::move(written[i]->stored));
  }
  return out;
}

// ---- typed API ----

template <class T>
ApiOr<T> Registry<T>::Create(T obj, std::string_view ns, const WriteOptions& opts) {
  auto w = CreateImpl(std::move(obj), ns, opts);
  if (!w.ok()) return w.error();
  return w->Take();
}

template <class T>
ApiOr<std::shared_ptr<const T>> Registry<T>::CreateShared(T obj, std::string_view ns,
                                                          const WriteOptions& opts) {
  return SharedOf(CreateImpl(std::move(obj), ns, opts));
}

template <class T>
ApiOr<T> Registry<T>::Get(std::string_view ns, std::string_view name) {
  auto s = GetStored(ns, name);
  if (!s.ok()) return s.error();
  return DecodeTyped(*s);
}

template <class T>
ApiOr<typename Registry<T>::Written> Registry<T>::UpdateTyped(T obj, Parts parts,
                                                              const WriteOptions& opts) {
  const std::string ns = obj.metadata.namespace_;
  const std::string name = obj.metadata.name;
  return UpdateImpl(std::move(obj), ns, name, parts, opts);
}

template <class T>
ApiOr<T> Registry<T>::Update(T obj, bool status, const WriteOptions& opts) {
  auto w = UpdateTyped(std::move(obj), PartsOf(status), opts);
  if (!w.ok()) return w.error();
  return w->Take();
}

template <class T>
ApiOr<T> Registry<T>::UpdateWithStatus(T obj, const WriteOptions& opts) {
  auto w = UpdateTyped(std::move(obj), has_status() ? Parts::kMainAndStatus : Parts::kMain, opts);
  if (!w.ok()) return w.error();
  return w->Take();
}

template <class T>
ApiOr<std::shared_ptr<const T>> Registry<T>::UpdateShared(T obj, bool main, bool status,
                                                          const WriteOptions& opts) {
  return SharedOf(UpdateTyped(std::move(obj), PartsOfShared(main, status), opts));
}

template <class T>
ApiOr<T> Registry<T>::Mutate(std::string_view ns, std::string_view name, bool status,
                             const std::function<bool(T&)>& mutate) {
  return MutateImpl(ns, name, PartsOf(status), mutate);
}

template <class T>
ApiOr<T> Registry<T>::MutateWhole(std::string_view ns, std::string_view name,
                                  const std::function<bool(T&)>& mutate) {
  return MutateImpl(ns, name, Parts::kWhole, mutate);
}

template <class T>
ApiOr<T> Registry<T>::MutateImpl(std::string_view ns, std::string_view name, Parts parts,
                                 const std::function<bool(T&)>& mutate) {
  for (int attempt = 0; attempt < kConflictRetries; ++attempt) {
    auto current = Get(ns, name);
    if (!current.ok()) return current.error();
    T next = *current;
    if (!mutate(next)) return current;
    auto w = UpdateImpl(std::move(next), ns, name, parts, {});
    if (w.ok()) return w->Take();
    if (w.error().reason != "Conflict") return w.error();
  }
  return ObjectModified(info(), name);
}

template <class T>
ApiOr<T> Registry<T>::Delete(std::string_view ns, std::string_view name,
                             const DeleteOptions& opts) {
  auto w = DeleteImpl(ns, name, opts);
  if (!w.ok()) return w.error();
  return w->Take();
}

template <class T>
ApiOr<std::vector<T>> Registry<T>::List(std::string_view ns, const ListOptions& opts,
                                        store::Revision* rev) {
  auto l = ListStored(ns, opts);
  if (!l.ok()) return l.error();
  std::vector<T> out;
  out.reserve(l->items.size());
  for (const auto& s : l->items) {
    auto t = DecodeTyped(s);
    if (!t.ok()) return t.error();
    out.push_back(*std::move(t));
  }
  if (rev) *rev = l->rev;
  return out;
}

// The members defined here, for every kind (those of the other registry*.cc are theirs).
#define KVOL_INSTANTIATE(T) template class Registry<T>;
KVOL_REGISTRY_KINDS(KVOL_INSTANTIATE)
#undef KVOL_INSTANTIATE

}  // namespace kvol::apiserver
