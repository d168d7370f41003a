#include "base/keyed_locks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace kvol {
namespace {

using namespace std::chrono_literals;

TEST(KeyedLocksTest, OneHolderPerKeyManyKeysAtOnce) {
  KeyedLocks locks;
  std::atomic<bool> second_held{false};
  std::atomic<bool> other_key_held{false};
  std::thread waiter, other;
  {
    KeyedLocks::Hold a(locks, "vol-1");
    waiter = std::thread([&] {
      KeyedLocks::Hold b(locks, "vol-1");
      second_held = true;
    });
    other = std::thread([&] {
      KeyedLocks::Hold c(locks, "vol-2");
      other_key_held = true;
    });
    other.join();  // another key is not kept waiting
    EXPECT_TRUE(other_key_held);
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(second_held) << "a second holder of the same key did not wait";
  }
  waiter.join();
  EXPECT_TRUE(second_held);
}

}  // namespace
}  // namespace kvol
