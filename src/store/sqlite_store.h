// The embedded store: state in memory (MvccIndex), durability in SQLite. Writers hand their
// operations to one committer thread that batches all waiting writes into one transaction (group
// commit), so throughput does not fall to one fsync per write; under load it waits a moment for
// the writers it has just answered, so that their next writes share a transaction too. A write
// is acknowledged only after its transaction is committed, so a crash (SIGKILL at any moment)
// loses no acknowledged write. History is compacted in the background once it exceeds a number
// of revisions.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "store/store.h"

namespace kvol::store {

struct SqliteOptions {
  std::string path;                      // the database file; created if absent
  bool fsync = true;                     // synchronous=FULL (power-loss safe) vs NORMAL
  int64_t retain_revisions = 50'000;     // history kept for watches and paged lists
  int64_t compact_every = 10'000;        // compact after this many new revisions
  size_t max_batch = 4096;               // writes per transaction at most
  // Group commit, with fsync on: after a transaction that answered 4 or more writers (calls
  // of Create, Update, Delete or WriteMany), the committer waits up to this long for as many
  // writers again before it starts the next one. Writers it has just answered usually write
  // again at once, and one transaction (one fsync) for all of them costs far less than two.
  // Writes that come one at a time never wait (only the first after a burst may, once).
  // 0: commit at once, always.
  std::chrono::microseconds group_commit_wait{500};
  // The committer thread's nice value relative to the thread that opens the store, where
  // the process may raise a thread's priority (CAP_SYS_NICE or RLIMIT_NICE; otherwise it runs
  // at the opener's). Every write waits for that one thread, but under a burst it shares the
  // cores with all the threads it serves, and each writer it wakes used to take the CPU from
  // it at once. 0: leave it as the opener's.
  int committer_nice_offset = -10;
  // Called on the committer thread as each transaction begins, with how many writes and how
  // many writers it carries (for tests and diagnostics; the committer waits for it).
  std::function<void(size_t writes, size_t writers)> on_transaction;
};

// Opens (or creates) the store. Errors: Unavailable/Internal with SQLite's message when the
// file cannot be opened, is not a kvol database, or is locked by another process.
StatusOr<std::unique_ptr<Store>> OpenSqliteStore(const SqliteOptions& opts);

}  // namespace kvol::store
