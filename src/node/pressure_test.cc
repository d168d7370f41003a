// Node pressure: --eviction-hard parsing, thresholds against observations, and the conditions
// with their transition period, on fake readings and a fake clock.
#include "node/pressure.h"

#include <gtest/gtest.h>

#include "os/testing/fake_clock.h"

namespace kvol::node {
namespace {

using namespace std::chrono_literals;

TEST(EvictionHard, Parses) {
  struct Case {
    std::string flag;
    size_t count = 0;
    std::string error;  // a part of the message, when it fails
  };
  const Case cases[] = {
      {.flag = std::string(kDefaultEvictionHard), .count = 4},
      {.flag = "", .count = 0},
      {.flag = " nodefs.available<1Gi , pid.available<10% ", .count = 2},
      {.flag = "imagefs.inodesFree<1000", .count = 1},
      {.flag = "disk.available<10%",
       .error = "\"disk.available<10%\": unsupported eviction signal"},
      {.flag = "nodefs.available>10%", .error = "want SIGNAL<VALUE"},
      {.flag = "nodefs.available<", .error = "no value"},
      {.flag = "nodefs.available<101%", .error = "between 0% and 100%"},
      {.flag = "nodefs.available<ten%", .error = "invalid percentage"},
      {.flag = "memory.available<lots", .error = "invalid quantity"},
      {.flag = "memory.available<-1Mi", .error = "must not be negative"},
      {.flag = "nodefs.available<1%,nodefs.available<2%", .error = "a second threshold"},
  };
  for (const auto& c : cases) {
    auto got = ParseEvictionHard(c.flag);
    if (!c.error.empty()) {
      ASSERT_FALSE(got.ok()) << c.flag;
      EXPECT_NE(got.status().message().find("--eviction-hard"), std::string::npos);
      EXPECT_NE(got.status().message().find(c.error), std::string::npos)
          << c.flag << ": " << got.status().message();
      continue;
    }
    ASSERT_TRUE(got.ok()) << c.flag << ": " << got.status().message();
    EXPECT_EQ(got->size(), c.count) << c.flag;
  }
  auto one = ParseEvictionHard("memory.available<100Mi,nodefs.available<10%");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)[0].signal, Signal::kMemoryAvailable);
  EXPECT_EQ((*one)[0].value, 100 << 20);
  EXPECT_EQ((*one)[1].signal, Signal::kNodeFsAvailable);
  EXPECT_FALSE((*one)[1].value.has_value());
  EXPECT_EQ((*one)[1].percentage, 10);
}

TEST(EvictionHard, CrossesBelowTheThreshold) {
  const auto thresholds = *ParseEvictionHard("nodefs.available<10%,memory.available<100Mi");
  struct Case {
    std::string name;
    Observations seen;
    std::vector<Signal> want;
  };
  const Case cases[] = {
      {.name = "plenty",
       .seen = {{Signal::kNodeFsAvailable, {50, 100}}, {Signal::kMemoryAvailable, {1 << 30, 0}}}},
      {.name = "at the threshold is not below it", .seen = {{Signal::kNodeFsAvailable, {10, 100}}}},
      {.name = "below the percentage",
       .seen = {{Signal::kNodeFsAvailable, {9, 100}}},
       .want = {Signal::kNodeFsAvailable}},
      {.name = "below the quantity",
       .seen = {{Signal::kMemoryAvailable, {(100 << 20) - 1, 8LL << 30}}},
       .want = {Signal::kMemoryAvailable}},
      {.name = "a signal without a threshold", .seen = {{Signal::kPidAvailable, {0, 100}}}},
      {.name = "nothing observed"},
  };
  for (const auto& c : cases) EXPECT_EQ(Crossed(thresholds, c.seen), c.want) << c.name;
}

class PressureMonitorTest : public ::testing::Test {
 protected:
  PressureSources Sources() {
    PressureSources s;
    s.memory = [this] { return memory_; };
    s.nodefs = [this] { return nodefs_; };
    s.imagefs = [this] { return imagefs_; };
    s.pids = [this] { return pids_; };
    return s;
  }
  // type -> "status reason"
  std::map<std::string, std::string> Seen(PressureMonitor& m) {
    std::map<std::string, std::string> out;
    for (const auto& c : m.Conditions()) out[c.type] = c.status + " " + c.reason;
    return out;
  }

  os::testing::FakeClock clock_;
  StatusOr<os::MemoryStats> memory_ = os::MemoryStats{8LL << 30, 4LL << 30};
  StatusOr<os::FilesystemStats> nodefs_ = os::FilesystemStats{
      .capacity_bytes = 1000, .available_bytes = 500, .inodes = 100, .inodes_free = 50};
  StatusOr<std::optional<os::FilesystemStats>> imagefs_ =
      std::optional<os::FilesystemStats>(os::FilesystemStats{
          .capacity_bytes = 1000, .available_bytes = 500, .inodes = 100, .inodes_free = 50});
  StatusOr<os::ProcessStats> pids_ = os::ProcessStats{1000, 100};
};

