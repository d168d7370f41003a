// What only the SQLite backend promises: state survives a restart and a SIGKILL at any moment,
// one process owns the file, and background compaction keeps history and the file bounded.
#include "store/sqlite_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

namespace kvol::store {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kvol-sqlite-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    opts_.path = dir_ + "/kvol.db";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Store> Open() {
    auto s = OpenSqliteStore(opts_);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  std::string dir_;
  SqliteOptions opts_;
};

TEST_F(SqliteStoreTest, StateAndHistorySurviveARestart) {
  Revision r1, r2, r3;
  {
    auto s = Open();
    r1 = *s->Create("/a", MakeValue("1"));
    r2 = *s->Update("/a", MakeValue("2"), r1);
    r3 = *s->Create("/b", MakeValue("b"));
    ASSERT_TRUE(s->Delete("/b", r3).ok());
  }
  auto s = Open();
  EXPECT_EQ(*s->CurrentRevision(), r3 + 1);
  auto a = s->Get("/a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a->value, "2");
  EXPECT_EQ(a->create_revision, r1);
  EXPECT_EQ(a->mod_revision, r2);
  EXPECT_EQ(s->Get("/b").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*s->Get("/a", r1)->value, "1");
  // A watcher can resume across the restart.
  auto w = s->Watch("/", r1);
  ASSERT_TRUE(w.ok());
  auto evs = (*w)->Next(1s);
  ASSERT_TRUE(evs.ok());
  ASSERT_EQ(evs->size(), 3u);
  EXPECT_EQ((*evs)[0].revision(), r2);
  EXPECT_EQ((*evs)[2].type, Event::Type::kDeleted);
  // New writes continue the sequence.
  EXPECT_EQ(*s->Create("/c", MakeValue("c")), r3 + 2);
}

// No row records the current revision on each commit: after a restart it is the newest row's,
// or the compaction point's when compaction dropped the newest rows (a deletion's tombstone).
TEST_F(SqliteStoreTest, RevisionSurvivesARestartAfterCompactingTheNewestRowAway) {
  Revision deleted;
  {
    auto s = Open();
    Revision a = *s->Create("/a", MakeValue("a"));
    Revision b = *s->Create("/b", MakeValue("b"));
    deleted = *s->Delete("/b", b);
    ASSERT_GT(deleted, a);
    ASSERT_TRUE(s->Compact(deleted).ok());
    EXPECT_EQ(s->Get("/b").status().code(), StatusCode::kNotFound);
  }
  {
    auto s = Open();
    EXPECT_EQ(*s->CurrentRevision(), deleted);
    EXPECT_EQ(*s->CompactedRevision(), deleted);
    EXPECT_EQ(*s->Create("/c", MakeValue("c")), deleted + 1);
  }
  auto s = Open();
  EXPECT_EQ(*s->CurrentRevision(), deleted + 1);
  EXPECT_EQ(s->Get("/c")->mod_revision, deleted + 1);
}

TEST_F(SqliteStoreTest, OneProcessOwnsTheFile) {
  auto first = Open();
  ASSERT_TRUE(first);
  pid_t pid = fork();
  if (pid == 0) {
    auto second = OpenSqliteStore(opts_);
    _exit(second.ok() ? 0 : 3);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 3) << "a second process opened a database that is in use";
}

TEST_F(SqliteStoreTest, GarbageFileIsAnError) {
  { std::FILE* f = std::fopen(opts_.path.c_str(), "w"); std::fputs("not a database, just text\n", f); std::fclose(f); }
  auto s = OpenSqliteStore(opts_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find(opts_.path), std::string::npos) << s.status().ToString();
}

TEST_F(SqliteStoreTest, BackgroundCompactionBoundsHistoryAndFile) {
  opts_.retain_revisions = 2000;
  opts_.compact_every = 1000;
  auto s = Open();
  for (int k = 0; k < 50; ++k) ASSERT_TRUE(s->Create("/k" + std::to_string(k), MakeValue("v")).ok());
  const std::string payload(1000, 'x');
  uintmax_t size_after_warmup = 0;
  for (int round = 0; round < 8; ++round) {
    for (int i = 0; i < 2500; ++i) {
      std::string key = "/k" + std::to_string(i % 50);
      auto kv = s->Get(key);
      ASSERT_TRUE(kv.ok());
      ASSERT_TRUE(s->Update(key, MakeValue(payload + std::to_string(i)), kv->mod_revision).ok());
    }
    if (round == 2) size_after_warmup = fs::file_size(opts_.path) + fs::file_size(opts_.path + "-wal");
  }
  Revision current = *s->CurrentRevision();
  Revision compacted = *s->CompactedRevision();
  EXPECT_GT(compacted, 0);
  EXPECT_GE(compacted, current - opts_.retain_revisions - opts_.compact_every);
  uintmax_t size_end = fs::file_size(opts_.path) + fs::file_size(opts_.path + "-wal");
  // 20,000 updates of 1 KB: the file stays at the size of the retained history.
  EXPECT_LT(size_end, size_after_warmup * 3 / 2 + (1 << 20)) << size_after_warmup << " -> " << size_end;
  EXPECT_LT(size_end, 16u << 20);
}

// Background compaction drops versions in memory at once and deletes their rows with the next
// write's transaction (or in one of its own when nobody writes): the file, opened again, is at
// a compaction point whose history is whole.
TEST_F(SqliteStoreTest, CompactedRowsLeaveTheFileWithWritesAndWithout) {
  opts_.retain_revisions = 100;
  opts_.compact_every = 100;
  Revision compacted = 0, current = 0, created = 0;
  {
    auto s = Open();
    auto rev = s->Create("/one", MakeValue("0"));
    ASSERT_TRUE(rev.ok());
    created = *rev;  // update i is written at created + i
    for (int i = 1; i <= 1000; ++i) {
      auto kv = s->Get("/one");
      ASSERT_TRUE(kv.ok());
      ASSERT_TRUE(s->Update("/one", MakeValue(std::to_string(i)), kv->mod_revision).ok());
    }
    // Nobody writes now: the last slices' rows go on their own, after a short pause.
    std::this_thread::sleep_for(200ms);
    current = *s->CurrentRevision();
    compacted = *s->CompactedRevision();
    EXPECT_GE(compacted, current - opts_.retain_revisions - opts_.compact_every);
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(opts_.path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT COUNT(*), MIN(rev) FROM log", -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  const int64_t rows = sqlite3_column_int64(st, 0), oldest = sqlite3_column_int64(st, 1);
  sqlite3_finalize(st);
  sqlite3_close(db);
  // One version at or before the compaction point (the one visible there), the rest after.
  EXPECT_EQ(oldest, compacted);
  EXPECT_EQ(rows, current - compacted + 1);

  auto s = Open();
  EXPECT_EQ(*s->CompactedRevision(), compacted);
  for (Revision at = compacted; at <= current; ++at) {
    auto kv = s->Get("/one", at);
    ASSERT_TRUE(kv.ok()) << "at " << at << ": " << kv.status().ToString();
    EXPECT_EQ(*kv->value, std::to_string(at - created)) << "at " << at;
  }
}

// Opens the store with `opts` in a child process and runs `writes` on 4 threads of it, each
// with its number, the store and `ack`, which reports one acknowledged write as a line on a
// pipe (`writes` never returns; a failed write ends the child). Once `kill_after` lines have
// come, the child is killed with SIGKILL; `acked` gets every line it reported, including those
// still in the pipe.
using Ack = std::function<void(const std::string&)>;
void KillWhileWriting(const SqliteOptions& opts, size_t kill_after,
                      const std::function<void(int, Store&, const Ack&)>& writes,
                      std::vector<std::string>* acked) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    auto s = OpenSqliteStore(opts);
    if (!s.ok()) _exit(2);
    const Ack ack = [&](const std::string& what) {
      std::string line = what + "\n";
      if (write(fds[1], line.data(), line.size()) < 0) _exit(4);
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { writes(t, **s, ack); });
    for (auto& th : threads) th.join();
    _exit(0);
  }
  close(fds[1]);
  std::string buf;
  char chunk[4096];
  auto take = [&] {
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      acked->push_back(buf.substr(0, nl));
      buf.erase(0, nl + 1);
    }
  };
  while (acked->size() < kill_after) {
    ssize_t n = read(fds[0], chunk, sizeof chunk);
    ASSERT_GT(n, 0) << "writer died early";
    buf.append(chunk, static_cast<size_t>(n));
    take();
  }
  kill(pid, SIGKILL);
  // Acknowledgements already in the pipe count too.
  ssize_t n;
  while ((n = read(fds[0], chunk, sizeof chunk)) > 0) buf.append(chunk, static_cast<size_t>(n));
  take();
  close(fds[0]);
  int status;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
}

// SIGKILL while compaction runs beside the writes: every acknowledged write is there, and the
// history from the compaction point the file records onwards is whole.
TEST_F(SqliteStoreTest, SigkillWhileCompactingLosesNothingAndKeepsHistoryWhole) {
  opts_.retain_revisions = 50;
  opts_.compact_every = 50;
  std::vector<std::string> lines;
  ASSERT_NO_FATAL_FAILURE(KillWhileWriting(
      opts_, 3000,
      [](int t, Store& s, const Ack& ack) {
        const std::string key = "/c/" + std::to_string(t);
        auto rev = s.Create(key, MakeValue("0"));
        if (!rev.ok()) _exit(3);
        for (int i = 1;; ++i) {
          rev = s.Update(key, MakeValue(std::to_string(i)), *rev);
          if (!rev.ok()) _exit(3);
          ack(std::to_string(t) + " " + std::to_string(i));
        }
      },
      &lines));
  std::map<int, int> acked;  // thread -> last value acknowledged
  for (const auto& l : lines) {
    std::istringstream line(l);
    int t = 0, i = 0;
    line >> t >> i;
    acked[t] = std::max(acked[t], i);
  }

  auto s = Open();
  ASSERT_TRUE(s);
  const Revision compacted = *s->CompactedRevision(), current = *s->CurrentRevision();
  EXPECT_GT(compacted, 0);
  for (const auto& [t, i] : acked) {
    auto kv = s->Get("/c/" + std::to_string(t));
    ASSERT_TRUE(kv.ok());
    EXPECT_GE(std::stoi(*kv->value), i) << "thread " << t << "'s acknowledged update was lost";
  }
  // Every key reads at every revision from the compaction point on, and its values only grow.
  for (int t = 0; t < 4; ++t) {
    int last = -1;
    for (Revision at = compacted; at <= current; ++at) {
      auto kv = s->Get("/c/" + std::to_string(t), at);
      ASSERT_TRUE(kv.ok()) << "/c/" << t << " at " << at << ": " << kv.status().ToString();
      const int v = std::stoi(*kv->value);
      EXPECT_GE(v, last);
      last = v;
    }
  }
}

std::vector<Write> Creates(const std::string& prefix, int n) {
  std::vector<Write> w;
  for (int i = 0; i < n; ++i) {
    w.push_back({Write::Kind::kCreate, prefix + std::to_string(i), MakeValue("v"), 0});
  }
  return w;
}

TEST_F(SqliteStoreTest, BackgroundCompactionCatchesUpWithoutFurtherWrites) {
  opts_.retain_revisions = 100;
  opts_.compact_every = 100;
  auto s = Open();
  // 5,000 revisions in two transactions, each followed by one slice of compaction: the
  // rest must follow with nobody writing.
  for (auto& r : s->WriteMany(Creates("/bulk/", 5000))) ASSERT_TRUE(r.ok());
  const Revision target = *s->CurrentRevision() - opts_.retain_revisions;
  bool caught_up = false;
  for (int i = 0; i < 1000 && !caught_up; ++i) {
    caught_up = *s->CompactedRevision() >= target;
    if (!caught_up) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(caught_up) << "compacted to " << *s->CompactedRevision() << ", not " << target;
}

// Runs `f` on another thread; false if it has not returned within 30 s (a write held back
// for good), which fails the test instead of hanging it.
template <class F>
bool ReturnsPromptly(F f) {
  std::packaged_task<void()> task(std::move(f));
  auto done = task.get_future();
  std::thread(std::move(task)).detach();
  return done.wait_for(30s) == std::future_status::ready;
}

// Records how many writers each transaction answers, and can hold the committer at the start
// of the next transaction until released.
class Transactions {
 public:
  // Makes the store opened with `opts` report its transactions here.
  explicit Transactions(SqliteOptions& opts) {
    opts.on_transaction = [this](size_t /*writes*/, size_t writers) { Record(writers); };
  }
  void Record(size_t writers) {
    std::unique_lock lock(mu_);
    writers_.push_back(writers);
    changed_.notify_all();
    changed_.wait(lock, [&] { return !holding_; });
  }
  void Hold() {
    std::lock_guard lock(mu_);
    holding_ = true;
  }
  void Release() {
    std::lock_guard lock(mu_);
    holding_ = false;
    changed_.notify_all();
  }
  bool WaitForCount(size_t n) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, 30s, [&] { return writers_.size() >= n; });
  }
  std::vector<size_t> writers() {
    std::lock_guard lock(mu_);
    return writers_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<size_t> writers_;
  bool holding_ = false;
};

// Starts `n` threads, each creating one key.
std::vector<std::thread> CreateFromThreads(Store* s, const std::string& prefix, int n) {
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([s, key = prefix + std::to_string(i)] {
      EXPECT_TRUE(s->Create(key, MakeValue("v")).ok()) << key;
    });
  }
  return threads;
}

