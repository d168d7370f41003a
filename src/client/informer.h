// Informer<T>: a local, always-current copy of one kind, as client-go's shared informer keeps
// it. It lists, then watches from the list's resourceVersion; when the watch ends it watches
// again from the last version seen, and when the server says that version is too old (410) it
// lists again, turning the difference into add/update/delete notifications. Readers get
// immutable shared objects from the cache, by key or through named indexes.
//
// Handlers run on the informer's own thread, in event order, after the cache has the change;
// they should be quick (typically: put a key on a WorkQueue). Handlers added to a running
// informer first get every cached object as an add, on the adding thread, and then every change
// after those: nothing is missed or seen twice. Once RemoveHandlers returns, they are not called
// again.
//
// SharedInformers keeps one informer per kind for all the controllers of a process, as
// client-go's shared informer factory does: each event is received and decoded once, and the
// server sends it once.
//
//   client::Informer<api::PersistentVolumeClaim> claims(c.resource<api::PersistentVolumeClaim>());
//   claims.AddHandlers({.on_add = [&](auto& pvc) { queue.Add(client::KeyOf(*pvc)); }});
//   claims.Start();
//   if (!claims.WaitForSync(30s)) return UnavailableError("claims did not sync");
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <ranges>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <typeindex>
#include <unordered_map>
#include <vector>

#include "base/log.h"
#include "base/string_map.h"
#include "base/thread.h"
#include "client/client.h"
#include "os/clock.h"

namespace kvol::client {

// "namespace/name" for namespaced objects, "name" otherwise: the key informers and work
// queues use.
template <class T>
std::string KeyOf(const T& obj) {
  if (obj.metadata.namespace_.empty()) return obj.metadata.name;
  return obj.metadata.namespace_ + "/" + obj.metadata.name;
}

// KeyOf written into `out`, reusing its storage, so that finding an object by its key
// allocates nothing.
template <class T>
const std::string& KeyInto(std::string& out, const T& obj) {
  out.assign(obj.metadata.namespace_);
  if (!out.empty()) out += '/';
  out += obj.metadata.name;
  return out;
}

// Whether KeyOf(a) sorts before KeyOf(b), as std::string compares them, without building
// either key.
template <class T>
bool KeyLess(const T& a, const T& b) {
  auto parts = [](const T& o) {
    const std::string_view ns = o.metadata.namespace_;
    return std::array<std::string_view, 3>{ns, ns.empty() ? "" : "/", o.metadata.name};
  };
  const auto pa = parts(a), pb = parts(b);
  return std::ranges::lexicographical_compare(
      pa | std::views::join, pb | std::views::join,
      [](char x, char y) { return static_cast<unsigned char>(x) < static_cast<unsigned char>(y); });
}

// The namespace and name of a key.
inline std::pair<std::string, std::string> SplitKey(std::string_view key) {
  size_t slash = key.find('/');
  if (slash == std::string_view::npos) return {std::string(), std::string(key)};
  return {std::string(key.substr(0, slash)), std::string(key.substr(slash + 1))};
}

struct InformerOptions {
  std::string ns;  // "" for every namespace
  std::string label_selector;
  std::string field_selector;
  os::Clock* clock = &os::RealClock();
  // Each watch asks the server to end it after a random time in [min, 2*min), spreading
  // re-watches out as client-go does.
  std::chrono::seconds min_watch_timeout{300};
  // How long a failing list or watch waits before trying again: doubling up to the maximum.
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{30'000};
};

// What SharedInformers needs of an informer of any kind.
class InformerBase {
 public:
  virtual ~InformerBase() = default;
  virtual void Stop() = 0;
};

template <class T>
class Informer : public InformerBase {
 public:
  using Ptr = std::shared_ptr<const T>;
  struct Handlers {
    std::function<void(const Ptr&)> on_add;
    std::function<void(const Ptr& old, const Ptr& now)> on_update;
    std::function<void(const Ptr&)> on_delete;  // the last state the informer knew
  };
  using HandlersId = uint64_t;
  using IndexFunc = std::function<std::vector<std::string>(const T&)>;

  explicit Informer(Resource<T>& resource, InformerOptions opts = {})
      : resource_(resource), opts_(std::move(opts)), clock_(*opts_.clock) {}
  ~Informer() override { Stop(); }
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Adds handlers; on a running informer they first get what is cached, as adds.
  HandlersId AddHandlers(Handlers h) {
    std::lock_guard notifying(notify_mu_);
    for (const Ptr& obj : List()) {
      if (h.on_add) h.on_add(obj);
    }
    handlers_.emplace_back(++last_handlers_id_, std::move(h));
    return last_handlers_id_;
  }
  // After this returns, the handlers are not called again (call it from outside them).
  void RemoveHandlers(HandlersId id) {
    std::lock_guard notifying(notify_mu_);
    std::erase_if(handlers_, [id](const auto& entry) { return entry.first == id; });
  }
  // Adds an index; adding one of the same name again keeps the first (the same name means the
  // same function).
  void AddIndex(const std::string& name, IndexFunc f) {
    std::lock_guard lock(mu_);
    if (!index_funcs_.emplace(name, std::move(f)).second) return;
    auto& idx = indexes_[name];
    const IndexFunc& func = index_funcs_.at(name);
    for (const auto& [key, obj] : items_) {
      for (auto& value : func(*obj)) idx[value].insert(key);
    }
  }

