// The VFS of sqlite_vfs.h: the default VFS, with writes gathered per file.
#include "store/sqlite_vfs.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

namespace kvol::store {
namespace {

constexpr char kName[] = "kvol-buffered-writes";
// Written out when this much is held, whatever comes next.
constexpr size_t kMaxHeld = 1 << 20;
// The most passed on in one call: SQLite's own writes are at most a 64 KiB page, and its unix
// VFS takes no more than 128 KiB in one call (it masks the length).
constexpr size_t kMaxCall = 64 << 10;
// A WAL frame header: page number, then the database size in pages after a commit (0 in every
// other frame), then salts and checksums.
constexpr int kFrameHeader = 24;

std::atomic<int64_t> writes_passed_on{0};

// What a file holds back: bytes for [offset, offset + bytes.size()) of the file.
struct Held {
  bool wal = false;
  std::string bytes;
  sqlite3_int64 offset = 0;
  // The last frame header written was a commit frame's: the page after it ends a transaction.
  bool commit_frame = false;
};

struct File {
  sqlite3_file base;   // pMethods: kMethods once open
  sqlite3_file* real;  // the default VFS's file, in the memory after this struct
  Held* held;          // null: writes go straight through (temporary files, journals)
};

sqlite3_vfs* Real(sqlite3_vfs* vfs) { return static_cast<sqlite3_vfs*>(vfs->pAppData); }
File* Of(sqlite3_file* f) { return reinterpret_cast<File*>(f); }
sqlite3_file* RealOf(sqlite3_file* f) { return Of(f)->real; }
const sqlite3_io_methods& M(sqlite3_file* f) { return *RealOf(f)->pMethods; }

// Writes out what `f` holds, kMaxCall bytes at a time. What could not be written stays held,
// and every later call on the file tries it again first and fails while it fails: SQLite
// ignores the result of SQLITE_FCNTL_CKPT_DONE, so a checkpoint whose pages did not reach the
// file must fail at the truncate or sync that follows, and keep the WAL.
int Flush(sqlite3_file* f) {
  Held* h = Of(f)->held;
  if (h == nullptr || h->bytes.empty()) return SQLITE_OK;
  size_t done = 0;
  while (done < h->bytes.size()) {
    const size_t n = std::min(kMaxCall, h->bytes.size() - done);
    writes_passed_on.fetch_add(1, std::memory_order_relaxed);
    const int rc = M(f).xWrite(RealOf(f), h->bytes.data() + done, static_cast<int>(n),
                               h->offset + static_cast<sqlite3_int64>(done));
    if (rc != SQLITE_OK) {
      h->bytes.erase(0, done);
      h->offset += static_cast<sqlite3_int64>(done);
      return rc;
    }
    done += n;
  }
  h->bytes.clear();
  return SQLITE_OK;
}

int Close(sqlite3_file* f) {
  const int flushed = Flush(f);
  const int rc = M(f).xClose(RealOf(f));
  delete Of(f)->held;
  Of(f)->held = nullptr;
  return flushed != SQLITE_OK ? flushed : rc;
}

int Read(sqlite3_file* f, void* out, int n, sqlite3_int64 offset) {
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return M(f).xRead(RealOf(f), out, n, offset);
}

int Write(sqlite3_file* f, const void* data, int n, sqlite3_int64 offset) {
  Held* h = Of(f)->held;
  if (h == nullptr) {
    writes_passed_on.fetch_add(1, std::memory_order_relaxed);
    return M(f).xWrite(RealOf(f), data, n, offset);
  }
  const auto* bytes = static_cast<const char*>(data);
  const sqlite3_int64 end = h->offset + static_cast<sqlite3_int64>(h->bytes.size());
  if (!h->bytes.empty() && offset >= h->offset && offset + n <= end) {
    std::memcpy(h->bytes.data() + (offset - h->offset), bytes, static_cast<size_t>(n));
  } else if (!h->bytes.empty() && offset == end) {
    h->bytes.append(bytes, static_cast<size_t>(n));
  } else {
    if (int rc = Flush(f); rc != SQLITE_OK) return rc;
    h->offset = offset;
    h->bytes.assign(bytes, static_cast<size_t>(n));
  }
  bool transaction_ends = false;
  if (h->wal && n == kFrameHeader) {
    const auto* u = reinterpret_cast<const unsigned char*>(bytes);
    h->commit_frame = (u[4] | u[5] | u[6] | u[7]) != 0;
  } else if (h->wal && h->commit_frame) {
    h->commit_frame = false;
    transaction_ends = true;
  }
  if (transaction_ends || h->bytes.size() >= kMaxHeld) return Flush(f);
  return SQLITE_OK;
}

int Truncate(sqlite3_file* f, sqlite3_int64 size) {
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return M(f).xTruncate(RealOf(f), size);
}

int Sync(sqlite3_file* f, int flags) {
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return M(f).xSync(RealOf(f), flags);
}

int FileSize(sqlite3_file* f, sqlite3_int64* size) {
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return M(f).xFileSize(RealOf(f), size);
}

int Lock(sqlite3_file* f, int level) {
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return M(f).xLock(RealOf(f), level);
}

int Unlock(sqlite3_file* f, int level) {
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return M(f).xUnlock(RealOf(f), level);
}

int CheckReservedLock(sqlite3_file* f, int* out) { return M(f).xCheckReservedLock(RealOf(f), out); }

int FileControl(sqlite3_file* f, int op, void* arg) {
  if (op == SQLITE_FCNTL_CKPT_DONE) {
    if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  }
  return M(f).xFileControl(RealOf(f), op, arg);
}

int SectorSize(sqlite3_file* f) { return M(f).xSectorSize(RealOf(f)); }
int DeviceCharacteristics(sqlite3_file* f) { return M(f).xDeviceCharacteristics(RealOf(f)); }

int ShmMap(sqlite3_file* f, int page, int size, int extend, void volatile** out) {
  if (M(f).iVersion < 2) return SQLITE_IOERR_SHMMAP;
  return M(f).xShmMap(RealOf(f), page, size, extend, out);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  if (M(f).iVersion < 2) return SQLITE_IOERR_SHMLOCK;
  return M(f).xShmLock(RealOf(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) {
  if (M(f).iVersion >= 2) M(f).xShmBarrier(RealOf(f));
}
int ShmUnmap(sqlite3_file* f, int remove) {
  if (M(f).iVersion < 2) return SQLITE_OK;
  return M(f).xShmUnmap(RealOf(f), remove);
}

int Fetch(sqlite3_file* f, sqlite3_int64 offset, int n, void** out) {
  *out = nullptr;
  if (M(f).iVersion < 3) return SQLITE_OK;  // no mapping: SQLite reads instead
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return M(f).xFetch(RealOf(f), offset, n, out);
}
int Unfetch(sqlite3_file* f, sqlite3_int64 offset, void* p) {
  if (M(f).iVersion < 3) return SQLITE_OK;
  return M(f).xUnfetch(RealOf(f), offset, p);
}

constexpr sqlite3_io_methods kMethods = {
    3,
    Close,
    Read,
    Write,
    Truncate,
    Sync,
    FileSize,
    Lock,
    Unlock,
    CheckReservedLock,
    FileControl,
    SectorSize,
    DeviceCharacteristics,
    ShmMap,
    ShmLock,
    ShmBarrier,
    ShmUnmap,
    Fetch,
    Unfetch,
};

// The real file lives after our struct, aligned as SQLite aligns what it allocates.
constexpr int kRealOffset = static_cast<int>((sizeof(File) + 7) & ~size_t{7});

int Open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
  File* file = Of(f);
  file->base.pMethods = nullptr;  // until open: SQLite then does not close it
  file->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(f) + kRealOffset);
  file->held = nullptr;
  const int rc = Real(vfs)->xOpen(Real(vfs), name, file->real, flags, out_flags);
  if (rc != SQLITE_OK) {
    if (file->real->pMethods != nullptr) file->real->pMethods->xClose(file->real);
    return rc;
  }
  if ((flags & (SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_DB)) != 0) {
    file->held = new Held;
    file->held->wal = (flags & SQLITE_OPEN_WAL) != 0;
  }
  file->base.pMethods = &kMethods;
  return SQLITE_OK;
}

int Delete(sqlite3_vfs* vfs, const char* name, int sync_dir) {
  return Real(vfs)->xDelete(Real(vfs), name, sync_dir);
}
int Access(sqlite3_vfs* vfs, const char* name, int flags, int* out) {
  return Real(vfs)->xAccess(Real(vfs), name, flags, out);
}
int FullPathname(sqlite3_vfs* vfs, const char* name, int n, char* out) {
  return Real(vfs)->xFullPathname(Real(vfs), name, n, out);
}
void* DlOpen(sqlite3_vfs* vfs, const char* name) { return Real(vfs)->xDlOpen(Real(vfs), name); }
void DlError(sqlite3_vfs* vfs, int n, char* out) { Real(vfs)->xDlError(Real(vfs), n, out); }
void (*DlSym(sqlite3_vfs* vfs, void* handle, const char* symbol))(void) {
  return Real(vfs)->xDlSym(Real(vfs), handle, symbol);
}
void DlClose(sqlite3_vfs* vfs, void* handle) { Real(vfs)->xDlClose(Real(vfs), handle); }
int Randomness(sqlite3_vfs* vfs, int n, char* out) {
  return Real(vfs)->xRandomness(Real(vfs), n, out);
}
int Sleep(sqlite3_vfs* vfs, int micros) { return Real(vfs)->xSleep(Real(vfs), micros); }
int CurrentTime(sqlite3_vfs* vfs, double* out) { return Real(vfs)->xCurrentTime(Real(vfs), out); }
int GetLastError(sqlite3_vfs* vfs, int n, char* out) {
  return Real(vfs)->xGetLastError(Real(vfs), n, out);
}
int CurrentTimeInt64(sqlite3_vfs* vfs, sqlite3_int64* out) {
  return Real(vfs)->xCurrentTimeInt64(Real(vfs), out);
}

}  // namespace

const char* BufferedWritesVfs() {
  static sqlite3_vfs vfs;
  static const char* registered = []() -> const char* {
    sqlite3_vfs* real = sqlite3_vfs_find(nullptr);
    if (real == nullptr || real->iVersion < 2) return nullptr;
    vfs.iVersion = 2;
    vfs.szOsFile = kRealOffset + real->szOsFile;
    vfs.mxPathname = real->mxPathname;
    vfs.zName = kName;
    vfs.pAppData = real;
    vfs.xOpen = Open;
    vfs.xDelete = Delete;
    vfs.xAccess = Access;
    vfs.xFullPathname = FullPathname;
    vfs.xDlOpen = DlOpen;
    vfs.xDlError = DlError;
    vfs.xDlSym = DlSym;
    vfs.xDlClose = DlClose;
    vfs.xRandomness = Randomness;
    vfs.xSleep = Sleep;
    vfs.xCurrentTime = CurrentTime;
    vfs.xGetLastError = GetLastError;
    vfs.xCurrentTimeInt64 = CurrentTimeInt64;
    if (sqlite3_vfs_register(&vfs, 0) != SQLITE_OK) return nullptr;
    return kName;
  }();
  return registered;
}

int64_t BufferedWritesVfsWritesForTest() {
  return writes_passed_on.load(std::memory_order_relaxed);
}

}  // namespace kvol::store
