// The work queue's guarantees, with a fake clock for delays.
#include "client/workqueue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "metrics/testing/text_format.h"
#include "os/testing/fake_clock.h"

namespace kvol::client {
namespace {

using namespace std::chrono_literals;

TEST(WorkQueueTest, DeduplicatesWaitingKeys) {
  os::testing::FakeClock clock;
  WorkQueue q(clock);
  q.Add("a");
  q.Add("b");
  q.Add("a");
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(q.Get(), "a");
  EXPECT_EQ(q.Get(), "b");
  EXPECT_EQ(q.Get(0ms), std::nullopt);
}

TEST(WorkQueueTest, NamedQueuesRecordClientGosMetrics) {
  os::testing::FakeClock clock;
  WorkQueue q(clock, {.name = "workqueue-test"});
  q.Add("a");
  q.Add("a");  // already queued: not an add
  q.Add("b");
  clock.Advance(2ms);
  EXPECT_EQ(q.Get(), "a");
  clock.Advance(300ms);
  q.Add("a");  // while a worker has it: an add, queued again at Done
  q.Done("a");
  q.AddRateLimited("c");

  auto text = metrics::testing::ParseText(metrics::Expose());
  ASSERT_TRUE(text.ok()) << text.status().message();
  const std::map<std::string, std::string> name = {{"name", "workqueue-test"}};
  auto value = [&](const char* family, std::map<std::string, std::string> labels) {
    auto v = text->Value(family, labels);
    return v.ok() ? *v : -1;
  };
  EXPECT_EQ(value("workqueue_adds_total", name), 3);
  EXPECT_EQ(value("workqueue_depth", name), 2);  // b, and a again
  EXPECT_EQ(value("workqueue_retries_total", name), 1);
  EXPECT_EQ(value("workqueue_queue_duration_seconds_count", name), 1);
  // 2ms in the queue: above the 1ms bucket, within 10ms.
  auto bucket = [&](const char* family, const char* le) {
    auto labels = name;
    labels["le"] = le;
    return value(family, labels);
  };
  EXPECT_EQ(bucket("workqueue_queue_duration_seconds_bucket", "0.001"), 0);
  EXPECT_EQ(bucket("workqueue_queue_duration_seconds_bucket", "0.01"), 1);
  EXPECT_EQ(bucket("workqueue_work_duration_seconds_bucket", "0.1"), 0);
  EXPECT_EQ(bucket("workqueue_work_duration_seconds_bucket", "1"), 1);
  EXPECT_EQ(q.Get(), "b");
}

TEST(WorkQueueTest, AKeyIsNotHandedOutTwiceAtOnce) {
  os::testing::FakeClock clock;
  WorkQueue q(clock);
  q.Add("a");
  EXPECT_EQ(q.Get(), "a");
  q.Add("a");  // while a worker has it
  q.Add("a");
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_EQ(q.Get(0ms), std::nullopt);
  q.Done("a");
  EXPECT_EQ(q.Len(), 1u);  // queued again, once
  EXPECT_EQ(q.Get(), "a");
  q.Done("a");
  EXPECT_EQ(q.Len(), 0u);

  // Done for a key no worker holds changes nothing: a queued key stays queued once.
  q.Add("b");
  q.Done("b");
  q.Done("c");
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(q.Get(), "b");
  q.Done("b");
  q.Add("b");  // done and forgotten: queued afresh
  EXPECT_EQ(q.Get(), "b");
  EXPECT_EQ(q.Get(0ms), std::nullopt);
}

TEST(WorkQueueTest, GetBatchHandsOutWhatIsQueuedUpToItsLimit) {
  os::testing::FakeClock clock;
  WorkQueue q(clock);
  for (auto k : {"a", "b", "c", "a", "d"}) q.Add(k);
  EXPECT_EQ(q.GetBatch(3), (std::vector<std::string>{"a", "b", "c"}));
  q.Add("b");  // while handed out: queued again on Done
  EXPECT_EQ(q.GetBatch(10), (std::vector<std::string>{"d"}));
  q.Done(std::vector<std::string>{"a", "b", "c"});
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(q.GetBatch(0), (std::vector<std::string>{"b"}));  // at least one
  q.Done(std::vector<std::string>{"b", "d"});
  EXPECT_EQ(q.Len(), 0u);

  // A batch waits for its first key; shutting down ends the wait empty.
  std::vector<std::string> got;
  std::thread worker([&] { got = q.GetBatch(8); });
  std::this_thread::sleep_for(10ms);
  q.Add("e");
  worker.join();
  EXPECT_EQ(got, (std::vector<std::string>{"e"}));
  std::thread late([&] { got = q.GetBatch(8); });
  q.ShutDown();
  late.join();
  EXPECT_TRUE(got.empty());
}

TEST(WorkQueueTest, FailuresBackOffExponentiallyPerKeyUntilForgotten) {
  os::testing::FakeClock clock;
  WorkQueue q(clock, {.base_delay = 5ms, .max_delay = 20ms});
  std::vector<std::chrono::milliseconds> waits;
  for (int i = 0; i < 4; ++i) {
    q.AddRateLimited("a");
    EXPECT_EQ(q.Failures("a"), i + 1);
    std::chrono::milliseconds waited{0};
    while (!q.Get(0ms)) {
      clock.Advance(1ms);
      ++waited;
      ASSERT_LT(waited, 1000ms);
    }
    q.Done("a");
    waits.push_back(waited);
  }
  EXPECT_EQ(waits, (std::vector<std::chrono::milliseconds>{5ms, 10ms, 20ms, 20ms}));
  // Another key has its own count.
  q.AddRateLimited("b");
  clock.Advance(5ms);
  EXPECT_EQ(q.Get(0ms), "b");
  q.Done("b");
  q.Forget("a");
  EXPECT_EQ(q.Failures("a"), 0);
  q.AddRateLimited("a");
  clock.Advance(5ms);
  EXPECT_EQ(q.Get(0ms), "a");
}

TEST(WorkQueueTest, AddAfterKeepsTheEarliestTime) {
  os::testing::FakeClock clock;
  WorkQueue q(clock);
  q.AddAfter("a", 10s);
  q.AddAfter("a", 2s);
  q.AddAfter("a", 5s);
  clock.Advance(1s);
  EXPECT_EQ(q.Get(0ms), std::nullopt);
  clock.Advance(1s);
  EXPECT_EQ(q.Get(0ms), "a");
  q.Done("a");
  clock.Advance(20s);
  EXPECT_EQ(q.Get(0ms), std::nullopt);  // the later times were folded into the first
}

TEST(WorkQueueTest, AWaitingGetWakesWhenTheDelayPasses) {
  os::testing::FakeClock clock;
  WorkQueue q(clock);
  q.AddAfter("a", 30s);
  std::optional<std::string> got;
  std::thread worker([&] { got = q.Get(); });
  std::this_thread::sleep_for(5ms);
  clock.Advance(30s);
  worker.join();
  EXPECT_EQ(got, "a");
}

TEST(WorkQueueTest, ShutDownReleasesWorkers) {
  WorkQueue q;
  std::vector<std::thread> workers;
  std::atomic<int> ended{0};
  for (int i = 0; i < 3; ++i) {
    workers.emplace_back([&] {
      while (auto k = q.Get()) q.Done(*k);
      ++ended;
    });
  }
  q.Add("x");
  q.ShutDown();
  for (auto& w : workers) w.join();
  EXPECT_EQ(ended.load(), 3);
  q.Add("late");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, ConcurrentWorkersNeverShareAKey) {
  WorkQueue q;
  std::mutex mu;
  std::set<std::string> in_flight;
  std::atomic<bool> overlap{false};
  std::atomic<int> processed{0};
  std::vector<std::thread> workers;
  for (int i = 0; i < 4; ++i) {
    workers.emplace_back([&] {
      while (auto k = q.Get()) {
        {
          std::lock_guard lock(mu);
          if (!in_flight.insert(*k).second) overlap = true;
        }
        std::this_thread::yield();
        {
          std::lock_guard lock(mu);
          in_flight.erase(*k);
        }
        ++processed;
        q.Done(*k);
      }
    });
  }
  std::vector<std::thread> producers;
  for (int p = 0; p < 2; ++p) {
    producers.emplace_back([&] {
      for (int i = 0; i < 5000; ++i) q.Add("k" + std::to_string(i % 16));
    });
  }
  for (auto& p : producers) p.join();
  // Drain: wait until nothing is queued or being processed.
  for (int i = 0; i < 10000 && q.Len() > 0; ++i) std::this_thread::sleep_for(1ms);
  q.ShutDown();
  for (auto& w : workers) w.join();
  EXPECT_FALSE(overlap.load());
  EXPECT_GE(processed.load(), 16);
  EXPECT_LE(processed.load(), 10000);
}

// A burst of adds wakes one waiting worker, and each worker that takes a key and leaves some
// wakes the next: every waiting worker gets one while the others still hold theirs.
TEST(WorkQueueTest, WorkersWakeOneAnotherForWhatIsLeft) {
  WorkQueue q;
  constexpr int kWorkers = 4;
  std::mutex mu;
  std::condition_variable cv;
  int holding = 0;
  std::vector<std::thread> workers;
  for (int i = 0; i < kWorkers; ++i) {
    workers.emplace_back([&] {
      auto k = q.Get();
      if (!k) return;
      std::unique_lock lock(mu);
      ++holding;
      cv.notify_all();
      // Holds its key until every worker has one (or the test gives up).
      cv.wait_for(lock, 10s, [&] { return holding == kWorkers; });
      lock.unlock();
      q.Done(*k);
    });
  }
  // Most likely all waiting by now; any that is not takes a key without being woken.
  std::this_thread::sleep_for(50ms);
  for (int i = 0; i < kWorkers; ++i) q.Add("k" + std::to_string(i));
  {
    std::unique_lock lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, 10s, [&] { return holding == kWorkers; }))
        << holding << " of " << kWorkers << " workers got a key";
  }
  q.ShutDown();
  for (auto& w : workers) w.join();
}

}  // namespace
}  // namespace kvol::client
