// The image puller: one pull at a time in the order asked, each outcome taken once, a pod's
// pulls forgotten when it goes, and a pull under way cancelled when the puller is destroyed.
#include "node/runtime/cri/image_puller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <vector>

namespace kvol::node::cri {
namespace {

using namespace std::chrono_literals;

// A pull that waits until released, and records that it ran.
struct Gate {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
};

std::optional<PullOutcome> TakeWithin(ImagePuller& puller, const std::string& key,
                                      std::chrono::milliseconds limit = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto out = puller.Take(key)) return out;
    std::this_thread::sleep_for(1ms);
  }
  return std::nullopt;
}

TEST(ImagePuller, PullsOneAtATimeInOrderAndCountsTheWait) {
  ImagePuller puller;
  Gate first;
  std::atomic<int> running{0}, most{0};
  std::vector<std::string> order;
  std::mutex mu;
  auto pull = [&](std::string name, std::shared_future<void> wait) {
    return [&, name, wait](grpc::ClientContext*) -> StatusOr<std::string> {
      most = std::max(most.load(), ++running);
      {
        std::lock_guard lock(mu);
        order.push_back(name);
      }
      if (wait.valid()) wait.wait();
      std::this_thread::sleep_for(20ms);
      --running;
      if (name == "bad") return NotFoundError("no such image");
      return "sha256:" + name;
    };
  };
  ASSERT_TRUE(puller.Request("u1_a", pull("a", first.released)));
  ASSERT_TRUE(puller.Request("u2_bad", pull("bad", {})));
  EXPECT_FALSE(puller.Request("u1_a", pull("again", {}))) << "a pull under way is not asked twice";
  EXPECT_TRUE(puller.Pending("u1_a"));
  EXPECT_TRUE(puller.Pending("u2_bad"));
  EXPECT_FALSE(puller.Take("u1_a")) << "nothing before it is done";
  first.release.set_value();

  auto a = TakeWithin(puller, "u1_a");
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->ref.ok());
  EXPECT_EQ(*a->ref, "sha256:a");
  auto bad = TakeWithin(puller, "u2_bad");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->ref.status().code(), StatusCode::kNotFound);
  EXPECT_GE(bad->total, bad->pulling + 20ms) << "it waited for the first pull";
  EXPECT_EQ(most.load(), 1);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "bad"}));
  EXPECT_FALSE(puller.Take("u1_a")) << "an outcome is taken once";
  EXPECT_FALSE(puller.Pending("u1_a"));
  EXPECT_TRUE(puller.Request("u1_a", pull("a", {}))) << "asked again once taken";
  EXPECT_TRUE(TakeWithin(puller, "u1_a"));
}

TEST(ImagePuller, ForgetsAPodsPulls) {
  ImagePuller puller;
  Gate gate;
  std::atomic<int> ran{0};
  auto pull = [&](std::shared_future<void> wait) {
    return [&, wait](grpc::ClientContext*) -> StatusOr<std::string> {
      ++ran;
      if (wait.valid()) wait.wait();
      return std::string("sha256:x");
    };
  };
  puller.Request("u1_a", pull(gate.released));  // under way
  while (!puller.Pending("u1_a") || ran.load() == 0) std::this_thread::sleep_for(1ms);
  puller.Request("u1_b", pull({}));  // queued
  puller.Request("u2_a", pull({}));
  puller.Forget("u1_");
  EXPECT_FALSE(puller.Pending("u1_b"));
  gate.release.set_value();
  ASSERT_TRUE(TakeWithin(puller, "u2_a"));
  EXPECT_EQ(ran.load(), 2) << "the queued pull of the pod that went never ran";
  EXPECT_FALSE(puller.Take("u1_a")) << "the outcome of the pull under way was dropped";
}

TEST(ImagePuller, DestroyingRunsNoQueuedPull) {
  std::atomic<int> ran{0};
  Gate gate;
  std::thread releaser;
  {
    ImagePuller puller;
    puller.Request("u1_a", [&](grpc::ClientContext*) -> StatusOr<std::string> {
      ++ran;
      gate.released.wait();
      return CancelledError("cancelled");
    });
    puller.Request("u1_b", [&](grpc::ClientContext*) -> StatusOr<std::string> {
      ++ran;
      return std::string("sha256:b");
    });
    while (ran.load() == 0) std::this_thread::sleep_for(1ms);
    // The pull under way ends while the puller is being destroyed.
    releaser = std::thread([&] {
      std::this_thread::sleep_for(50ms);
      gate.release.set_value();
    });
  }
  releaser.join();
  EXPECT_EQ(ran.load(), 1);
}

}  // namespace
}  // namespace kvol::node::cri
