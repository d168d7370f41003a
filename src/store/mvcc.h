// The in-memory multi-version index and the watch fan-out, shared by store backends that keep
// their state in process (SQLite). Not thread-safe: the owning store serializes access.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "store/store.h"

namespace kvol::store {

class MvccIndex {
 public:
  struct Version {
    Revision mod = 0;
    Revision create = 0;
    Value value;  // null for a deletion (tombstone)
    bool deleted() const { return value == nullptr; }
  };

  using KeyMap = std::map<std::string, std::vector<Version>, std::less<>>;
  // A key's entry, found once for a write that checks the key's latest version and then
  // applies (see Apply): valid until the key is erased by Compact.
  using Entry = KeyMap::iterator;

  Revision current() const { return current_; }
  Revision compacted() const { return compacted_; }

  // The newest version of a key, or nullptr if it does not exist (absent or deleted).
  const Version* Latest(std::string_view key) const;
  // The same, and the key's entry (nullopt if the index has none).
  const Version* Latest(std::string_view key, std::optional<Entry>* entry);

  StatusOr<KeyValue> Get(std::string_view key, Revision rev) const;
  StatusOr<RangeResult> Range(const RangeOptions& opts) const;

  // Applies one write at revision current()+1 (value null: delete) and returns its event.
  // The caller has checked the preconditions (exists / does not exist / expected revision).
  Event Apply(std::string_view key, Value value);
  // The same for a key whose entry the caller found (by Latest) since the last Compact.
  Event Apply(Entry entry, Value value);

  // Replays a stored version on start-up, in revision order. `value` null: a deletion.
  void Restore(std::string_view key, Revision mod, Revision create, Value value, bool history);
  void SetRevisions(Revision current, Revision compacted);

  // Drops versions and history no read at revision >= `rev` needs; returns the revisions of the
  // versions dropped (so a backend can delete their rows). With `released`, the dropped
  // versions' values are moved there, for the caller to free outside its locks.
  std::vector<Revision> Compact(Revision rev, std::vector<Value>* released = nullptr);

  // Events after `after` for keys under `prefix`. The caller checks after >= compacted().
  std::vector<Event> HistorySince(std::string_view prefix, Revision after) const;
  size_t history_size() const { return history_.size(); }
  size_t key_count() const { return keys_.size(); }

 private:
  StatusOr<Revision> ReadRevision(Revision rev) const;
  // The key's entry, made (empty) if it has none.
  KeyMap::iterator Find(std::string_view key);
  // The newest version of `versions` unless it is a tombstone, or nullptr.
  static const Version* Newest(const std::vector<Version>& versions);
  // The version of `versions` visible at `rev`, or nullptr.
  static const Version* At(const std::vector<Version>& versions, Revision rev);

  KeyMap keys_;
  // For each version that supersedes an older one or is a tombstone, in revision order: its
  // revision and its key's entry (a map iterator stays valid until its key is erased, and
  // Compact erases a key only with all of its entries here).
  std::deque<std::pair<Revision, KeyMap::iterator>> superseding_;
  // Every write after compacted_, in revision order: its revision and its key (the map's own).
  // An event is made from the key's versions when a watch asks for it.
  std::deque<std::pair<Revision, const std::string*>> history_;
  // Like etcd, an empty store is at revision 1 and its first write gets 2: 0 never names a real
  // revision, so it can mean "now" / "any".
  Revision current_ = 1;
  Revision compacted_ = 0;
};

// Fans committed events out to watchers. Thread-safe.
class WatchHub {
 public:
  // Watchers whose backlog grows past this are ended with OutOfRange, and must re-list.
  static constexpr size_t kMaxBacklog = 200'000;

  ~WatchHub() { Shutdown(); }

  // A watcher that first receives `backlog` (already filtered), then live events; its progress
  // starts at `current` (the revision the backlog runs up to).
  WatchPtr Add(std::string prefix, std::vector<Event> backlog, Revision current);
  // Delivers committed events; `revision` is the store's revision after them.
  void Publish(std::vector<Event> events, Revision revision);
  // Ends every watcher with Cancelled.
  void Shutdown();

 private:
  struct Watcher;
  class Handle;

  std::mutex mu_;
  std::vector<std::shared_ptr<Watcher>> watchers_;
  bool shut_down_ = false;
  // The revision of the last Publish, shared with every watcher for Progress().
  std::shared_ptr<std::atomic<Revision>> published_ = std::make_shared<std::atomic<Revision>>(0);
};

}  // namespace kvol::store
