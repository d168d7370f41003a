// The operation executor: one operation in flight per key, backoff per key after a failure, and
// at most max_threads operations running at once.
#include "volume/util/operation_executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "client/testing/eventually.h"
#include "os/testing/fake_clock.h"

namespace kvol::volume::util {
namespace {

using client::testing::Eventually;
using namespace std::chrono_literals;

TEST(OperationExecutor, OneOperationPerKeyAndBackoffAfterFailure) {
  os::testing::FakeClock clock;
  OperationExecutor ex(clock, {.initial_backoff = 500ms, .max_backoff = 2s});
  std::atomic<bool> release{false};
  std::atomic<int> ran{0};
  ASSERT_TRUE(ex.Run(
      "k",
      [&] {
        while (!release) std::this_thread::sleep_for(1ms);
        ++ran;
        return InternalError("boom");
      },
      nullptr));
  EXPECT_TRUE(ex.IsPending("k"));
  EXPECT_FALSE(ex.Run(
      "k", [] { return OkStatus(); }, nullptr))
      << "one in flight per key";
  EXPECT_TRUE(ex.Run(
      "other", [] { return OkStatus(); }, nullptr));
  release = true;
  ASSERT_TRUE(Eventually([&] { return !ex.IsPending("k"); }));
  EXPECT_FALSE(ex.Run(
      "k", [] { return OkStatus(); }, nullptr))
      << "in backoff";
  ASSERT_TRUE(ex.NextRetry().has_value());
  EXPECT_EQ(*ex.NextRetry() - clock.Monotonic(), 500ms);
  clock.Advance(500ms);
  std::atomic<bool> done{false};
  EXPECT_TRUE(ex.Run(
      "k", [] { return OkStatus(); }, [&](Status s) { done = s.ok(); }));
  EXPECT_TRUE(Eventually([&] { return done.load(); }));
  EXPECT_EQ(ran.load(), 1);
}

TEST(OperationExecutor, AtMostMaxThreadsRunAndTheRestWait) {
  os::testing::FakeClock clock;
  OperationExecutor ex(clock, {.max_threads = 2});
  std::atomic<bool> release{false};
  std::atomic<int> running{0}, peak{0}, done{0};
  auto op = [&] {
    int now = ++running;
    int p = peak;
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    while (!release) std::this_thread::sleep_for(1ms);
    --running;
    return OkStatus();
  };
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(ex.Run("k" + std::to_string(i), op, [&](Status) { ++done; }));
  }
  ASSERT_TRUE(Eventually([&] { return running.load() == 2; }));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(running.load(), 2) << "a hung operation holds one worker, and no more than two run";
  EXPECT_TRUE(ex.IsPending("k4")) << "queued operations stay pending";
  release = true;
  ASSERT_TRUE(Eventually([&] { return done.load() == 5; }));
  EXPECT_EQ(peak.load(), 2);
  // Workers come back when work does.
  std::atomic<bool> again{false};
  EXPECT_TRUE(ex.Run(
      "k0", [] { return OkStatus(); }, [&](Status) { again = true; }));
  EXPECT_TRUE(Eventually([&] { return again.load(); }));
}

// A FlexVolume driver that attaches, scripted on the FakeExec: the real FlexVolume plugin calls
// it. attach gives /dev/fake-<volumeID>; mountdevice mounts it (on the FakeMounter); everything
// else is not supported, so the defaults apply (pods bind the device's mount).

}  // namespace
}  // namespace kvol::volume::util