void JoinAll(std::vector<std::thread>& threads) {
  for (auto& t : threads) t.join();
  threads.clear();
}

// Makes the store's next two transactions answer one writer, then `n` (queued meanwhile).
void CommitFromThreadsTogether(Store* s, Transactions& tx, const std::string& prefix, int n) {
  const size_t before = tx.writers().size();
  tx.Hold();
  auto first = CreateFromThreads(s, prefix + "first-", 1);
  ASSERT_TRUE(tx.WaitForCount(before + 1));
  auto together = CreateFromThreads(s, prefix, n);
  std::this_thread::sleep_for(100ms);  // for them to queue
  tx.Release();
  JoinAll(first);
  JoinAll(together);
  auto writers = tx.writers();
  ASSERT_EQ(writers.size(), before + 2);
  ASSERT_EQ(writers.back(), static_cast<size_t>(n));
}

TEST_F(SqliteStoreTest, GroupCommitWaitsForAsManyWritersAsItLastAnswered) {
  Transactions tx(opts_);
  opts_.group_commit_wait = std::chrono::hours(1);  // only the count of writers releases them
  auto s = Open();

  ASSERT_NO_FATAL_FAILURE(CommitFromThreadsTogether(s.get(), tx, "/four/", 4));

  // The last transaction answered four writers: three more wait for a fourth, then all four
  // share one transaction. A WriteMany is one writer, whatever its size.
  auto three = CreateFromThreads(s.get(), "/three/", 3);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(tx.writers().size(), 2u) << "committed without waiting for a fourth writer";
  std::vector<StatusOr<Revision>> many;
  if (!ReturnsPromptly([&] { many = s->WriteMany(Creates("/many/", 10)); })) {
    ADD_FAILURE() << "four writers waiting, and still not committed";
    for (auto& t : three) t.detach();
    return;
  }
  JoinAll(three);
  for (auto& r : many) EXPECT_TRUE(r.ok());
  EXPECT_EQ(tx.writers(), (std::vector<size_t>{1, 4, 4}));
}

