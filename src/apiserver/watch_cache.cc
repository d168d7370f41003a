// The per-resource watch cache.
#include "apiserver/watch_cache.h"

#include <algorithm>
#include <utility>

#include "base/thread.h"

namespace kvol::apiserver {

using namespace std::chrono_literals;

bool Filter::Matches(const CachedObject& o) const {
  if (!ns.empty() && o.ns != ns) return false;
  if (!labels.Matches(o.labels)) return false;
  return fields.Empty() || fields.Matches(o.fields, o.name, o.ns);
}

struct WatchCache::Watcher {
  Filter filter;
  std::mutex mu;
  std::condition_variable cv;
  // A vector rather than a deque: an idle watcher (most of them) then holds no block for it.
  std::vector<CacheEvent> pending;
  Status error;
  bool closed = false;
  store::Revision progress = 0;  // the cache revision the pending events reach
  std::function<void()> notify;

  // Called with mu held: wakes whoever waits for this watcher.
  void Wake() {
    cv.notify_all();
    if (notify) notify();
  }

  // Adds an event as this watcher sees it: an object that starts matching is ADDED, one that
  // stops matching is DELETED.
  void Offer(const CacheEvent& e, const CachedPtr& prev) {
    const bool now = e.type != CacheEvent::Type::kDeleted && filter.Matches(*e.object);
    const bool before = prev != nullptr && filter.Matches(*prev);
    CacheEvent out = e;
    if (e.type == CacheEvent::Type::kDeleted) {
      if (!filter.Matches(*e.object)) return;
    } else if (now && !before) {
      out.type = CacheEvent::Type::kAdded;
    } else if (!now && before) {
      out.type = CacheEvent::Type::kDeleted;
    } else if (!now) {
      return;
    }
    pending.push_back(std::move(out));
  }
};

class WatchCache::Handle final : public CacheWatch {
 public:
  explicit Handle(std::shared_ptr<Watcher> w) : w_(std::move(w)) {}
  ~Handle() override { Close(); }

  StatusOr<std::vector<CacheEvent>> Next(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(w_->mu);
    w_->cv.wait_for(lock, timeout,
                    [&] { return w_->closed || !w_->pending.empty() || !w_->error.ok(); });
    if (w_->closed) return Status(StatusCode::kCancelled, "watch closed");
    // Whatever is pending is handed out now, so everything up to `progress` is delivered.
    delivered_ = w_->progress;
    if (!w_->pending.empty()) {
      std::vector<CacheEvent> out;
      out.swap(w_->pending);
      return out;
    }
    if (!w_->error.ok()) return w_->error;
    return std::vector<CacheEvent>{};
  }

  void Close() override {
    std::function<void()> notify;
    {
      std::lock_guard lock(w_->mu);
      if (w_->closed) return;
      w_->closed = true;
      std::vector<CacheEvent>().swap(w_->pending);
      w_->cv.notify_all();
      notify = std::move(w_->notify);
      w_->notify = nullptr;
    }
    if (notify) notify();
  }

  void SetNotify(std::function<void()> fn) override {
    std::lock_guard lock(w_->mu);
    if (w_->closed) return;
    w_->notify = std::move(fn);
    if (!w_->pending.empty() || !w_->error.ok()) w_->notify();
  }

  store::Revision Progress() const override { return delivered_; }

