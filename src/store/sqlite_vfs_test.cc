// The buffered-writes VFS: fewer write calls, the same file, and a committed transaction in the
// file even when the process dies without closing the database or syncing.
#include "store/sqlite_vfs.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace kvol::store {
namespace {

namespace fs = std::filesystem;

class BufferedWritesVfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kvol-vfs-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/t.db";
  }
  void TearDown() override {
    if (!mounted_.empty()) umount2(mounted_.c_str(), MNT_DETACH);
    fs::remove_all(dir_);
  }

  // Opens path_ through `vfs` (null: SQLite's default) in WAL mode.
  sqlite3* Open(const char* vfs, const char* synchronous) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs),
              SQLITE_OK);
    Exec(db, "PRAGMA journal_mode=WAL");
    Exec(db, std::string("PRAGMA synchronous=") + synchronous);
    Exec(db, "CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v BLOB)");
    return db;
  }
  static void Exec(sqlite3* db, const std::string& sql) {
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
        << sql << ": " << (err ? err : "");
    sqlite3_free(err);
  }
  // One transaction of `rows` rows of 1,000 bytes each, keys from `first`.
  static std::string InsertSql(int first, int rows) {
    std::string sql = "BEGIN;";
    for (int i = first; i < first + rows; ++i) {
      sql += "INSERT INTO t VALUES (" + std::to_string(i) + ", zeroblob(1000));";
    }
    return sql + "COMMIT;";
  }
  static void Insert(sqlite3* db, int first, int rows) { Exec(db, InsertSql(first, rows)); }
  // In a forked child: opens path_ through the VFS in WAL mode with `pragmas` and creates the
  // table, or exits with status 2.
  sqlite3* OpenInChild(const std::string& pragmas) {
    sqlite3* db = nullptr;
    const std::string sql =
        "PRAGMA journal_mode=WAL;" + pragmas + "CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB);";
    if (sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                        BufferedWritesVfs()) != SQLITE_OK ||
        sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      _exit(2);
    }
    return db;
  }
  // In a forked child: InsertSql's transaction, or exits with status 3.
  static void InsertInChild(sqlite3* db, int first, int rows) {
    if (sqlite3_exec(db, InsertSql(first, rows).c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      _exit(3);
    }
  }
  static int64_t Count(sqlite3* db, const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(s), SQLITE_ROW);
    const int64_t n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return n;
  }

  std::string dir_, path_;
  std::string mounted_;  // unmounted at the end
};

TEST_F(BufferedWritesVfsTest, ATransactionIsWrittenInOneCallAndReadsBackAsWritten) {
  ASSERT_NE(BufferedWritesVfs(), nullptr);
  sqlite3* db = Open(BufferedWritesVfs(), "FULL");
  Insert(db, 0, 10);  // the table's first pages
  // Twelve rows of 1,000 bytes fill three or more pages: with SQLite's own VFS, two write
  // calls (frame header, page) for each. Here the transaction is one call.
  int64_t before = BufferedWritesVfsWritesForTest();
  Insert(db, 10, 12);
  EXPECT_EQ(BufferedWritesVfsWritesForTest() - before, 1);
  // A larger transaction is written 64 KiB at a time: forty rows, ten pages and more.
  before = BufferedWritesVfsWritesForTest();
  Insert(db, 22, 40);
  const int64_t calls = BufferedWritesVfsWritesForTest() - before;
  EXPECT_GE(calls, 1);
  EXPECT_LE(calls, 2);

  // A checkpoint copies the pages into the database file (64 KiB at a time where they follow
  // each other); then the file holds everything.
  for (int i = 0; i < 20; ++i) Insert(db, 62 + 40 * i, 40);
  before = BufferedWritesVfsWritesForTest();
  Exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
  const int64_t pages = Count(db, "PRAGMA page_count");
  EXPECT_GT(pages, 200);
  EXPECT_LT(BufferedWritesVfsWritesForTest() - before, pages / 8);
  EXPECT_EQ(Count(db, "SELECT count(*) FROM t"), 862);
  ASSERT_EQ(sqlite3_close(db), SQLITE_OK);

  // The same file, read through SQLite's own VFS.
  sqlite3* plain = Open(nullptr, "FULL");
  EXPECT_EQ(Count(plain, "SELECT count(*) FROM t"), 862);
  EXPECT_EQ(Count(plain, "SELECT sum(length(v)) FROM t"), 862 * 1000);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(plain, "PRAGMA integrity_check", -1, &s, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "ok");
  sqlite3_finalize(s);
  sqlite3_close(plain);
}

TEST_F(BufferedWritesVfsTest, ACommittedTransactionIsInTheFileWhenTheProcessDies) {
  // With synchronous=NORMAL SQLite does not sync the WAL at commit: only the end of the
  // commit frame writes the transaction out. The child dies without closing the database.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    sqlite3* db = OpenInChild("PRAGMA synchronous=NORMAL;");
    for (int tx = 0; tx < 5; ++tx) InsertInChild(db, tx * 30, 30);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  sqlite3* db = Open(nullptr, "FULL");
  EXPECT_EQ(Count(db, "SELECT count(*) FROM t"), 150);
  sqlite3_close(db);
}

// A checkpoint whose pages cannot be written (the disk is full) fails and keeps the WAL, as
// with SQLite's own VFS, although the pages were held until SQLite said it had copied them.
TEST_F(BufferedWritesVfsTest, ACheckpointThatCannotWriteKeepsTheWal) {
  const std::string disk = dir_ + "/small";
  fs::create_directory(disk);
  ASSERT_EQ(mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=2m"), 0) << std::strerror(errno);
  mounted_ = disk;
  path_ = disk + "/t.db";
  const std::string filler = disk + "/filler";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    sqlite3* db = OpenInChild("PRAGMA synchronous=FULL; PRAGMA wal_autocheckpoint=0;");
    InsertInChild(db, 0, 200);
    // Fill what is left of the disk.
    std::ofstream fill(filler, std::ios::binary);
    const std::vector<char> block(4096, 'x');
    while (fill.write(block.data(), static_cast<std::streamsize>(block.size())) && fill.flush()) {
    }
    // The checkpoint cannot write the database file: it must fail.
    const int rc = sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
    _exit(rc == SQLITE_OK ? 4 : 0);  // and the process dies, the database left open
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  fs::remove(filler);
  sqlite3* db = Open(nullptr, "FULL");
  EXPECT_EQ(Count(db, "SELECT count(*) FROM t"), 200);
  sqlite3_close(db);
}

}  // namespace
}  // namespace kvol::store