TEST_F(SqliteStoreTest, GroupCommitNeverHoldsALoneWriter) {
  Transactions tx(opts_);
  opts_.group_commit_wait = std::chrono::hours(1);
  auto s = Open();
  ASSERT_TRUE(ReturnsPromptly([&] {
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(s->Create("/k" + std::to_string(i), MakeValue("v")).ok());
    // However many writes one writer hands over at once.
    for (auto& r : s->WriteMany(Creates("/many/", 100))) ASSERT_TRUE(r.ok());
    ASSERT_TRUE(s->Create("/after-many", MakeValue("v")).ok());
  }));
  // Three writers at once are not yet enough to wait for.
  ASSERT_NO_FATAL_FAILURE(CommitFromThreadsTogether(s.get(), tx, "/three/", 3));
  ASSERT_TRUE(ReturnsPromptly([&] { ASSERT_TRUE(s->Create("/after-three", MakeValue("v")).ok()); }));
}

TEST_F(SqliteStoreTest, GroupCommitHoldsAWriterNoLongerThanItsWait) {
  Transactions tx(opts_);
  opts_.group_commit_wait = std::chrono::milliseconds(20);
  auto s = Open();
  ASSERT_NO_FATAL_FAILURE(CommitFromThreadsTogether(s.get(), tx, "/eight/", 8));
  // Fewer writers than last time, and no more coming: committed once the wait is over.
  ASSERT_TRUE(ReturnsPromptly([&] { ASSERT_TRUE(s->Create("/alone", MakeValue("v")).ok()); }));
  EXPECT_EQ(tx.writers(), (std::vector<size_t>{1, 8, 1}));
}

