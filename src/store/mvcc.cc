// In-memory MVCC index and watch fan-out.
#include "store/mvcc.h"

#include <algorithm>

namespace kvol::store {

namespace {
bool HasPrefix(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}
}  // namespace

const MvccIndex::Version* MvccIndex::At(const std::vector<Version>& versions, Revision rev) {
  // Versions are ascending by revision; the last one at or before `rev` is visible.
  auto it = std::upper_bound(versions.begin(), versions.end(), rev,
                             [](Revision r, const Version& v) { return r < v.mod; });
  if (it == versions.begin()) return nullptr;
  return &*std::prev(it);
}

const MvccIndex::Version* MvccIndex::Newest(const std::vector<Version>& versions) {
  return versions.empty() || versions.back().deleted() ? nullptr : &versions.back();
}

const MvccIndex::Version* MvccIndex::Latest(std::string_view key) const {
  auto it = keys_.find(key);
  return it == keys_.end() ? nullptr : Newest(it->second);
}

const MvccIndex::Version* MvccIndex::Latest(std::string_view key, std::optional<Entry>* entry) {
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    entry->reset();
    return nullptr;
  }
  *entry = it;
  return Newest(it->second);
}

StatusOr<Revision> MvccIndex::ReadRevision(Revision rev) const {
  if (rev == 0) return current_;
  if (rev > current_) {
    return OutOfRangeError("revision " + std::to_string(rev) + " is in the future (current " +
                           std::to_string(current_) + ")");
  }
  if (rev < compacted_) return OutOfRangeError(std::string(kCompactedMessage));
  return rev;
}

StatusOr<KeyValue> MvccIndex::Get(std::string_view key, Revision rev) const {
  KVOL_ASSIGN_OR_RETURN(Revision at, ReadRevision(rev));
  auto it = keys_.find(key);
  if (it != keys_.end()) {
    if (const Version* v = At(it->second, at); v && !v->deleted()) {
      return KeyValue{it->first, v->value, v->create, v->mod};
    }
  }
  return NotFoundError("key \"" + std::string(key) + "\" not found");
}

StatusOr<RangeResult> MvccIndex::Range(const RangeOptions& opts) const {
  KVOL_ASSIGN_OR_RETURN(Revision at, ReadRevision(opts.revision));
  RangeResult result;
  result.revision = at;
  auto it = opts.start_after.empty() || opts.start_after < opts.prefix
                ? keys_.lower_bound(opts.prefix)
                : keys_.upper_bound(opts.start_after);
  for (; it != keys_.end() && HasPrefix(it->first, opts.prefix); ++it) {
    const Version* v = At(it->second, at);
    if (!v || v->deleted()) continue;
    if (opts.limit > 0 && static_cast<int64_t>(result.kvs.size()) == opts.limit) {
      result.more = true;
      break;
    }
    result.kvs.push_back({it->first, v->value, v->create, v->mod});
  }
  return result;
}

MvccIndex::KeyMap::iterator MvccIndex::Find(std::string_view key) {
  // One walk down the tree, whether the key is there or not.
  auto it = keys_.lower_bound(key);
  if (it == keys_.end() || it->first != key) {
    it = keys_.emplace_hint(it, std::string(key), std::vector<Version>{});
    it->second.reserve(2);  // most objects are written again
  }
  return it;
}

Event MvccIndex::Apply(std::string_view key, Value value) {
  return Apply(Find(key), std::move(value));
}

Event MvccIndex::Apply(Entry it, Value value) {
  const Revision rev = ++current_;
  auto& versions = it->second;
  const Version* prev = Newest(versions);

  Event ev;
  std::optional<KeyValue> prev_kv;
  if (prev) prev_kv = KeyValue{it->first, prev->value, prev->create, prev->mod};
  if (value == nullptr) {
    ev.type = Event::Type::kDeleted;
    ev.kv = KeyValue{it->first, prev ? prev->value : nullptr, prev ? prev->create : 0, rev};
    versions.push_back({rev, 0, nullptr});
  } else {
    const Revision create = prev ? prev->create : rev;
    ev.type = prev ? Event::Type::kModified : Event::Type::kAdded;
    ev.kv = KeyValue{it->first, value, create, rev};
    versions.push_back({rev, create, std::move(value)});
  }
  ev.prev = std::move(prev_kv);
  if (versions.size() > 1 || versions.back().deleted()) superseding_.push_back({rev, it});
  history_.push_back({rev, &it->first});
  return ev;
}

