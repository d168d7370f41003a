// SQLite backend: an append-only log of versions (one row per revision) plus a meta table, with
// every read served from the in-memory index.
//
//   log(rev INTEGER PRIMARY KEY, key BLOB, create_rev INTEGER, value BLOB)  -- value NULL: delete
//   meta(name TEXT PRIMARY KEY, value INTEGER)                              -- compacted, rev
//
// The current revision on opening is the newest of the log's last row, the compaction point
// (compaction may drop the newest rows, a deletion's tombstone) and meta's `rev`, which earlier
// versions wrote on every commit.
#include "store/sqlite_store.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/log.h"
#include "base/thread.h"
#include "store/mvcc.h"
#include "store/sqlite_vfs.h"

namespace kvol::store {
namespace {

// A prepared statement, finalized on destruction.
class Stmt {
 public:
  Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(s_); }
  sqlite3_stmt** out() { return &s_; }
  sqlite3_stmt* get() const { return s_; }

 private:
  sqlite3_stmt* s_ = nullptr;
};

Status SqliteError(sqlite3* db, std::string_view what) {
  return UnavailableError(std::string(what) + ": " + sqlite3_errmsg(db));
}

// A write waiting for the committer.
struct PendingWrite : Write {
  // Completion: the committer fills `result`, then sets `done`; the writer may return (and
  // free this) as soon as it sees `done`, so the committer touches nothing of it after.
  std::atomic<bool> done{false};
  StatusOr<Revision> result = Status(StatusCode::kUnknown, "not committed");
  // The last of its writer's writes (a WriteMany's complete in order): its batch answers
  // that writer.
  bool last = false;
  // The earlier write of the same WriteMany this one is made only after (Write::after).
  PendingWrite* follows = nullptr;
  // Answered before it was queued (it names no earlier write): the committer passes it by.
  bool answered = false;
  // Planned into the committer's transaction, and still so once it is committed: what a
  // write following this one checks.
  bool made = false;
};

// Where the writers of one batch sleep until the committer has answered it. Batches are
// numbered as the committer takes them from the queue; a writer whose last write was queued
// while batch n-1 was the newest taken waits for batch n on slot n % 2, and the committer,
// once it has answered batch n, wakes that slot's sleepers with one futex call. One call for
// the whole batch matters: the first writer woken takes the committer's CPU, so waking them
// one by one left the committer waiting behind each in turn. Two slots so that writers
// queueing for batch n+1 while batch n commits are not woken by n's answer.
class BatchAnswers {
 public:
  // Sleeps until batch `n` is answered and `done` is set (it may be answered by a later batch
  // if `n` was full: batches are answered in order).
  void Wait(uint32_t n, const std::atomic<bool>& done) {
    while (!done.load(std::memory_order_acquire)) {
      Slot& slot = slots_[n % 2];
      const uint32_t answered = slot.answered.load(std::memory_order_acquire);
      if (static_cast<int32_t>(answered - n) >= 0) {  // n answered, not ours: a later one
        if (done.load(std::memory_order_acquire)) break;
        ++n;
        continue;
      }
      slot.sleepers.fetch_add(1);
      syscall(SYS_futex, &slot.answered, FUTEX_WAIT_PRIVATE, answered, nullptr, nullptr, 0);
      slot.sleepers.fetch_sub(1);
    }
  }
  // Batch `n`'s writes are all done: wakes its writers.
  void Answer(uint32_t n) {
    Slot& slot = slots_[n % 2];
    slot.answered.store(n);
    if (slot.sleepers.load() > 0) {
      syscall(SYS_futex, &slot.answered, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
    }
  }

 private:
  struct Slot {
    // The number of the last batch answered on this slot; futex word (wraps harmlessly).
    std::atomic<uint32_t> answered{0};
    std::atomic<int> sleepers{0};
  };
  static_assert(sizeof(std::atomic<uint32_t>) == 4);
  Slot slots_[2];
};

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(SqliteOptions opts) : opts_(std::move(opts)) {}
  ~SqliteStore() override;

  Status Open();