 private:
  std::shared_ptr<Watcher> w_;
  store::Revision delivered_ = 0;
};

WatchCache::WatchCache(store::Store& store, std::string prefix, Indexer indexer, size_t history,
                       std::string thread_name)
    : store_(store), prefix_(std::move(prefix)), indexer_(std::move(indexer)),
      history_limit_(history), thread_name_(std::move(thread_name)),
      primable_(store.WatchSharesValues()) {}

void WatchCache::Prime(const store::Value& value, CachedObject indexed) {
  if (primable_) value->primed = std::make_shared<CachedObject>(std::move(indexed));
}

void WatchCache::Unprime(const store::Value& value) {
  if (primable_) value->primed.reset();
}

StatusOr<std::shared_ptr<CachedObject>> WatchCache::Index(const store::KeyValue& kv) {
  if (primable_ && kv.value && kv.value->primed) {
    // Taken once: the cache is its only owner from here.
    auto c = std::static_pointer_cast<CachedObject>(std::exchange(kv.value->primed, nullptr));
    c->json = kv.value;
    c->rev = kv.mod_revision;
    return c;
  }
  auto c = indexer_(kv);
  if (!c.ok()) return c.status();
  return std::make_shared<CachedObject>(*std::move(c));
}

WatchCache::~WatchCache() { Stop(); }

Status WatchCache::Relist() {
  auto r = store_.Range({prefix_, "", 0, 0});
  if (!r.ok()) return r.status();
  std::map<std::string, CachedPtr, std::less<>> items;
  for (const auto& kv : r->kvs) {
    auto obj = Index(kv);
    if (!obj.ok()) continue;  // unreadable objects are left out of lists, not fatal
    items.emplace(kv.key, *std::move(obj));
  }
  auto w = store_.Watch(prefix_, r->revision);
  if (!w.ok()) return w.status();
  std::vector<std::shared_ptr<Watcher>> reset;
  {
    std::lock_guard lock(mu_);
    items_ = std::move(items);
    history_.clear();
    rev_ = r->revision;
    history_start_ = r->revision;
    store_watch_ = std::move(*w);
    reset.swap(watchers_);
  }
  fresh_cv_.notify_all();
  // Watchers cannot follow across a relist: they must list again.
  for (auto& wt : reset) {
    std::lock_guard l(wt->mu);
    if (wt->error.ok()) wt->error = OutOfRangeError("the watch cache was reset; list again");
    wt->Wake();
  }
  return OkStatus();
}

Status WatchCache::Start() {
  KVOL_RETURN_IF_ERROR(Relist());
  pump_ = std::thread([this] { Pump(); });
  return OkStatus();
}

void WatchCache::Stop() {
  std::vector<std::shared_ptr<Watcher>> watchers;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    if (store_watch_) store_watch_->Close();
    watchers.swap(watchers_);
  }
  fresh_cv_.notify_all();
  if (pump_.joinable()) pump_.join();
  for (auto& w : watchers) {
    std::lock_guard l(w->mu);
    if (w->error.ok()) w->error = Status(StatusCode::kCancelled, "server is shutting down");
    w->Wake();
  }
}

void WatchCache::Pump() {
  SetThreadName(thread_name_);
  while (true) {
    store::Watch* w;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      w = store_watch_.get();
    }
    auto evs = w->Next(1s);
    if (evs.ok()) {
      if (!evs->empty()) Apply(*evs);
      // Quiet prefixes still move forward with the store.
      const store::Revision progress = w->Progress();
      {
        std::lock_guard lock(mu_);
        if (progress > rev_) {
          rev_ = progress;
          AdvanceWatchers();
        }
      }
      fresh_cv_.notify_all();
      continue;
    }
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    // The store watch ended (fell behind, compacted, or the backend went away): start over.
    while (!Relist().ok()) {
      std::unique_lock lock(mu_);
      if (fresh_cv_.wait_for(lock, 1s, [&] { return stopping_; })) return;
    }
  }
}

void WatchCache::Apply(const std::vector<store::Event>& events) {
  // Parse outside the lock: lists and watchers are not held up by it.
  std::vector<StatusOr<std::shared_ptr<CachedObject>>> indexed;
  indexed.reserve(events.size());
  for (const auto& e : events) {
    if (e.type == store::Event::Type::kDeleted) {
      indexed.emplace_back(Status(StatusCode::kNotFound, "deleted"));
    } else {
      indexed.push_back(Index(e.kv));
    }
  }
  std::vector<CacheEvent> out;
  std::vector<CachedPtr> prevs;
  out.reserve(events.size());
  {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < events.size(); ++i) {
      const auto& e = events[i];
      // One walk down the tree: the entry, or where it goes.
      auto it = items_.lower_bound(e.kv.key);
      const bool found = it != items_.end() && it->first == e.kv.key;
      CachedPtr prev = found ? it->second : nullptr;
      CacheEvent ce;
      ce.rev = e.revision();
      if (e.type == store::Event::Type::kDeleted) {
        if (prev == nullptr) {
          rev_ = ce.rev;
          continue;
        }
        ce.type = CacheEvent::Type::kDeleted;
        auto gone = std::make_shared<CachedObject>(*prev);
        gone->rev = ce.rev;
        ce.object = std::move(gone);
        items_.erase(it);
      } else {
        auto& obj = indexed[i];
        if (!obj.ok()) {
          rev_ = ce.rev;
          continue;
        }
        ce.type = prev ? CacheEvent::Type::kModified : CacheEvent::Type::kAdded;
        ce.object = *std::move(obj);
        if (found) {
          it->second = ce.object;
        } else {
          items_.emplace_hint(it, e.kv.key, ce.object);
        }
      }
      rev_ = ce.rev;
      history_.emplace_back(ce, prev);
      while (history_.size() > history_limit_) {
        history_start_ = history_.front().first.rev;
        history_.pop_front();
      }
      out.push_back(std::move(ce));
      prevs.push_back(std::move(prev));
    }
    Publish(out, prevs);
  }
  fresh_cv_.notify_all();
}

