// The embedded store: state in memory (MvccIndex), durability in SQLite. Writers hand their
// operations to one committer thread that batches all waiting writes into one transaction (group
// commit), so throughput does not fall to one fsync per write; under load it waits a moment for
// the writers it has just answered, so that their next writes share a transaction too. A write
// is acknowledged only after its transaction is committed, so a crash (SIGKILL at any moment)
// loses no acknowledged write. History is compacted in the background once it exceeds a number
// of revisions.
#pragma once

#include <chrono>
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
  // Group commit, with fsync on: after a transaction of at least 4 writes, the committer waits
  // up to this long for as many writes again before it starts the next one. Writers it has
  // just answered usually write again at once, and one transaction (one fsync) for all of
  // them costs far less than two. A lone writer never waits. 0: commit at once, always.
  std::chrono::microseconds group_commit_wait{500};
};

// Opens (or creates) the store. Errors: Unavailable/Internal with SQLite's message when the
// file cannot be opened, is not a kvol database, or is locked by another process.
StatusOr<std::unique_ptr<Store>> OpenSqliteStore(const SqliteOptions& opts);

}  // namespace kvol::store
