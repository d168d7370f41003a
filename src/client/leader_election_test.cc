// Leader election on a Lease, with time driven by a fake clock.
#include "client/leader_election.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "client/testing/eventually.h"
#include "client/testing/test_server.h"
#include "os/testing/fake_clock.h"

namespace kvol::client {
namespace {

using namespace std::chrono_literals;

using testing::Eventually;

class LeaderElectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = testing::TestServer::Start({.http = false, .clock = &clock_});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  Resource<api::Lease>& leases() { return server_->local().resource<api::Lease>(); }
  LeaderElectionConfig Config(std::string id) {
    LeaderElectionConfig c;
    c.lease_name = "kvol-controllers";
    c.identity = std::move(id);
    return c;
  }
  api::Lease Lease() {
    auto l = leases().Get("kube-system", "kvol-controllers");
    EXPECT_TRUE(l.ok());
    return l.ok() ? *l : api::Lease{};
  }

  os::testing::FakeClock clock_;
  std::unique_ptr<testing::TestServer> server_;
};

TEST_F(LeaderElectionTest, FirstCandidateTakesTheLeaseOthersWaitForItToExpire) {
  LeaderElector a(leases(), Config("a"), clock_);
  LeaderElector b(leases(), Config("b"), clock_);
  EXPECT_TRUE(a.TryAcquireOrRenew());
  api::Lease l = Lease();
  EXPECT_EQ(l.spec.holder_identity, "a");
  EXPECT_EQ(l.spec.lease_duration_seconds, 15);
  EXPECT_EQ(l.spec.lease_transitions, 0);
  ASSERT_TRUE(l.spec.acquire_time && l.spec.renew_time);

  EXPECT_FALSE(b.TryAcquireOrRenew());
  EXPECT_EQ(b.Leader(), "a");

  // a renews within the lease; b keeps seeing a live holder.
  clock_.Advance(10s);
  EXPECT_TRUE(a.TryAcquireOrRenew());
  EXPECT_FALSE(b.TryAcquireOrRenew());
  clock_.Advance(14s);
  EXPECT_FALSE(b.TryAcquireOrRenew());  // b saw the renewal 14 s ago: not expired yet

  // a stops renewing: 15 s after b last saw a change, b takes over.
  clock_.Advance(2s);
  EXPECT_TRUE(b.TryAcquireOrRenew());
  l = Lease();
  EXPECT_EQ(l.spec.holder_identity, "b");
  EXPECT_EQ(l.spec.lease_transitions, 1);
  EXPECT_FALSE(a.TryAcquireOrRenew());
  EXPECT_EQ(a.Leader(), "b");
}

TEST_F(LeaderElectionTest, OnlyOneOfManyConcurrentCandidatesWins) {
  std::vector<std::unique_ptr<LeaderElector>> electors;
  for (int i = 0; i < 6; ++i) {
    electors.push_back(
        std::make_unique<LeaderElector>(leases(), Config("c" + std::to_string(i)), clock_));
  }
  std::atomic<int> winners{0};
  std::vector<std::thread> threads;
  for (auto& e : electors) {
    threads.emplace_back([&] {
      if (e->TryAcquireOrRenew()) ++winners;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(winners.load(), 1);
}

TEST_F(LeaderElectionTest, RunLeadsCallsBackAndReleasesOnStop) {
  std::atomic<int> started{0}, stopped{0};
  auto cfg = Config("a");
  cfg.on_started_leading = [&] { ++started; };
  cfg.on_stopped_leading = [&] { ++stopped; };
  LeaderElector a(leases(), cfg, clock_);
  a.Start();
  // The callback runs on the elector's thread just after it has the lease.
  ASSERT_TRUE(Eventually([&] { return started.load() == 1; }));
  EXPECT_TRUE(a.IsLeader());

  // It renews every retry period as time passes.
  const auto first = Lease().spec.renew_time;
  ASSERT_TRUE(Eventually([&] {
    clock_.Advance(100ms);
    return Lease().spec.renew_time != first;
  }));

  a.Stop();
  EXPECT_FALSE(a.IsLeader());
  EXPECT_EQ(stopped.load(), 1);
  EXPECT_FALSE(Lease().spec.holder_identity.has_value());

  // A released lease is free at once: no waiting for it to expire.
  LeaderElector b(leases(), Config("b"), clock_);
  EXPECT_TRUE(b.TryAcquireOrRenew());
}

TEST_F(LeaderElectionTest, ALeaderThatCannotRenewStepsDown) {
  std::atomic<int> stopped{0};
  auto cfg = Config("a");
  cfg.on_stopped_leading = [&] { ++stopped; };
  LeaderElector a(leases(), cfg, clock_);
  a.Start();
  ASSERT_TRUE(Eventually([&] { return a.IsLeader(); }));
  // Someone takes the lease behind a's back (as after a network partition).
  ASSERT_TRUE(Mutate<api::Lease>(leases(), "kube-system", "kvol-controllers", [](api::Lease& l) {
                l.spec.holder_identity = "intruder";
                return true;
              }).ok());
  // a keeps failing to renew; after renew_deadline (10 s) it is no longer leader. The callback
  // runs just after IsLeader turns false, on a's thread: wait for both.
  ASSERT_TRUE(Eventually([&] {
    clock_.Advance(100ms);
    return !a.IsLeader() && stopped.load() > 0;
  }));
  EXPECT_EQ(stopped.load(), 1);
  a.Stop();
  EXPECT_EQ(Lease().spec.holder_identity, "intruder");  // not released: a did not hold it
}

}  // namespace
}  // namespace kvol::client