void MvccIndex::Restore(std::string_view key, Revision mod, Revision create, Value value,
                        bool history) {
  auto it = Find(key);
  auto& versions = it->second;
  if (history) history_.push_back({mod, &it->first});
  versions.push_back({mod, value ? create : 0, std::move(value)});
  if (versions.size() > 1 || versions.back().deleted()) superseding_.push_back({mod, it});
  current_ = std::max(current_, mod);
}

void MvccIndex::SetRevisions(Revision current, Revision compacted) {
  current_ = std::max({current_, current, compacted});
  compacted_ = compacted;
}

std::vector<Revision> MvccIndex::Compact(Revision rev, std::vector<Value>* released) {
  std::vector<Revision> dropped;
  if (rev <= compacted_) return dropped;
  rev = std::min(rev, current_);
  // Only keys with a version that supersedes another at or before `rev` have anything to
  // drop. Every such version of a key is popped here together, so a key erased below has no
  // entry left behind.
  std::vector<KeyMap::iterator> keys;
  while (!superseding_.empty() && superseding_.front().first <= rev) {
    keys.push_back(superseding_.front().second);
    superseding_.pop_front();
  }
  // Each key once (iterators of one map are ordered here by their entries' addresses).
  auto by_entry = [](KeyMap::iterator a, KeyMap::iterator b) { return &*a < &*b; };
  std::sort(keys.begin(), keys.end(), by_entry);
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (auto it : keys) {
    auto& versions = it->second;
    // Keep the version visible at `rev` (unless it is a tombstone) and everything after it.
    size_t keep_from = 0;
    for (size_t i = 0; i < versions.size() && versions[i].mod <= rev; ++i) keep_from = i;
    if (!versions.empty() && versions[keep_from].mod <= rev && versions[keep_from].deleted()) {
      ++keep_from;
    }
    for (size_t i = 0; i < keep_from; ++i) {
      dropped.push_back(versions[i].mod);
      if (released && versions[i].value) released->push_back(std::move(versions[i].value));
    }
    versions.erase(versions.begin(), versions.begin() + static_cast<ptrdiff_t>(keep_from));
    if (versions.empty()) keys_.erase(it);
  }
  std::sort(dropped.begin(), dropped.end());
  while (!history_.empty() && history_.front().first <= rev) history_.pop_front();
  compacted_ = rev;
  return dropped;
}

