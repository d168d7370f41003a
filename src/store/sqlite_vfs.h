// A SQLite VFS that gathers the small writes of a transaction into one system call each.
//
// In WAL mode SQLite writes every frame of a transaction with two calls (its 24-byte header,
// then the page), and a checkpoint copies each page to the database file with a call of its
// own. On a busy store that was two to three pwrite calls per write, each paying for the
// system call and the filesystem's bookkeeping. This VFS forwards everything to the default
// one, except that writes to the WAL and the database file are held in memory while they run
// on from each other and written together:
// - a WAL transaction's frames when its commit frame is complete (so a committed transaction
//   is in the file, as with the default VFS, before SQLite reports the commit: a crash of the
//   process loses nothing SQLite reported committed), or earlier if the buffer fills;
// - a checkpoint's pages when the checkpoint has copied them (SQLITE_FCNTL_CKPT_DONE);
// - in every case before the file is synced, read, truncated, sized, locked, unlocked,
//   mapped or closed, and before any write that does not continue or overwrite what is held.
// So the file, as anyone reads it and as it is synced, has had every write applied in order.
#pragma once

#include <cstdint>

namespace kvol::store {

// Registers the VFS once (thread-safe) and returns its name for sqlite3_open_v2; null if SQLite
// has no default VFS to wrap.
const char* BufferedWritesVfs();

// System calls that wrote to files opened through the VFS, since the process started (tests).
int64_t BufferedWritesVfsWritesForTest();

}  // namespace kvol::store