  StatusOr<KeyValue> Get(std::string_view key, Revision revision) override {
    std::shared_lock lock(state_mu_);
    return index_.Get(key, revision);
  }
  StatusOr<RangeResult> Range(const RangeOptions& opts) override {
    std::shared_lock lock(state_mu_);
    return index_.Range(opts);
  }
  StatusOr<Revision> Create(std::string_view key, Value value) override {
    return Submit({Write::Kind::kCreate, std::string(key), std::move(value), 0});
  }
  StatusOr<Revision> Update(std::string_view key, Value value, Revision expected) override {
    return Submit({Write::Kind::kUpdate, std::string(key), std::move(value), expected});
  }
  StatusOr<Revision> Delete(std::string_view key, Revision expected) override {
    return Submit({Write::Kind::kDelete, std::string(key), nullptr, expected});
  }
  std::vector<StatusOr<Revision>> WriteMany(std::vector<Write> writes) override;
  StatusOr<WatchPtr> Watch(std::string_view prefix, Revision after) override;
  Status Compact(Revision revision) override;
  bool WatchSharesValues() const override { return true; }
  StatusOr<Revision> CurrentRevision() override {
    std::shared_lock lock(state_mu_);
    return index_.current();
  }
  StatusOr<Revision> CompactedRevision() override {
    std::shared_lock lock(state_mu_);
    return index_.compacted();
  }

 private:
  StatusOr<Revision> Submit(Write w);
  // Queues `writes` in order and waits until the last (so every one) is committed; false,
  // queueing nothing, when the store is shutting down.
  bool Enqueue(std::span<PendingWrite> writes);
  void CommitLoop();
  // A slice of background compaction, after a commit; true when it is behind (more to do).
  bool CompactInBackground();
  void CommitBatch(std::deque<PendingWrite*>& batch);
  // A write of a batch decided against the state as it will be after the writes before it.
  struct Planned {
    PendingWrite* w;
    Revision rev;
    Revision create;
    std::optional<MvccIndex::Entry> entry;  // the key's, found while planning
  };
  // Decides each write of `batch`: the ones to make, with their revisions; the others are
  // answered.
  std::vector<Planned> PlanBatch(std::deque<PendingWrite*>& batch);
  // The planned rows in one transaction, with (`with_deletes`) the rows compaction queued.
  Status WriteRows(const std::vector<Planned>& planned, bool with_deletes);
  // Marks every write of batch `n` done (their results filled) and wakes its writers; clears
  // `batch`. A writer may return (and free its PendingWrite) as soon as it sees `done`.
  void AnswerBatch(std::deque<PendingWrite*>& batch, uint32_t n);
  Status Exec(const char* sql);
  Status Load();
  // Drops history before `rev` in memory and on disk. Called on the committer thread.
  Status CompactLocked(Revision rev);
  // Drops history before `rev` in memory and queues the dropped versions' rows for deletion.
  Status CompactIndex(Revision rev);
  // Inside an open transaction: deletes the queued rows and records their compaction point.
  Status DeleteQueuedRows();
  // The queued rows deleted in a transaction of their own.
  Status FlushQueuedRows();

  const SqliteOptions opts_;
  sqlite3* db_ = nullptr;
  Stmt insert_, set_meta_, delete_rev_;

  // Guarded by state_mu_: the index. Readers share, the committer writes.
  std::shared_mutex state_mu_;
  MvccIndex index_;
  WatchHub hub_;

  // Guarded by queue_mu_: writes waiting for the committer.
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;   // the committer waits for work
  std::condition_variable done_cv_;    // Compact() waits for its compaction
  std::deque<PendingWrite*> queue_;
  uint32_t batches_taken_ = 0;         // the number of the newest batch taken from the queue
  size_t queued_writers_ = 0;          // Enqueue calls whose writes are all or partly queued
  size_t wake_at_ = 1;                 // Enqueue wakes the committer at this many writers
  Revision compact_request_ = 0;       // an explicit Compact() waiting to run
  Status compact_result_;
  uint64_t compactions_done_ = 0;
  bool stopping_ = false;
  BatchAnswers answers_;
  std::atomic<int> writers_inside_{0};  // Enqueue calls under way; the destructor waits for 0