// Called with mu_ held.
void WatchCache::Publish(const std::vector<CacheEvent>& events, const std::vector<CachedPtr>& prevs) {
  std::erase_if(watchers_, [&](const std::shared_ptr<Watcher>& w) {
    std::lock_guard l(w->mu);
    if (w->closed || !w->error.ok()) return true;
    const size_t before = w->pending.size();
    for (size_t i = 0; i < events.size(); ++i) w->Offer(events[i], prevs[i]);
    if (w->pending.size() > 100'000) {
      std::vector<CacheEvent>().swap(w->pending);
      w->error = OutOfRangeError("watcher fell too far behind; list again");
      w->Wake();
      return true;
    }
    w->progress = rev_;
    if (w->pending.size() != before) w->Wake();
    return false;
  });
}

// Called with mu_ held: the cache moved without events for anyone.
void WatchCache::AdvanceWatchers() {
  for (const auto& w : watchers_) {
    std::lock_guard l(w->mu);
    w->progress = rev_;
  }
}

StatusOr<std::vector<CachedPtr>> WatchCache::List(const Filter& f, store::Revision min_rev,
                                                  std::chrono::milliseconds timeout,
                                                  store::Revision* at) {
  std::unique_lock lock(mu_);
  if (rev_ < min_rev && store_watch_) store_watch_->RequestProgress();
  if (!fresh_cv_.wait_for(lock, timeout, [&] { return rev_ >= min_rev || stopping_; })) {
    return UnavailableError("the watch cache of " + prefix_ + " is behind the store (at " +
                            std::to_string(rev_) + ", want " + std::to_string(min_rev) + ")");
  }
  std::vector<CachedPtr> out;
  auto begin = items_.begin();
  if (!f.ns.empty()) {
    // Namespaced keys are prefix/ns/name: jump to the namespace.
    begin = items_.lower_bound(prefix_ + f.ns + "/");
  }
  for (auto it = begin; it != items_.end(); ++it) {
    if (!f.ns.empty() && it->second->ns != f.ns) {
      if (it->first.compare(0, prefix_.size() + f.ns.size() + 1, prefix_ + f.ns + "/") != 0) break;
      continue;
    }
    if (f.Matches(*it->second)) out.push_back(it->second);
  }
  if (at) *at = rev_;
  return out;
}

StatusOr<std::unique_ptr<CacheWatch>> WatchCache::Watch(const Filter& f, store::Revision after) {
  auto w = std::make_shared<Watcher>();
  w->filter = f;
  std::lock_guard lock(mu_);
  if (stopping_) return Status(StatusCode::kCancelled, "server is shutting down");
  w->progress = rev_;
  if (after == 0) {
    for (const auto& [key, obj] : items_) {
      if (f.Matches(*obj)) w->pending.push_back({CacheEvent::Type::kAdded, obj, obj->rev});
    }
  } else {
    if (after < history_start_) {
      return OutOfRangeError("too old resource version: " + std::to_string(after) + " (" +
                             std::to_string(history_start_) + ")");
    }
    auto it = std::upper_bound(history_.begin(), history_.end(), after,
                               [](store::Revision r, const auto& h) { return r < h.first.rev; });
    for (; it != history_.end(); ++it) w->Offer(it->first, it->second);
  }
  watchers_.push_back(w);
  return std::unique_ptr<CacheWatch>(std::make_unique<Handle>(std::move(w)));
}

store::Revision WatchCache::revision() {
  std::lock_guard lock(mu_);
  return rev_;
}

size_t WatchCache::size() {
  std::lock_guard lock(mu_);
  return items_.size();
}

}  // namespace kvol::apiserver