TEST_F(SqliteStoreTest, WithoutFsyncNoWriterIsHeld) {
  Transactions tx(opts_);
  opts_.fsync = false;
  opts_.group_commit_wait = std::chrono::hours(1);
  auto s = Open();
  ASSERT_NO_FATAL_FAILURE(CommitFromThreadsTogether(s.get(), tx, "/eight/", 8));
  ASSERT_TRUE(ReturnsPromptly([&] { ASSERT_TRUE(s->Create("/alone", MakeValue("v")).ok()); }));
}

// A writer sleeps until the batch holding its last write is answered. Writes that do not fit in
// the batch the writer first waits for land in later ones, while other writers come and go.
TEST_F(SqliteStoreTest, WritersAreAnsweredWhateverBatchesTheirWritesLandIn) {
  opts_.max_batch = 3;
  // Each transaction starts a little late, so that a writer woken by the one before, holding
  // only the first of its writes, finds its last not yet done.
  std::mutex mu;
  std::vector<size_t> batch_sizes;
  opts_.on_transaction = [&](size_t writes, size_t /*writers*/) {
    {
      std::lock_guard lock(mu);
      batch_sizes.push_back(writes);
    }
    std::this_thread::sleep_for(1ms);
  };
  auto s = Open();
  const Revision start = *s->CurrentRevision();
  std::vector<std::vector<StatusOr<Revision>>> results(8);
  ASSERT_TRUE(ReturnsPromptly([&] {
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        const std::string prefix = "/t" + std::to_string(t) + "/";
        for (int round = 0; round < 20; ++round) {
          // Alternately one write, and more than two batches' worth at once.
          auto writes = Creates(prefix + std::to_string(round) + "/", round % 2 ? 1 : 7);
          for (auto& r : s->WriteMany(std::move(writes))) results[t].push_back(std::move(r));
        }
      });
    }
    for (auto& t : threads) t.join();
  }));
  std::set<Revision> revisions;
  for (const auto& per_thread : results) {
    ASSERT_EQ(per_thread.size(), 80u);
    Revision last = start;
    for (const auto& r : per_thread) {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_GT(*r, last) << "a writer's writes commit in order";
      last = *r;
      EXPECT_TRUE(revisions.insert(*r).second) << "revision " << *r << " twice";
    }
  }
  EXPECT_EQ(*s->CurrentRevision(), start + static_cast<Revision>(revisions.size()));
  std::lock_guard lock(mu);
  for (size_t n : batch_sizes) EXPECT_LE(n, 3u);
  EXPECT_GE(batch_sizes.size(), 640u / 3);
}