  // Only the committer thread touches these.
  Revision last_auto_compact_ = 0;
  Revision auto_compact_target_ = 0;  // background compaction proceeds up to here
  // Rows of the versions compaction has dropped from memory but not yet from the file, and
  // the compaction point they complete. The next write's transaction deletes them, so that a
  // background slice costs no commit (no fsync) of its own; with no write to carry them, a
  // transaction of their own after a short pause. The compaction point is recorded only with
  // its deletions, so a crash between leaves the file at the earlier point, whole.
  std::vector<Revision> queued_deletes_;
  Revision queued_compacted_ = 0;
  // Revisions a background slice compacts: its deletions ride with one write's transaction,
  // so a slice adds that much to a commit. 250 was ahead of 1,000 in latency and throughput
  // (bench/RESULTS.md) and keeps up with some 80,000 revisions a second at the commit rate of
  // a busy store here.
  static constexpr Revision kCompactSlice = 250;
  // With no writes waiting, the next background compaction slice follows after this pause.
  static constexpr std::chrono::milliseconds kIdleCompactionPause{1};
  // A transaction answering this many writers means several at once: worth a group commit.
  static constexpr size_t kGroupCommitMinWriters = 4;
  std::thread committer_;

  // The values compaction drops, freed on a thread of their own: freeing a slice's worth (each
  // value's text and what readers made of it) took the committer milliseconds at a time on a
  // slow host, under the state lock, while the next writes waited for it.
  void ReleaseLoop();
  void Release(std::vector<Value> values);
  std::mutex release_mu_;
  std::condition_variable release_cv_;
  std::vector<Value> to_release_;
  bool release_stop_ = false;
  std::thread releaser_;
};

SqliteStore::~SqliteStore() {
  {
    std::lock_guard lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (committer_.joinable()) committer_.join();
  {
    std::lock_guard lock(release_mu_);
    release_stop_ = true;
  }
  release_cv_.notify_all();
  if (releaser_.joinable()) releaser_.join();
  // Writers answered on the way out may not have returned yet, and they still read the
  // answers' words: wait until the last has left before the store goes.
  while (writers_inside_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  hub_.Shutdown();
  if (db_) sqlite3_close_v2(db_);
}

Status SqliteStore::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return UnavailableError(std::string("sqlite: ") + m);
  }
  return OkStatus();
}

Status SqliteStore::Open() {
  // A transaction's WAL frames, and a checkpoint's pages, each written in one call.
  int rc = sqlite3_open_v2(opts_.path.c_str(), &db_,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           BufferedWritesVfs());
  if (rc != SQLITE_OK) {
    return UnavailableError("cannot open " + opts_.path + ": " +
                            (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc)));
  }
  sqlite3_busy_timeout(db_, 200);
  KVOL_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL"));
  KVOL_RETURN_IF_ERROR(Exec(opts_.fsync ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"));
  // Only this process may use the file: a second server on the same data would corrupt history.
  KVOL_RETURN_IF_ERROR(Exec("PRAGMA locking_mode=EXCLUSIVE"));
  KVOL_RETURN_IF_ERROR(Exec(
      "CREATE TABLE IF NOT EXISTS log (rev INTEGER PRIMARY KEY, key BLOB NOT NULL,"
      " create_rev INTEGER NOT NULL, value BLOB);"
      "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);"));
  // Taking the write lock now makes a second process fail here rather than later.
  KVOL_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE; COMMIT;"));
  if (sqlite3_prepare_v2(db_, "INSERT INTO log (rev, key, create_rev, value) VALUES (?,?,?,?)",
                         -1, insert_.out(), nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO meta (name, value) VALUES (?,?)", -1,
                         set_meta_.out(), nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db_, "DELETE FROM log WHERE rev = ?", -1, delete_rev_.out(),
                         nullptr) != SQLITE_OK) {
    return SqliteError(db_, "prepare");
  }
  KVOL_RETURN_IF_ERROR(Load());
  last_auto_compact_ = index_.current();
  releaser_ = std::thread([this] { ReleaseLoop(); });
  committer_ = std::thread([this] { CommitLoop(); });
  return OkStatus();
}

Status SqliteStore::Load() {
  Revision current = 0, compacted = 0;
  {
    Stmt s;
    if (sqlite3_prepare_v2(db_, "SELECT name, value FROM meta", -1, s.out(), nullptr) !=
        SQLITE_OK) {
      return SqliteError(db_, "read meta");
    }
    while (sqlite3_step(s.get()) == SQLITE_ROW) {
      std::string name = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0));
      if (name == "rev") current = sqlite3_column_int64(s.get(), 1);
      if (name == "compacted") compacted = sqlite3_column_int64(s.get(), 1);
    }
  }
  Stmt s;
  if (sqlite3_prepare_v2(db_, "SELECT rev, key, create_rev, value FROM log ORDER BY rev", -1,
                         s.out(), nullptr) != SQLITE_OK) {
    return SqliteError(db_, "read log");
  }
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    Revision rev = sqlite3_column_int64(s.get(), 0);
    std::string_view key(static_cast<const char*>(sqlite3_column_blob(s.get(), 1)),
                         static_cast<size_t>(sqlite3_column_bytes(s.get(), 1)));
    Revision create = sqlite3_column_int64(s.get(), 2);
    Value value;
    if (sqlite3_column_type(s.get(), 3) != SQLITE_NULL) {
      const void* blob = sqlite3_column_blob(s.get(), 3);
      value = MakeValue(std::string(static_cast<const char*>(blob),
                                    static_cast<size_t>(sqlite3_column_bytes(s.get(), 3))));
    }
    index_.Restore(key, rev, create, std::move(value), /*history=*/rev > compacted);
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, "read log");
  index_.SetRevisions(current, compacted);
  return OkStatus();
}