  // Starts listing and watching; starting a running informer does nothing.
  void Start() {
    std::lock_guard lock(mu_);
    if (thread_.joinable()) return;
    stopping_ = false;
    thread_ = std::thread([this] { Run(); });
  }

  void Stop() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      if (watch_) watch_->Close();
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

  // True once the first list is in the cache and every handler has been given it.
  bool HasSynced() const {
    std::lock_guard lock(mu_);
    return synced_;
  }
  // Waits until HasSynced; false if `timeout` passes first or the informer stops.
  bool WaitForSync(std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mu_);
    const auto deadline =
        clock_.Monotonic() + std::chrono::duration_cast<os::MonoTime::duration>(timeout);
    while (!synced_ && !stopping_) {
      if (clock_.WaitUntil(cv_, lock, deadline) == std::cv_status::timeout && !synced_) {
        return false;
      }
    }
    return synced_;
  }

  Ptr Get(std::string_view ns, std::string_view name) const {
    return GetByKey(ns.empty() ? std::string(name) : std::string(ns) + "/" + std::string(name));
  }
  Ptr GetByKey(const std::string& key) const {
    std::lock_guard lock(mu_);
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second;
  }
  // Every cached object, in key order (sorted after the lock is let go).
  std::vector<Ptr> List() const {
    std::vector<Ptr> out;
    {
      std::lock_guard lock(mu_);
      out.reserve(items_.size());
      for (const auto& [k, v] : items_) out.push_back(v);
    }
    std::sort(out.begin(), out.end(), [](const Ptr& a, const Ptr& b) { return KeyLess(*a, *b); });
    return out;
  }
  // Objects whose index function returned `value` for index `index`.
  std::vector<Ptr> ByIndex(const std::string& index, const std::string& value) const {
    std::lock_guard lock(mu_);
    std::vector<Ptr> out;
    auto idx = indexes_.find(index);
    if (idx == indexes_.end()) return out;
    auto keys = idx->second.find(value);
    if (keys == idx->second.end()) return out;
    for (const auto& key : keys->second) {
      auto it = items_.find(key);
      if (it != items_.end()) out.push_back(it->second);
    }
    return out;
  }
  // The resourceVersion the cache is current to.
  std::string resource_version() const {
    std::lock_guard lock(mu_);
    return rv_;
  }
  // How many times the informer has listed (the first list and every relist after a 410).
  int lists() const { return lists_.load(); }

 private:
  enum class Change { kAdd, kUpdate, kDelete };
  struct Notice {
    Change change;
    Ptr old;
    Ptr now;
  };

  bool Stopping() {
    std::lock_guard lock(mu_);
    return stopping_;
  }

  // Waits `d` unless stopped first.
  void Sleep(std::chrono::milliseconds d) {
    std::unique_lock lock(mu_);
    const auto deadline = clock_.Monotonic() + std::chrono::duration_cast<os::MonoTime::duration>(d);
    while (!stopping_ && clock_.WaitUntil(cv_, lock, deadline) != std::cv_status::timeout) {
    }
  }

  std::chrono::milliseconds NextBackoff(std::chrono::milliseconds b) const {
    if (b.count() == 0) return opts_.initial_backoff;
    return std::min(b * 2, opts_.max_backoff);
  }

  ListOptions Selectors() const {
    ListOptions o;
    o.label_selector = opts_.label_selector;
    o.field_selector = opts_.field_selector;
    return o;
  }