// The nice values of this process's threads named `name`, from /proc/self/task/*/stat.
std::vector<int> NiceOfThreads(const std::string& name) {
  std::vector<int> out;
  for (const auto& task : fs::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string c;
    if (!std::getline(comm, c) || c != name) continue;
    std::ifstream stat(task.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // After "pid (comm) ": fields 3 to 18, then nice.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 18; ++i) rest >> field;
    int nice;
    if (rest >> nice) out.push_back(nice);
  }
  return out;
}

// A write that follows another in an earlier transaction (the batch split between them) is
// made only if that transaction made the other.
TEST_F(SqliteStoreTest, AWriteFollowsOneCommittedInAnEarlierTransaction) {
  opts_.max_batch = 1;
  std::vector<size_t> batch_sizes;
  opts_.on_transaction = [&](size_t writes, size_t) { batch_sizes.push_back(writes); };
  auto s = Open();
  const Revision a = *s->Create("/a", MakeValue("a1"));
  batch_sizes.clear();
  auto got = s->WriteMany({
      {Write::Kind::kUpdate, "/a", MakeValue("a2"), a + 1},  // stale
      {Write::Kind::kCreate, "/b", MakeValue("b1"), 0, /*after=*/0},
      {Write::Kind::kUpdate, "/a", MakeValue("a2"), a},
      {Write::Kind::kCreate, "/c", MakeValue("c1"), 0, /*after=*/2},
  });
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].status().code(), StatusCode::kAborted);
  EXPECT_EQ(got[1].status().code(), StatusCode::kAborted);
  ASSERT_TRUE(got[2].ok()) << got[2].status().ToString();
  ASSERT_TRUE(got[3].ok()) << got[3].status().ToString();
  EXPECT_EQ(batch_sizes, (std::vector<size_t>{1, 1, 1, 1})) << "one write per transaction";
  EXPECT_EQ(s->Get("/b").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*s->Get("/c")->value, "c1");
}