bool SqliteStore::Enqueue(std::span<PendingWrite> writes) {
  PendingWrite& last = writes.back();
  last.last = true;
  writers_inside_.fetch_add(1, std::memory_order_relaxed);
  // The writer's last touch of the store.
  auto leave = [&] { writers_inside_.fetch_sub(1, std::memory_order_release); };
  uint32_t batch;
  {
    std::unique_lock lock(queue_mu_);
    if (stopping_) {
      lock.unlock();
      leave();
      return false;
    }
    for (auto& w : writes) queue_.push_back(&w);
    if (++queued_writers_ >= wake_at_) queue_cv_.notify_one();
    batch = batches_taken_ + 1;
  }
  answers_.Wait(batch, last.done);
  leave();
  return true;
}

StatusOr<Revision> SqliteStore::Submit(Write w) {
  PendingWrite pending;
  static_cast<Write&>(pending) = std::move(w);
  if (!Enqueue({&pending, 1})) return UnavailableError("store is shutting down");
  return std::move(pending.result);
}

std::vector<StatusOr<Revision>> SqliteStore::WriteMany(std::vector<Write> writes) {
  std::vector<StatusOr<Revision>> out;
  if (writes.empty()) return out;
  // Queued together, so the committer takes them in order into as few batches as it can;
  // the last one's completion means all of them are complete.
  std::vector<PendingWrite> pending(writes.size());
  for (size_t i = 0; i < writes.size(); ++i) {
    static_cast<Write&>(pending[i]) = std::move(writes[i]);
    const int after = pending[i].after;
    if (after < 0) continue;
    if (static_cast<size_t>(after) >= i) {
      pending[i].result = CheckAfter(pending[i], {});
      pending[i].answered = true;
      continue;
    }
    pending[i].follows = &pending[after];
  }
  if (!Enqueue(pending)) {
    out.assign(writes.size(), UnavailableError("store is shutting down"));
    return out;
  }
  out.reserve(pending.size());
  for (auto& w : pending) out.push_back(std::move(w.result));
  return out;
}