  void Run() {
    SetThreadName("informer-" + std::string(api::KindInfoOf<T>().ShortName()));
    const std::string_view kind = api::KindInfoOf<T>().resource;
    std::mt19937 rng(std::random_device{}());
    std::chrono::milliseconds backoff{0};
    while (!Stopping()) {
      if (backoff.count() > 0) Sleep(backoff);
      if (Stopping()) break;
      auto list = resource_.ListShared(opts_.ns, Selectors());
      if (!list.ok()) {
        log::Warn("informer " + std::string(kind) + ": list failed: " + list.error().message);
        backoff = NextBackoff(backoff);
        continue;
      }
      ++lists_;
      Replace(std::move(list->items), list->resource_version);
      backoff = std::chrono::milliseconds(0);
      std::string rv = list->resource_version;

      // Watch, and watch again from where the last watch stopped, until a relist is needed.
      bool relist = false;
      while (!relist && !Stopping()) {
        if (backoff.count() > 0) Sleep(backoff);
        ListOptions wo = Selectors();
        wo.resource_version = rv;
        wo.allow_bookmarks = true;
        const auto min = opts_.min_watch_timeout.count();
        wo.timeout_seconds = min + std::uniform_int_distribution<int64_t>(0, std::max<int64_t>(min - 1, 0))(rng);
        auto w = resource_.Watch(opts_.ns, wo);
        if (!w.ok()) {
          if (api::IsGone(w.error())) {
            relist = true;
            break;
          }
          log::Warn("informer " + std::string(kind) + ": watch failed: " + w.error().message);
          backoff = NextBackoff(backoff);
          continue;
        }
        std::shared_ptr<Watcher<T>> watch(std::move(*w));
        {
          std::lock_guard lock(mu_);
          if (stopping_) break;
          watch_ = watch;
        }
        while (true) {
          auto evs = watch->Next(std::chrono::seconds(5));
          if (!evs.ok()) {
            const ApiError& e = evs.error();
            if (api::IsGone(e)) {
              relist = true;
            } else if (!IsWatchClosed(e)) {
              log::Warn("informer " + std::string(kind) + ": watch ended: " + e.message);
              backoff = NextBackoff(backoff);
            }
            break;
          }
          if (!evs->empty()) backoff = std::chrono::milliseconds(0);
          Apply(std::move(*evs), &rv);
        }
        std::lock_guard lock(mu_);
        watch_.reset();
      }
    }
  }

  // Under mu_.
  void IndexAdd(const std::string& key, const T& obj) {
    for (auto& [name, f] : index_funcs_) {
      for (auto& value : f(obj)) indexes_[name][value].insert(key);
    }
  }
  void IndexRemove(const std::string& key, const T& obj) {
    for (auto& [name, f] : index_funcs_) {
      auto& idx = indexes_[name];
      for (auto& value : f(obj)) {
        auto it = idx.find(value);
        if (it == idx.end()) continue;
        it->second.erase(key);
        if (it->second.empty()) idx.erase(it);
      }
    }
  }
  // Under mu_: puts `now` in the cache and says what changed (nothing if the version is the one
  // cached already).
  std::optional<Notice> Upsert(Ptr now) {
    const std::string& key = KeyInto(key_, *now);
    auto it = items_.find(key);
    if (it == items_.end()) {
      IndexAdd(key, *now);
      items_.try_emplace(key, now);
      return Notice{Change::kAdd, nullptr, std::move(now)};
    }
    if (it->second->metadata.resource_version == now->metadata.resource_version) {
      return std::nullopt;
    }
    Ptr old = it->second;
    IndexRemove(key, *old);
    IndexAdd(key, *now);
    it->second = now;
    return Notice{Change::kUpdate, std::move(old), std::move(now)};
  }
  std::optional<Notice> Remove(const std::string& key) {
    auto it = items_.find(key);
    if (it == items_.end()) return std::nullopt;
    Ptr old = it->second;
    IndexRemove(key, *old);
    items_.erase(key);
    return Notice{Change::kDelete, old, old};
  }

  void Replace(std::vector<Ptr> items, const std::string& rv) {
    std::lock_guard notifying(notify_mu_);
    std::vector<Notice> notices;
    {
      std::lock_guard lock(mu_);
      std::set<std::string> seen;
      for (auto& ptr : items) {
        seen.insert(KeyOf(*ptr));
        if (auto n = Upsert(std::move(ptr))) notices.push_back(std::move(*n));
      }
      std::vector<std::string> gone;
      for (const auto& [key, v] : items_) {
        if (!seen.count(key)) gone.push_back(key);
      }
      std::sort(gone.begin(), gone.end());  // handlers hear of deletions in key order
      for (const auto& key : gone) {
        if (auto n = Remove(key)) notices.push_back(std::move(*n));
      }
      rv_ = rv;
    }
    Notify(notices);
    // Synced only once the handlers have seen the list: a controller that starts its workers
    // when WaitForSync returns finds its own caches (filled by handlers) whole, not half filled.
    std::lock_guard lock(mu_);
    synced_ = true;
    cv_.notify_all();
  }