TEST_F(PressureMonitorTest, ReportsEachConditionInKubeletsWords) {
  PressureMonitor m(*ParseEvictionHard(kDefaultEvictionHard), 5min, Sources(), clock_);
  auto conditions = m.Conditions();
  ASSERT_EQ(conditions.size(), 3u);
  EXPECT_EQ(conditions[0].type, "MemoryPressure");
  EXPECT_EQ(conditions[0].status, "False");
  EXPECT_EQ(conditions[0].reason, "KubeletHasSufficientMemory");
  EXPECT_EQ(conditions[0].message, "kubelet has sufficient memory available");
  EXPECT_EQ(conditions[1].type, "DiskPressure");
  EXPECT_EQ(conditions[1].reason, "KubeletHasNoDiskPressure");
  EXPECT_EQ(conditions[1].message, "kubelet has no disk pressure");
  EXPECT_EQ(conditions[2].type, "PIDPressure");
  EXPECT_EQ(conditions[2].reason, "KubeletHasSufficientPID");
  EXPECT_EQ(conditions[2].message, "kubelet has sufficient PID available");

  // The image filesystem fills past kubelet's 15%: disk pressure, and only that.
  imagefs_ = std::optional<os::FilesystemStats>(os::FilesystemStats{
      .capacity_bytes = 1000, .available_bytes = 140, .inodes = 100, .inodes_free = 50});
  conditions = m.Conditions();
  EXPECT_EQ(conditions[1].status, "True");
  EXPECT_EQ(conditions[1].reason, "KubeletHasDiskPressure");
  EXPECT_EQ(conditions[1].message, "kubelet has disk pressure");
  EXPECT_EQ(conditions[0].status, "False");
  EXPECT_EQ(conditions[2].status, "False");
}

TEST_F(PressureMonitorTest, EachSignalSetsItsCondition) {
  PressureMonitor m(
      *ParseEvictionHard("memory.available<1Gi,nodefs.inodesFree<10,pid.available<5%"), 0ms,
      Sources(), clock_);
  memory_ = os::MemoryStats{8LL << 30, 512 << 20};
  EXPECT_EQ(Seen(m)["MemoryPressure"], "True KubeletHasInsufficientMemory");
  memory_ = os::MemoryStats{8LL << 30, 4LL << 30};
  nodefs_ = os::FilesystemStats{
      .capacity_bytes = 1000, .available_bytes = 900, .inodes = 100, .inodes_free = 9};
  auto seen = Seen(m);
  EXPECT_EQ(seen["MemoryPressure"], "False KubeletHasSufficientMemory")
      << "no transition period: it clears at once";
  EXPECT_EQ(seen["DiskPressure"], "True KubeletHasDiskPressure");
  nodefs_ = os::FilesystemStats{
      .capacity_bytes = 1000, .available_bytes = 900, .inodes = 100, .inodes_free = 90};
  pids_ = os::ProcessStats{1000, 960};
  seen = Seen(m);
  EXPECT_EQ(seen["DiskPressure"], "False KubeletHasNoDiskPressure");
  EXPECT_EQ(seen["PIDPressure"], "True KubeletHasInsufficientPID");
}

TEST_F(PressureMonitorTest, StaysTrueForTheTransitionPeriod) {
  PressureMonitor m(*ParseEvictionHard("nodefs.available<10%"), 5min, Sources(), clock_);
  nodefs_ = os::FilesystemStats{
      .capacity_bytes = 1000, .available_bytes = 50, .inodes = 100, .inodes_free = 50};
  EXPECT_EQ(Seen(m)["DiskPressure"], "True KubeletHasDiskPressure");
  nodefs_ = os::FilesystemStats{
      .capacity_bytes = 1000, .available_bytes = 500, .inodes = 100, .inodes_free = 50};
  clock_.Advance(4min);
  EXPECT_EQ(Seen(m)["DiskPressure"], "True KubeletHasDiskPressure") << "within the period";
  clock_.Advance(61s);
  EXPECT_EQ(Seen(m)["DiskPressure"], "False KubeletHasNoDiskPressure");
}

TEST_F(PressureMonitorTest, WhatCannotBeReadCrossesNothing) {
  PressureMonitor m(*ParseEvictionHard("nodefs.available<100%,imagefs.available<100%"), 0ms,
                    Sources(), clock_);
  nodefs_ = UnavailableError("cannot statvfs");
  imagefs_ = std::optional<os::FilesystemStats>();  // a runtime without images
  EXPECT_EQ(Seen(m)["DiskPressure"], "False KubeletHasNoDiskPressure");
  imagefs_ = std::optional<os::FilesystemStats>(os::FilesystemStats{
      .capacity_bytes = 1000, .available_bytes = 999, .inodes = 100, .inodes_free = 50});
  EXPECT_EQ(Seen(m)["DiskPressure"], "True KubeletHasDiskPressure");
}

}  // namespace
}  // namespace kvol::node
