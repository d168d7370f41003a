// One in-memory cache per resource, fed by a single store watch: lists are served from it and
// every client watch is a filtered view of it, so N watchers cost one store read. Objects are
// kept as the stored JSON (shared with the store) plus what selectors need (labels, fields).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/fields.h"
#include "api/labels.h"
#include "store/store.h"

namespace kvol::apiserver {

struct CachedObject {
  std::string ns;
  std::string name;
  store::Value json;  // as stored: without metadata.resourceVersion
  store::Revision rev = 0;
  api::StringMap labels;
  api::StringMap fields;  // selectable fields other than metadata.name and metadata.namespace
};
using CachedPtr = std::shared_ptr<const CachedObject>;

struct CacheEvent {
  enum class Type { kAdded, kModified, kDeleted };
  Type type = Type::kAdded;
  CachedPtr object;  // new state; for kDeleted the last state
  store::Revision rev = 0;
};

// Which objects a list or watch wants.
struct Filter {
  std::string ns;  // empty: every namespace
  api::labels::Selector labels = api::labels::Selector::Everything();
  api::fields::Selector fields;
  bool Matches(const CachedObject& o) const;
};

class CacheWatch {
 public:
  virtual ~CacheWatch() = default;
  // Events in order; empty on timeout. Cancelled after Close(); OutOfRange when the cache was
  // reset (the client must list again).
  virtual StatusOr<std::vector<CacheEvent>> Next(std::chrono::milliseconds timeout) = 0;
  virtual void Close() = 0;
  // `fn` is called (from the cache's thread, with its locks held: it must only schedule work)
  // whenever Next() has something new to return: events, an error, or the end after Close().
  virtual void SetNotify(std::function<void()> fn) = 0;
  // A revision R such that every matching event with revision <= R has been returned by Next():
  // what a bookmark may carry. Moves with the store even when no event matches.
  virtual store::Revision Progress() const = 0;
};

class WatchCache {
 public:
  // Turns a stored key-value into a cached object (decoding what selectors need).
  using Indexer = std::function<StatusOr<CachedObject>(const store::KeyValue&)>;

  static constexpr size_t kDefaultHistory = 50'000;  // events kept for watches that resume

  // `thread_name` names the thread that follows the store (base/thread.h).
  WatchCache(store::Store& store, std::string prefix, Indexer indexer,
             size_t history = kDefaultHistory, std::string thread_name = "watch-cache");
  ~WatchCache();

  // Lists the store and starts following it.
  Status Start();
  void Stop();

  // Every object matching `f`, as of a revision >= `min_rev` (waits up to `timeout` for the
  // cache to catch up with writes that were acknowledged before; Unavailable if it does not).
  StatusOr<std::vector<CachedPtr>> List(const Filter& f, store::Revision min_rev,
                                        std::chrono::milliseconds timeout,
                                        store::Revision* at = nullptr);

  // Events after `after` that match `f`. With `after` == 0, begins with ADDED events for the
  // current state. OutOfRange if `after` is older than the cache's history.
  StatusOr<std::unique_ptr<CacheWatch>> Watch(const Filter& f, store::Revision after);

  store::Revision revision();
  // How many objects the cache holds now.
  size_t size();

  // With a store whose watch events carry the written Value objects (WatchSharesValues), a
  // writer hands the cache the object it is about to write, already indexed, so the event
  // need not be parsed again (StoredText::primed). Call Prime before the write, and Unprime if
  // the write fails.
  bool primable() const { return primable_; }
  void Prime(const store::Value& value, CachedObject indexed);
  void Unprime(const store::Value& value);

 private:
  struct Watcher;
  class Handle;

  Status Relist();
  void Pump();
  void Apply(const std::vector<store::Event>& events);
  // The cached form of a written value: primed (the writer's own allocation), or parsed.
  StatusOr<std::shared_ptr<CachedObject>> Index(const store::KeyValue& kv);
  void Publish(const std::vector<CacheEvent>& events, const std::vector<CachedPtr>& prevs);
  void AdvanceWatchers();

  store::Store& store_;
  const std::string prefix_;
  const Indexer indexer_;
  const size_t history_limit_;
  const std::string thread_name_;

  std::mutex mu_;
  std::condition_variable fresh_cv_;
  std::map<std::string, CachedPtr, std::less<>> items_;
  std::deque<std::pair<CacheEvent, CachedPtr>> history_;  // event and the previous state
  store::Revision rev_ = 0;
  store::Revision history_start_ = 0;  // history covers (history_start_, rev_]
  std::vector<std::shared_ptr<Watcher>> watchers_;
  bool stopping_ = false;
  std::unique_ptr<store::Watch> store_watch_;
  std::thread pump_;

  const bool primable_;
};

}  // namespace kvol::apiserver
