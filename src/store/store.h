// The versioned key-value store underneath the API server. Every write gets the next value of
// one global, strictly increasing revision, which becomes the object's resourceVersion. Backends:
// SQLite (embedded, the default; sqlite_store.h) and etcd v3 (etcd_store.h). Both pass the same
// conformance suite (store_conformance_test.cc).
//
// All methods are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kvol::store {

using Revision = int64_t;

// A stored value: the text as written, immutable once written and shared between the store,
// its history and watchers. A reader that decodes the text may leave what it decoded with the
// value (`memo`, tagged with the reader that left it: an id never used twice in a process), so
// that the next reader of the same value finds it without a lookup; the API's registries do,
// each under its own lock.
//
// `primed` is a hand-off from the writer to the one reader that follows the value's watch
// event (the API's watch cache): what the writer already derived from the text, set before
// the value is written and taken once by that reader, so that the event is not parsed again.
// The store's commit orders the two, so it needs no lock of its own; no other reader may touch
// it.
struct StoredText : std::string {
  explicit StoredText(std::string s) : std::string(std::move(s)) {}
  mutable std::weak_ptr<const void> memo;
  mutable uint64_t memo_owner = 0;
  mutable std::shared_ptr<void> primed;
};
// A fresh memo_owner id.
inline uint64_t NewMemoOwner() {
  static std::atomic<uint64_t> next{0};
  return ++next;
}
using Value = std::shared_ptr<const StoredText>;

inline Value MakeValue(std::string s) { return std::make_shared<const StoredText>(std::move(s)); }

struct KeyValue {
  std::string key;
  Value value;
  Revision create_revision = 0;  // revision of the write that created the key
  Revision mod_revision = 0;     // revision of the last write to the key
};

struct Event {
  enum class Type { kAdded, kModified, kDeleted };
  Type type = Type::kAdded;
  // After the change. For kDeleted: the last value before the delete, with mod_revision set to
  // the revision of the delete.
  KeyValue kv;
  // Before the change; absent for kAdded.
  std::optional<KeyValue> prev;

  Revision revision() const { return kv.mod_revision; }
};

struct RangeOptions {
  std::string prefix;       // keys that start with this
  std::string start_after;  // continue: only keys greater than this (empty: from the start)
  int64_t limit = 0;        // at most this many (0: all)
  Revision revision = 0;    // read as of this revision (0: the current one)
};

struct RangeResult {
  std::vector<KeyValue> kvs;  // in key order
  Revision revision = 0;      // the revision the range was read at
  bool more = false;          // more keys follow the last one returned
};

// A stream of events for one key prefix, in revision order, without gaps or duplicates.
class Watch {
 public:
  virtual ~Watch() = default;

  // Waits up to `timeout` for events and returns all available, oldest first; an empty vector
  // means the wait timed out. Errors: OutOfRange when the watch fell behind history that was
  // compacted (or it was too slow to keep up), Cancelled after Close() or when the store shuts
  // down, Unavailable when the backend connection is lost. After an error the watch is done.
  virtual StatusOr<std::vector<Event>> Next(std::chrono::milliseconds timeout) = 0;

  // Ends the watch and wakes a blocked Next(). Idempotent.
  virtual void Close() = 0;

  // A revision R such that every event with revision <= R has been returned by Next() (writes
  // to other prefixes count as delivered). Only grows. Lets a cache built on the watch know how
  // fresh it is even when its prefix is quiet.
  virtual Revision Progress() = 0;
  // Asks the store to report its current revision as progress soon: a blocked Next() returns
  // (possibly with no events) once Progress() has caught up. Thread-safe.
  virtual void RequestProgress() = 0;
};
using WatchPtr = std::unique_ptr<Watch>;

// One write of several handed to Store::WriteMany: Create (`expected` unused), Update or Delete.
struct Write {
  enum class Kind { kCreate, kUpdate, kDelete };
  Kind kind = Kind::kUpdate;
  std::string key;
  Value value;  // null for kDelete
  Revision expected = 0;
  // The index of an earlier write of the same WriteMany that must be made for this one to be
  // (-1: none). If that one fails, this one is answered Aborted and not made.
  int after = -1;
};

