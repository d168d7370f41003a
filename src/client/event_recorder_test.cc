// Events as kubectl describe shows them: written once, counted on repeats, combined when many.
#include "client/event_recorder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "client/testing/test_server.h"
#include "os/testing/fake_clock.h"

namespace kvol::client {
namespace {

using namespace std::chrono_literals;

class EventRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = testing::TestServer::Start({.http = false, .clock = &clock_});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    api::PersistentVolumeClaim c;
    c.metadata.namespace_ = "default";
    c.metadata.name = "claim1";
    c.spec.access_modes = {"ReadWriteOnce"};
    c.spec.resources.requests["storage"] = api::Quantity::MustParse("1Gi");
    auto created = server_->local().resource<api::PersistentVolumeClaim>().Create(c);
    ASSERT_TRUE(created.ok());
    claim_ = *created;
  }
  void TearDown() override {
    recorder_.reset();
    server_.reset();
  }

  EventRecorder& recorder() {
    if (!recorder_) {
      recorder_ = std::make_unique<EventRecorder>(
          server_->local().resource<api::Event>(),
          EventRecorderOptions{.component = "persistentvolume-controller"}, clock_);
    }
    return *recorder_;
  }

  std::vector<api::Event> Events(const std::string& ns) {
    EXPECT_TRUE(recorder().Flush(10s));
    auto l = server_->local().resource<api::Event>().List(ns);
    EXPECT_TRUE(l.ok());
    auto items = l.ok() ? l->items : std::vector<api::Event>{};
    std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
      return a.metadata.name < b.metadata.name;
    });
    return items;
  }

  os::testing::FakeClock clock_;
  std::unique_ptr<testing::TestServer> server_;
  std::unique_ptr<EventRecorder> recorder_;
  api::PersistentVolumeClaim claim_;
};

TEST_F(EventRecorderTest, WritesAnEventAboutTheObject) {
  recorder().Event(claim_, "Warning", "ProvisioningFailed",
                   "storageclass.storage.k8s.io \"fast\" not found");
  auto evs = Events("default");
  ASSERT_EQ(evs.size(), 1u);
  const api::Event& e = evs[0];
  EXPECT_EQ(e.metadata.name.rfind("claim1.", 0), 0u) << e.metadata.name;
  EXPECT_EQ(e.involved_object.kind, "PersistentVolumeClaim");
  EXPECT_EQ(e.involved_object.api_version, "v1");
  EXPECT_EQ(e.involved_object.name, "claim1");
  EXPECT_EQ(e.involved_object.namespace_, "default");
  EXPECT_EQ(e.involved_object.uid, claim_.metadata.uid);
  EXPECT_EQ(e.type, "Warning");
  EXPECT_EQ(e.reason, "ProvisioningFailed");
  EXPECT_EQ(e.message, "storageclass.storage.k8s.io \"fast\" not found");
  EXPECT_EQ(e.source.component, "persistentvolume-controller");
  EXPECT_EQ(e.reporting_component, "persistentvolume-controller");
  EXPECT_EQ(e.count, 1);
  ASSERT_TRUE(e.first_timestamp && e.last_timestamp);
  EXPECT_EQ(*e.first_timestamp, *e.last_timestamp);
}

TEST_F(EventRecorderTest, RepeatsCountOnOneEvent) {
  for (int i = 0; i < 3; ++i) {
    recorder().Event(claim_, "Normal", "ExternalProvisioning", "waiting for a volume");
    ASSERT_TRUE(recorder().Flush(10s));
    clock_.Advance(10s);
  }
  auto evs = Events("default");
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].count, 3);
  EXPECT_EQ(evs[0].last_timestamp->unix_seconds() - evs[0].first_timestamp->unix_seconds(), 20);
  // A different message is a different event.
  recorder().Event(claim_, "Normal", "ExternalProvisioning", "still waiting");
  EXPECT_EQ(Events("default").size(), 2u);
}

// Many objects' events at once, over several writers: every one written, each object's in the
// order recorded, and each object's repeats counted on its one Event.
TEST_F(EventRecorderTest, ManyObjectsAtOnceEachInOrder) {
  constexpr int kObjects = 300;
  const std::vector<std::string> reasons = {"ExternalProvisioning", "Provisioning",
                                            "ProvisioningSucceeded"};
  for (int i = 0; i < kObjects; ++i) {
    api::ObjectReference ref;
    ref.kind = "PersistentVolumeClaim";
    ref.api_version = "v1";
    ref.namespace_ = "default";
    ref.name = "c" + std::to_string(i);
    for (const auto& r : reasons) recorder().Record(ref, "Normal", r, "about " + ref.name);
    recorder().Record(ref, "Normal", reasons.back(), "about " + ref.name);  // a repeat
  }
  auto evs = Events("default");
  ASSERT_EQ(evs.size(), kObjects * reasons.size());
  std::map<std::string, std::vector<std::pair<int64_t, std::string>>> by_object;
  for (const auto& e : evs) {
    by_object[e.involved_object.name].emplace_back(std::stoll(e.metadata.resource_version),
                                                   e.reason);
    EXPECT_EQ(e.count, e.reason == reasons.back() ? 2 : 1) << e.involved_object.name;
  }
  ASSERT_EQ(by_object.size(), static_cast<size_t>(kObjects));
  for (auto& [name, written] : by_object) {
    std::sort(written.begin(), written.end());
    std::vector<std::string> order;
    for (const auto& [rv, reason] : written) order.push_back(reason);
    // The repeat is a patch, which moves the last one's resourceVersion on: still last.
    EXPECT_EQ(order, reasons) << name;
  }
}

TEST_F(EventRecorderTest, ClusterScopedObjectsGetEventsInDefault) {
  api::PersistentVolume pv;
  pv.metadata.name = "pv1";
  pv.metadata.uid = "u-1";
  recorder().Event(pv, "Warning", "VolumeFailedRecycle", "recycler failed");
  auto evs = Events("default");
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].involved_object.kind, "PersistentVolume");
  EXPECT_EQ(evs[0].involved_object.namespace_, "");
}

TEST_F(EventRecorderTest, ManyDifferentMessagesAreCombined) {
  for (int i = 0; i < 12; ++i) {
    recorder().Event(claim_, "Warning", "FailedMount", "attempt " + std::to_string(i));
    clock_.Advance(1ms);
  }
  auto evs = Events("default");
  ASSERT_EQ(evs.size(), 11u);
  int combined = 0;
  for (const auto& e : evs) {
    if (e.message.rfind("(combined from similar events): ", 0) == 0) {
      ++combined;
      EXPECT_EQ(e.count, 2);
      EXPECT_EQ(e.message, "(combined from similar events): attempt 11");
    }
  }
  EXPECT_EQ(combined, 1);
}

TEST_F(EventRecorderTest, AnEventDeletedMeanwhileIsWrittenAgain) {
  recorder().Event(claim_, "Normal", "Resizing", "resizing");
  auto evs = Events("default");
  ASSERT_EQ(evs.size(), 1u);
  ASSERT_TRUE(
      server_->local().resource<api::Event>().Delete("default", evs[0].metadata.name).ok());
  clock_.Advance(1s);
  recorder().Event(claim_, "Normal", "Resizing", "resizing");
  evs = Events("default");
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].count, 2);
}

}  // namespace
}  // namespace kvol::client