void SqliteStore::CommitLoop() {
  SetThreadName("kvol-committer");
  if (opts_.committer_nice_offset != 0) {
    // Relative to the nice value it started with (the opening thread's), so that it is never
    // set below the threads it serves.
    const int nice = std::clamp(getpriority(PRIO_PROCESS, 0) + opts_.committer_nice_offset, -20, 19);
    if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice) != 0) {
      log::Info("store: the committer thread runs at the process's priority (setting nice " +
                std::to_string(nice) + ": " + std::strerror(errno) + ")");
    }
  }
  std::deque<PendingWrite*> batch;
  const bool group = opts_.fsync && opts_.group_commit_wait > std::chrono::microseconds(0);
  size_t last_writers = 0;  // how many writers the last transaction answered
  bool compaction_behind = false;
  bool flush_when_idle = true;  // false after a failed flush, until the next write
  while (true) {
    Revision compact = 0;
    uint32_t taken = 0;  // the batch's number
    {
      std::unique_lock lock(queue_mu_);
      auto ready = [&] { return stopping_ || !queue_.empty() || compact_request_ > 0; };
      if (compaction_behind || (queued_compacted_ != 0 && flush_when_idle)) {
        // Background compaction is behind (after a bulk load, say), or its rows wait for a
        // write to carry them, and nobody is writing: go on with it now, a slice at a time,
        // instead of leaving it to the next writers.
        queue_cv_.wait_for(lock, kIdleCompactionPause, ready);
      } else {
        queue_cv_.wait(lock, ready);
      }
      if (group && !queue_.empty() && last_writers >= kGroupCommitMinWriters &&
          queued_writers_ < last_writers) {
        wake_at_ = last_writers;
        queue_cv_.wait_for(lock, opts_.group_commit_wait, [&] {
          return stopping_ || queued_writers_ >= last_writers || compact_request_ > 0;
        });
        wake_at_ = 1;
      }
      if (stopping_) {
        for (PendingWrite* w : queue_) w->result = UnavailableError("store is shutting down");
        batch = std::move(queue_);
        queue_.clear();
        queued_writers_ = 0;
        const uint32_t n = ++batches_taken_;
        done_cv_.notify_all();
        lock.unlock();
        AnswerBatch(batch, n);
        // Compaction's queued rows, so that the file opens at the compaction point reached.
        if (Status s = FlushQueuedRows(); !s.ok()) log::Warn("store: compaction: " + s.message());
        return;
      }
      last_writers = 0;
      while (!queue_.empty() && batch.size() < opts_.max_batch) {
        batch.push_back(queue_.front());
        queue_.pop_front();
        if (batch.back()->last) ++last_writers;  // a writer's last write: it is answered now
      }
      queued_writers_ -= last_writers;
      if (!batch.empty()) taken = ++batches_taken_;
      compact = compact_request_;
    }
    if (!batch.empty()) {
      if (opts_.on_transaction) opts_.on_transaction(batch.size(), last_writers);
      CommitBatch(batch);
      flush_when_idle = true;
    } else if (compact == 0 && queued_compacted_ != 0 && flush_when_idle) {
      // No write came to carry the compaction's rows.
      if (Status s = FlushQueuedRows(); !s.ok()) {
        log::Warn("store: compaction: " + s.message());
        flush_when_idle = false;
      }
    }
    Status compacted = OkStatus();
    if (compact > 0) compacted = CompactLocked(compact);
    if (!batch.empty()) AnswerBatch(batch, taken);
    if (compact > 0) {
      std::lock_guard lock(queue_mu_);
      compact_request_ = 0;
      compact_result_ = compacted;
      ++compactions_done_;
      done_cv_.notify_all();
    }
    compaction_behind = CompactInBackground();
  }
}

bool SqliteStore::CompactInBackground() {
  // Background compaction keeps history (and the file) bounded under steady writes. It runs
  // after the batch's writers have their answer, a slice at a time, so that no write waits
  // for more than one slice of it; with no writes, slice follows slice after a short pause.
  Revision current, compacted_to;
  {
    std::shared_lock lock(state_mu_);
    current = index_.current();
    compacted_to = index_.compacted();
  }
  if (current - last_auto_compact_ >= opts_.compact_every &&
      current - opts_.retain_revisions > 0) {
    last_auto_compact_ = current;
    auto_compact_target_ = current - opts_.retain_revisions;
  }
  if (auto_compact_target_ > compacted_to && queued_deletes_.size() < kCompactSlice) {
    // In memory now; its rows go with the next write (or the next idle moment).
    const Revision to = std::min(auto_compact_target_, compacted_to + kCompactSlice);
    return CompactIndex(to).ok() && auto_compact_target_ > to;
  }
  return false;
}

void SqliteStore::AnswerBatch(std::deque<PendingWrite*>& batch, uint32_t n) {
  for (PendingWrite* w : batch) w->done.store(true, std::memory_order_release);
  batch.clear();
  answers_.Answer(n);
}

