#include "base/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>

namespace kvol {
namespace {

using namespace std::chrono_literals;

// Waits up to 10 s for `pred`.
template <class Pred>
bool Eventually(Pred pred) {
  for (int i = 0; i < 1000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

TEST(WorkerPoolTest, BlockingTasksEachGetAThreadUpToTheLimit) {
  struct Case {
    const char* name;
    size_t max_threads;
    size_t tasks;
    size_t want_threads;
  };
  const Case cases[] = {
      {.name = "under the limit", .max_threads = 8, .tasks = 5, .want_threads = 5},
      {.name = "at the limit", .max_threads = 4, .tasks = 4, .want_threads = 4},
      {.name = "over the limit waits", .max_threads = 3, .tasks = 9, .want_threads = 3},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    WorkerPool pool({.max_threads = c.max_threads, .idle_exit = 30s, .thread_name = "test"});
    std::mutex mu;
    std::condition_variable cv;
    bool release = false;
    std::atomic<size_t> running{0}, done{0};
    for (size_t i = 0; i < c.tasks; ++i) {
      pool.Submit([&] {
        ++running;
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return release; });
        ++done;
      });
    }
    EXPECT_TRUE(Eventually([&] { return running.load() == c.want_threads; }));
    EXPECT_EQ(pool.threads(), c.want_threads);
    EXPECT_EQ(pool.queued(), c.tasks - c.want_threads);
    {
      std::lock_guard lock(mu);
      release = true;
    }
    cv.notify_all();
    EXPECT_TRUE(Eventually([&] { return done.load() == c.tasks; }));
    EXPECT_LE(pool.threads(), c.max_threads);
  }
}

TEST(WorkerPoolTest, IdleWorkersAreReusedThenExit) {
  WorkerPool pool({.max_threads = 16, .idle_exit = 200ms, .thread_name = "test"});
  std::atomic<int> done{0};
  // One at a time: the same worker takes each.
  for (int i = 0; i < 20; ++i) {
    pool.Submit([&] { ++done; });
    ASSERT_TRUE(Eventually([&] { return done.load() == i + 1; }));
  }
  EXPECT_LE(pool.threads(), 2u);
  EXPECT_TRUE(Eventually([&] { return pool.threads() == 0; }));
  // And a new one comes when work does.
  pool.Submit([&] { ++done; });
  EXPECT_TRUE(Eventually([&] { return done.load() == 21; }));
}

TEST(WorkerPoolTest, StopRunsWhatIsQueuedAndDropsWhatComesAfter) {
  std::atomic<int> done{0};
  WorkerPool pool({.max_threads = 1, .idle_exit = 30s, .thread_name = "test", .on_start = [&] {
                     std::this_thread::sleep_for(50ms);
                   }});
  for (int i = 0; i < 10; ++i) pool.Submit([&] { ++done; });
  pool.Stop();
  EXPECT_EQ(done.load(), 10);
  EXPECT_FALSE(pool.Submit([&] { ++done; }));
  EXPECT_EQ(done.load(), 10);
  EXPECT_EQ(pool.threads(), 0u);
}

}  // namespace
}  // namespace kvol