std::vector<Event> MvccIndex::HistorySince(std::string_view prefix, Revision after) const {
  std::vector<Event> out;
  auto it = std::upper_bound(history_.begin(), history_.end(), after,
                             [](Revision r, const auto& h) { return r < h.first; });
  for (; it != history_.end(); ++it) {
    const auto& [rev, key] = *it;
    if (!HasPrefix(*key, prefix)) continue;
    // The version written at `rev` and the one it followed are both kept: compaction keeps
    // what is visible at the compaction point and everything after it.
    const std::vector<Version>& versions = keys_.find(*key)->second;
    auto at = std::lower_bound(versions.begin(), versions.end(), rev,
                               [](const Version& v, Revision r) { return v.mod < r; });
    const Version* prev = at == versions.begin() || std::prev(at)->deleted() ? nullptr
                                                                             : &*std::prev(at);
    Event& ev = out.emplace_back();
    if (prev) ev.prev = KeyValue{*key, prev->value, prev->create, prev->mod};
    if (at->deleted()) {
      ev.type = Event::Type::kDeleted;
      ev.kv = KeyValue{*key, prev ? prev->value : nullptr, prev ? prev->create : 0, rev};
    } else {
      ev.type = prev ? Event::Type::kModified : Event::Type::kAdded;
      ev.kv = KeyValue{*key, at->value, at->create, rev};
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

struct WatchHub::Watcher {
  std::string prefix;
  std::shared_ptr<std::atomic<Revision>> published;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Event> pending;
  Status error;  // set once: the watch is over after pending drains
  bool closed = false;
  bool progress_requested = false;
  Revision progress = 0;  // as of the last Next()
};

class WatchHub::Handle : public Watch {
 public:
  explicit Handle(std::shared_ptr<Watcher> w) : w_(std::move(w)) {}
  ~Handle() override { Close(); }

  StatusOr<std::vector<Event>> Next(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(w_->mu);
    w_->cv.wait_for(lock, timeout, [&] {
      return w_->closed || !w_->pending.empty() || !w_->error.ok() || w_->progress_requested;
    });
    if (w_->closed) return Status(StatusCode::kCancelled, "watch closed");
    // Publish pushes a batch's events before it publishes the batch's revision, so reading the
    // revision before taking the pending events never claims an event not yet delivered.
    w_->progress = std::max(w_->progress, w_->published->load(std::memory_order_acquire));
    w_->progress_requested = false;
    if (!w_->pending.empty()) {
      std::vector<Event> out(std::make_move_iterator(w_->pending.begin()),
                             std::make_move_iterator(w_->pending.end()));
      w_->pending.clear();
      return out;
    }
    if (!w_->error.ok()) return w_->error;
    return std::vector<Event>{};
  }

  void Close() override {
    std::lock_guard lock(w_->mu);
    w_->closed = true;
    w_->pending.clear();
    w_->cv.notify_all();
  }

  Revision Progress() override {
    std::lock_guard lock(w_->mu);
    return w_->progress;
  }

  void RequestProgress() override {
    std::lock_guard lock(w_->mu);
    w_->progress_requested = true;
    w_->cv.notify_all();
  }

 private:
  std::shared_ptr<Watcher> w_;
};

WatchPtr WatchHub::Add(std::string prefix, std::vector<Event> backlog, Revision current) {
  auto w = std::make_shared<Watcher>();
  w->prefix = std::move(prefix);
  w->published = published_;
  w->progress = current;
  w->pending.assign(std::make_move_iterator(backlog.begin()),
                    std::make_move_iterator(backlog.end()));
  std::lock_guard lock(mu_);
  if (shut_down_) w->error = Status(StatusCode::kCancelled, "store is shutting down");
  else watchers_.push_back(w);
  return std::make_unique<Handle>(std::move(w));
}

void WatchHub::Publish(std::vector<Event> events, Revision revision) {
  std::lock_guard lock(mu_);
  struct SetPublished {
    std::atomic<Revision>& target;
    Revision value;
    ~SetPublished() { target.store(value, std::memory_order_release); }
  } set_published{*published_, revision};
  // Each event is copied to every watcher it matches but the last, which takes it.
  std::vector<size_t> last(events.size(), watchers_.size());
  for (size_t i = 0; i < watchers_.size(); ++i) {
    for (size_t e = 0; e < events.size(); ++e) {
      if (HasPrefix(events[e].kv.key, watchers_[i]->prefix)) last[e] = i;
    }
  }
  size_t kept = 0;
  for (size_t i = 0; i < watchers_.size(); ++i) {
    Watcher& w = *watchers_[i];
    std::lock_guard wl(w.mu);
    if (w.closed || !w.error.ok()) continue;
    bool added = false;
    for (size_t e = 0; e < events.size(); ++e) {
      if (last[e] == i) {
        w.pending.push_back(std::move(events[e]));
      } else if (last[e] > i && HasPrefix(events[e].kv.key, w.prefix)) {
        w.pending.push_back(events[e]);
      } else {
        continue;
      }
      added = true;
    }
    if (w.pending.size() > kMaxBacklog) {
      w.pending.clear();
      w.error = OutOfRangeError("watcher fell too far behind; list again");
      added = true;
    }
    if (added) w.cv.notify_all();
    if (w.error.ok()) watchers_[kept++] = std::move(watchers_[i]);
  }
  watchers_.resize(kept);
}

void WatchHub::Shutdown() {
  std::lock_guard lock(mu_);
  shut_down_ = true;
  for (auto& w : watchers_) {
    std::lock_guard wl(w->mu);
    if (w->error.ok()) w->error = Status(StatusCode::kCancelled, "store is shutting down");
    w->cv.notify_all();
  }
  watchers_.clear();
}

}  // namespace kvol::store