TEST_F(SqliteStoreTest, CommitterRunsAtItsOwnPriorityWherePermitted) {
  const int process_nice = getpriority(PRIO_PROCESS, 0);
  {
    auto s = Open();
    ASSERT_TRUE(s->Create("/k", MakeValue("v")).ok());
    // Root may raise a thread's priority, and anyone whose RLIMIT_NICE allows it; anyone
    // else leaves it at the process's.
    const int raised = std::max(process_nice - 10, -20);
    rlimit limit{};
    ASSERT_EQ(getrlimit(RLIMIT_NICE, &limit), 0);
    const bool permitted =
        geteuid() == 0 || limit.rlim_cur == RLIM_INFINITY ||
        20 - static_cast<long>(limit.rlim_cur) <= raised;
    const int expected = permitted ? raised : process_nice;
    EXPECT_EQ(NiceOfThreads("kvol-committer"), std::vector<int>{expected});
  }
  EXPECT_TRUE(NiceOfThreads("kvol-committer").empty()) << "the committer outlived its store";
  opts_.committer_nice_offset = 0;
  auto s = Open();
  ASSERT_TRUE(s->Create("/k2", MakeValue("v")).ok());  // the committer has started
  EXPECT_EQ(NiceOfThreads("kvol-committer"), std::vector<int>{process_nice});
}

// Writers still queued when the store closes are answered with an error, not left asleep.
TEST_F(SqliteStoreTest, WritersQueuedAtCloseAreAnswered) {
  Transactions tx(opts_);
  auto s = Open();
  tx.Hold();
  auto first = CreateFromThreads(s.get(), "/first/", 1);
  ASSERT_TRUE(tx.WaitForCount(1));  // the committer is held in its first transaction
  std::vector<Status> queued(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      queued[i] = s->Create("/queued/" + std::to_string(i), MakeValue("v")).status();
    });
  }
  std::this_thread::sleep_for(100ms);  // for them to queue
  std::thread closer([&] { s.reset(); });
  std::this_thread::sleep_for(50ms);  // for the close to begin
  tx.Release();
  ASSERT_TRUE(ReturnsPromptly([&] {
    closer.join();
    JoinAll(first);
    JoinAll(threads);
  }));
  for (const Status& st : queued) {
    EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
    EXPECT_NE(st.message().find("shutting down"), std::string::npos) << st.ToString();
  }
}

// A child process writes from several threads and reports each acknowledged key on a pipe; it is
// killed with SIGKILL mid-stream. Every acknowledged key must be there after reopening.
TEST_F(SqliteStoreTest, SigkillLosesNoAcknowledgedWrite) {
  for (int round = 0; round < 3; ++round) {
    std::vector<std::string> lines;
    ASSERT_NO_FATAL_FAILURE(KillWhileWriting(
        opts_, 1500 + 700 * static_cast<size_t>(round),
        [round](int t, Store& s, const Ack& ack) {
          for (int i = 0;; ++i) {
            std::string key = "/r" + std::to_string(round) + "/" + std::to_string(t) + "/" + std::to_string(i);
            if (!s.Create(key, MakeValue(std::string(200, 'v'))).ok()) _exit(3);
            ack(key);
          }
        },
        &lines));
    const std::set<std::string> acked(lines.begin(), lines.end());

    auto s = Open();
    ASSERT_TRUE(s);
    auto all = s->Range({"/r" + std::to_string(round) + "/", "", 0, 0});
    ASSERT_TRUE(all.ok());
    std::set<std::string> present;
    for (const auto& kv : all->kvs) {
      present.insert(kv.key);
      EXPECT_EQ(kv.value->size(), 200u) << kv.key << " is half-written";
    }
    for (const auto& k : acked) EXPECT_TRUE(present.count(k)) << "acknowledged " << k << " was lost";
    EXPECT_GE(present.size(), acked.size());
    // Revisions after the restart go on from the last committed one.
    Revision before = *s->CurrentRevision();
    EXPECT_EQ(*s->Create("/after-crash-" + std::to_string(round), MakeValue("x")), before + 1);
  }
}

}  // namespace
}  // namespace kvol::store