std::vector<SqliteStore::Planned> SqliteStore::PlanBatch(std::deque<PendingWrite*>& batch) {
  std::vector<Planned> planned;
  std::unordered_map<std::string_view, std::pair<Revision, Revision>> overlay;  // mod, create
  std::shared_lock lock(state_mu_);
  Revision next = index_.current();
  for (PendingWrite* w : batch) {
    if (w->answered) continue;
    // The write it follows is in this transaction, or was committed by an earlier one.
    if (w->follows && !w->follows->made) {
      w->result = NotMade(*w, w->follows->result.status());
      continue;
    }
    Revision mod = 0, create = 0;  // 0: absent
    std::optional<MvccIndex::Entry> entry;
    if (auto it = overlay.find(w->key); it != overlay.end()) {
      std::tie(mod, create) = it->second;
    } else if (const auto* v = index_.Latest(w->key, &entry)) {
      mod = v->mod;
      create = v->create;
    }
    switch (w->kind) {
      case Write::Kind::kCreate:
        if (mod != 0) {
          w->result = AlreadyExistsError("key \"" + w->key + "\" already exists");
          continue;
        }
        break;
      case Write::Kind::kUpdate:
      case Write::Kind::kDelete:
        if (mod == 0) {
          w->result = NotFoundError("key \"" + w->key + "\" not found");
          continue;
        }
        if (w->expected != 0 && w->expected != mod) {
          w->result = AbortedError("key \"" + w->key + "\" was modified: expected revision " +
                                   std::to_string(w->expected) + ", found " +
                                   std::to_string(mod));
          continue;
        }
        break;
    }
    const Revision rev = ++next;
    const bool is_delete = w->kind == Write::Kind::kDelete;
    const Revision new_create = w->kind == Write::Kind::kCreate ? rev : create;
    overlay[w->key] =
        is_delete ? std::make_pair(Revision{0}, Revision{0}) : std::make_pair(rev, new_create);
    planned.push_back({w, rev, new_create, entry});
    w->made = true;
  }
  return planned;
}

Status SqliteStore::WriteRows(const std::vector<Planned>& planned, bool with_deletes) {
  KVOL_RETURN_IF_ERROR(Exec("BEGIN"));
  for (const auto& p : planned) {
    sqlite3_stmt* st = insert_.get();
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, p.rev);
    sqlite3_bind_blob(st, 2, p.w->key.data(), static_cast<int>(p.w->key.size()), SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, p.w->kind == Write::Kind::kDelete ? 0 : p.create);
    if (p.w->value) {
      sqlite3_bind_blob(st, 4, p.w->value->data(), static_cast<int>(p.w->value->size()),
                        SQLITE_STATIC);
    } else {
      sqlite3_bind_null(st, 4);
    }
    if (sqlite3_step(st) != SQLITE_DONE) return SqliteError(db_, "write");
  }
  if (with_deletes) KVOL_RETURN_IF_ERROR(DeleteQueuedRows());
  // The current revision is the newest row's (or the compaction point's): no meta row is
  // written per commit, which would add a page to every commit's share of the log.
  return Exec("COMMIT");
}

void SqliteStore::CommitBatch(std::deque<PendingWrite*>& batch) {
  std::vector<Planned> planned = PlanBatch(batch);
  if (planned.empty()) return;

  const bool with_deletes = queued_compacted_ != 0;
  Status written = WriteRows(planned, with_deletes);
  if (!written.ok() && with_deletes) {
    // The writes do not fail for the compaction's sake: again without its rows, which wait.
    Exec("ROLLBACK").ok();
    written = WriteRows(planned, false);
  } else if (written.ok() && with_deletes) {
    queued_deletes_.clear();
    queued_compacted_ = 0;
  }
  if (!written.ok()) {
    Exec("ROLLBACK").ok();
    for (auto& p : planned) {
      p.w->result = written;
      p.w->made = false;
    }
    return;
  }

  // Durable: apply to memory, tell watchers, then acknowledge.
  std::vector<Event> events;
  events.reserve(planned.size());
  std::unique_lock lock(state_mu_);
  // Only this thread changes the index, so the entries found while planning are still its.
  for (auto& p : planned) {
    events.push_back(p.entry ? index_.Apply(*p.entry, p.w->value)
                             : index_.Apply(p.w->key, p.w->value));
    p.w->result = p.rev;
  }
  hub_.Publish(std::move(events), index_.current());
}