  void Apply(std::vector<WatchEvent<T>> events, std::string* rv) {
    if (events.empty()) return;
    std::lock_guard notifying(notify_mu_);
    std::vector<Notice> notices;
    {
      std::lock_guard lock(mu_);
      for (auto& e : events) {
        if (!e.object->metadata.resource_version.empty()) {
          *rv = e.object->metadata.resource_version;
        }
        switch (e.type) {
          case EventType::kBookmark: break;
          case EventType::kAdded:
          case EventType::kModified:
            if (auto n = Upsert(std::move(e.object))) notices.push_back(std::move(*n));
            break;
          case EventType::kDeleted:
            if (auto n = Remove(KeyOf(*e.object))) {
              // The deleted object's final state is the one the event carries.
              n->old = std::move(e.object);
              notices.push_back(std::move(*n));
            }
            break;
        }
      }
      rv_ = *rv;
    }
    Notify(notices);
  }

  // Under notify_mu_.
  void Notify(const std::vector<Notice>& notices) {
    for (const auto& n : notices) {
      for (const auto& [id, h] : handlers_) {
        switch (n.change) {
          case Change::kAdd:
            if (h.on_add) h.on_add(n.now);
            break;
          case Change::kUpdate:
            if (h.on_update) h.on_update(n.old, n.now);
            break;
          case Change::kDelete:
            if (h.on_delete) h.on_delete(n.old);
            break;
        }
      }
    }
  }

  Resource<T>& resource_;
  const InformerOptions opts_;
  os::Clock& clock_;

  // Held while the cache changes and its handlers hear of it, and while handlers are added or
  // removed; taken before mu_.
  std::mutex notify_mu_;
  std::vector<std::pair<HandlersId, Handlers>> handlers_;
  HandlersId last_handlers_id_ = 0;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  // By key (namespace/name); a hash map, as a lookup on every event and every Get must not walk
  // a tree of a hundred thousand keys. List sorts.
  FlatStringMap<Ptr> items_;
  std::string key_;  // Upsert's, reused
  std::map<std::string, IndexFunc> index_funcs_;
  std::map<std::string, std::unordered_map<std::string, std::set<std::string>>> indexes_;
  std::string rv_;
  bool synced_ = false;
  bool stopping_ = false;
  std::shared_ptr<Watcher<T>> watch_;
  std::thread thread_;
  std::atomic<int> lists_{0};
};

// One informer per kind, made on first use and shared by everyone who asks: the controllers of
// one process register their handlers and indexes on the same informers. Each user starts the
// informers it needs (starting a running one does nothing) and removes its handlers when it
// stops; the informers stop with this object.
//
//   client::SharedInformers informers(client);
//   auto& claims = informers.Get<api::PersistentVolumeClaim>();
//   auto id = claims.AddHandlers({.on_add = ...});
//   claims.Start();
class SharedInformers {
 public:
  explicit SharedInformers(Client& client, InformerOptions opts = {})
      : client_(client), opts_(std::move(opts)) {}
  ~SharedInformers() { Stop(); }
  SharedInformers(const SharedInformers&) = delete;
  SharedInformers& operator=(const SharedInformers&) = delete;

  template <class T>
  Informer<T>& Get() {
    std::lock_guard lock(mu_);
    auto& slot = informers_[std::type_index(typeid(T))];
    if (!slot) slot = std::make_unique<Informer<T>>(client_.resource<T>(), opts_);
    return static_cast<Informer<T>&>(*slot);
  }

  // Stops every informer (they keep their caches; Get still answers).
  void Stop() {
    std::lock_guard lock(mu_);
    for (auto& [type, informer] : informers_) informer->Stop();
  }

 private:
  Client& client_;
  const InformerOptions opts_;
  std::mutex mu_;
  std::map<std::type_index, std::unique_ptr<InformerBase>> informers_;
};

// What one user of informers (a controller) holds: the process's SharedInformers when given,
// else informers of its own (made with `opts`), and the handlers it added. Stop removes those
// handlers, and stops the informers only if they are its own.
class InformerScope {
 public:
  InformerScope(Client& client, SharedInformers* shared, InformerOptions opts = {}) {
    if (shared == nullptr) {
      own_ = std::make_unique<SharedInformers>(client, std::move(opts));
      shared = own_.get();
    }
    informers_ = shared;
  }
  ~InformerScope() { Stop(); }
  InformerScope(const InformerScope&) = delete;
  InformerScope& operator=(const InformerScope&) = delete;

  template <class T>
  Informer<T>& Get() {
    return informers_->Get<T>();
  }
  // Get<T>() with `h` added to it.
  template <class T>
  Informer<T>& Handle(typename Informer<T>::Handlers h) {
    Informer<T>& informer = Get<T>();
    const auto id = informer.AddHandlers(std::move(h));
    removals_.push_back([&informer, id] { informer.RemoveHandlers(id); });
    return informer;
  }

  void Stop() {
    for (auto& remove : removals_) remove();
    removals_.clear();
    if (own_) own_->Stop();
  }

 private:
  std::unique_ptr<SharedInformers> own_;
  SharedInformers* informers_ = nullptr;
  std::vector<std::function<void()>> removals_;
};

}  // namespace kvol::client