class Store {
 public:
  virtual ~Store() = default;

  // True if watch events carry the very Value objects passed to Create and Update (an
  // in-process store), so a writer may attach what it knows about a value it writes.
  virtual bool WatchSharesValues() const { return false; }

  // The key as of `revision` (0: current). NotFound if absent; OutOfRange if the revision was
  // compacted or is in the future.
  virtual StatusOr<KeyValue> Get(std::string_view key, Revision revision = 0) = 0;

  // Keys under a prefix, in key order, at one revision (see RangeOptions). OutOfRange if the
  // revision was compacted or is in the future.
  virtual StatusOr<RangeResult> Range(const RangeOptions& opts) = 0;

  // Creates a key that must not exist; returns its revision. AlreadyExists if it does.
  virtual StatusOr<Revision> Create(std::string_view key, Value value) = 0;

  // Replaces the value of an existing key whose mod_revision equals `expected` (compare and
  // swap); returns the new revision. NotFound if absent; Aborted if the key changed since.
  virtual StatusOr<Revision> Update(std::string_view key, Value value, Revision expected) = 0;

  // Deletes a key whose mod_revision equals `expected` (0: whatever it is); returns the
  // revision of the delete. NotFound if absent; Aborted if the key changed since.
  virtual StatusOr<Revision> Delete(std::string_view key, Revision expected) = 0;

  // Several writes, each decided and answered exactly as the single call would be, in order
  // (a later write sees the earlier ones); not a transaction: some may fail while others
  // succeed, except that a write naming another (`Write::after`) is made only if that one is.
  // A backend may commit them together, so a caller with many writes to make waits once rather
  // than once per write; where it does, a write is never durable before the one it names. The
  // default makes them one at a time.
  virtual std::vector<StatusOr<Revision>> WriteMany(std::vector<Write> writes) {
    std::vector<StatusOr<Revision>> out;
    out.reserve(writes.size());
    for (auto& w : writes) {
      if (Status s = CheckAfter(w, out); !s.ok()) {
        out.push_back(std::move(s));
        continue;
      }
      switch (w.kind) {
        case Write::Kind::kCreate:
          out.push_back(Create(w.key, std::move(w.value)));
          break;
        case Write::Kind::kUpdate:
          out.push_back(Update(w.key, std::move(w.value), w.expected));
          break;
        case Write::Kind::kDelete:
          out.push_back(Delete(w.key, w.expected));
          break;
      }
    }
    return out;
  }

  // Events for keys under `prefix` with revision > `after` (0: from now on). OutOfRange
  // ("too old") if revisions after `after` were compacted away.
  virtual StatusOr<WatchPtr> Watch(std::string_view prefix, Revision after) = 0;

  // Forgets history before `revision`: reads and watches from older revisions fail with
  // OutOfRange afterwards. Compacting to an already compacted revision is a no-op.
  virtual Status Compact(Revision revision) = 0;

  // The newest revision (of the last successful write), and the oldest readable one.
  virtual StatusOr<Revision> CurrentRevision() = 0;
  virtual StatusOr<Revision> CompactedRevision() = 0;

 protected:
  // For WriteMany: OK unless `w` names an earlier write (`w.after`) that `earlier` (the
  // answers so far) says failed, or names none of them.
  static Status CheckAfter(const Write& w, const std::vector<StatusOr<Revision>>& earlier) {
    if (w.after < 0) return OkStatus();
    if (static_cast<size_t>(w.after) >= earlier.size()) {
      return InvalidArgumentError("write of key \"" + w.key + "\" follows write " +
                                  std::to_string(w.after) + ", which is not before it");
    }
    if (earlier[w.after].ok()) return OkStatus();
    return NotMade(w, earlier[w.after].status());
  }
  // The answer of a write not made because the one it follows failed with `cause`.
  static Status NotMade(const Write& w, const Status& cause) {
    return AbortedError("write of key \"" + w.key + "\" not made: the write it follows failed: " +
                        cause.message());
  }
};
using StorePtr = std::unique_ptr<Store>;

// The message stores use for history that is gone, so clients can recognise it.
inline constexpr std::string_view kCompactedMessage = "required revision has been compacted";

}  // namespace kvol::store