void SqliteStore::ReleaseLoop() {
  SetThreadName("kvol-release");
  std::unique_lock lock(release_mu_);
  while (true) {
    release_cv_.wait(lock, [&] { return release_stop_ || !to_release_.empty(); });
    std::vector<Value> values = std::move(to_release_);
    to_release_.clear();
    if (values.empty() && release_stop_) return;
    lock.unlock();
    values.clear();
    lock.lock();
  }
}

void SqliteStore::Release(std::vector<Value> values) {
  if (values.empty()) return;
  {
    std::lock_guard lock(release_mu_);
    if (to_release_.empty()) {
      to_release_ = std::move(values);
    } else {
      to_release_.insert(to_release_.end(), std::make_move_iterator(values.begin()),
                         std::make_move_iterator(values.end()));
    }
  }
  release_cv_.notify_one();
}

Status SqliteStore::CompactLocked(Revision rev) {
  KVOL_RETURN_IF_ERROR(CompactIndex(rev));
  return FlushQueuedRows();
}

Status SqliteStore::CompactIndex(Revision rev) {
  std::vector<Revision> dropped;
  std::vector<Value> released;
  {
    std::unique_lock lock(state_mu_);
    if (rev <= index_.compacted()) return OkStatus();
    if (rev > index_.current()) {
      return OutOfRangeError("cannot compact to revision " + std::to_string(rev) +
                             " beyond the current " + std::to_string(index_.current()));
    }
    dropped = index_.Compact(rev, &released);
  }
  Release(std::move(released));
  queued_deletes_.insert(queued_deletes_.end(), dropped.begin(), dropped.end());
  queued_compacted_ = rev;
  return OkStatus();
}

Status SqliteStore::DeleteQueuedRows() {
  for (Revision r : queued_deletes_) {
    sqlite3_stmt* st = delete_rev_.get();
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, r);
    if (sqlite3_step(st) != SQLITE_DONE) return SqliteError(db_, "compact");
  }
  sqlite3_stmt* meta = set_meta_.get();
  sqlite3_reset(meta);
  sqlite3_bind_text(meta, 1, "compacted", -1, SQLITE_STATIC);
  sqlite3_bind_int64(meta, 2, queued_compacted_);
  if (sqlite3_step(meta) != SQLITE_DONE) return SqliteError(db_, "compact");
  return OkStatus();
}

Status SqliteStore::FlushQueuedRows() {
  if (queued_compacted_ == 0) return OkStatus();
  KVOL_RETURN_IF_ERROR(Exec("BEGIN"));
  if (Status s = DeleteQueuedRows(); !s.ok()) {
    Exec("ROLLBACK").ok();
    return s;
  }
  KVOL_RETURN_IF_ERROR(Exec("COMMIT"));
  queued_deletes_.clear();
  queued_compacted_ = 0;
  return OkStatus();
}

Status SqliteStore::Compact(Revision revision) {
  std::unique_lock lock(queue_mu_);
  if (stopping_) return UnavailableError("store is shutting down");
  // One explicit compaction at a time; wait for a running one first.
  done_cv_.wait(lock, [&] { return compact_request_ == 0; });
  compact_request_ = revision;
  const uint64_t ticket = compactions_done_;
  queue_cv_.notify_one();
  done_cv_.wait(lock, [&] { return compactions_done_ > ticket || stopping_; });
  return compact_result_;
}

StatusOr<WatchPtr> SqliteStore::Watch(std::string_view prefix, Revision after) {
  // Holding the state lock while registering: no commit can slip between backlog and live.
  std::unique_lock lock(state_mu_);
  if (after == 0) after = index_.current();
  if (after < index_.compacted()) return OutOfRangeError(std::string(kCompactedMessage));
  return hub_.Add(std::string(prefix), index_.HistorySince(prefix, after), index_.current());
}

}  // namespace

StatusOr<std::unique_ptr<Store>> OpenSqliteStore(const SqliteOptions& opts) {
  auto store = std::make_unique<SqliteStore>(opts);
  if (Status s = store->Open(); !s.ok()) return s.Annotate(opts.path);
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace kvol::store
