// ProvisioningLoop over a real in-process API server: what is queued and synced, passes on a
// kick, retries after an error, and events under the provisioner's name.
#include "controller/provisioner/provisioning_loop.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <thread>

#include "client/testing/eventually.h"
#include "client/testing/test_server.h"

namespace kvol::controller::provisioner {
namespace {

using client::testing::Eventually;
using namespace std::chrono_literals;

api::PersistentVolumeClaim Claim(const std::string& name, const std::string& cls) {
  api::PersistentVolumeClaim c;
  c.metadata.namespace_ = "default";
  c.metadata.name = name;
  c.spec.access_modes = {"ReadWriteOnce"};
  c.spec.resources.requests["storage"] = api::Quantity::MustParse("1Gi");
  c.spec.storage_class_name = cls;
  return c;
}

api::PersistentVolume Volume(const std::string& name, const std::string& cls) {
  api::PersistentVolume v;
  v.metadata.name = name;
  v.spec.capacity["storage"] = api::Quantity::MustParse("1Gi");
  v.spec.access_modes = {"ReadWriteOnce"};
  v.spec.storage_class_name = cls;
  v.spec.host_path.emplace().path = "/tmp/" + name;
  return v;
}

class ProvisioningLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = client::testing::TestServer::Start({.http = false});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }

  // Handlers that want what is of class "mine", count the syncs by name, and fail the first
  // `failures` syncs of each claim.
  LoopHandlers Counting(int failures = 0) {
    return LoopHandlers{
        .claim_wanted = [](const auto& c) { return c.spec.storage_class_name == "mine"; },
        .volume_wanted = [](const auto& v) { return v.spec.storage_class_name == "mine"; },
        .sync_claim =
            [this, failures](const auto& c) {
              std::lock_guard lock(mu_);
              if (++synced_["claim " + c.metadata.name] <= failures) {
                return UnavailableError("not yet");
              }
              return OkStatus();
            },
        .sync_volume =
            [this](const auto& v) {
              std::lock_guard lock(mu_);
              ++synced_["volume " + v.metadata.name];
              return OkStatus();
            }};
  }
  int Synced(const std::string& what) {
    std::lock_guard lock(mu_);
    return synced_.count(what) ? synced_.at(what) : 0;
  }
  void Create(const api::PersistentVolumeClaim& c) {
    ASSERT_TRUE(server_->local().resource<api::PersistentVolumeClaim>().Create(c).ok());
  }
  void Create(const api::PersistentVolume& v) {
    ASSERT_TRUE(server_->local().resource<api::PersistentVolume>().Create(v).ok());
  }

  std::unique_ptr<client::testing::TestServer> server_;
  std::mutex mu_;
  std::map<std::string, int> synced_;
};

TEST_F(ProvisioningLoopTest, SyncsWhatTheProvisionerWants) {
  Create(Claim("before", "mine"));  // there before the start: found by the first list
  ProvisioningLoop loop(server_->local(), {.name = "test", .thread_name = "test", .component = "t"});
  ASSERT_TRUE(loop.Start(Counting(), 10s).ok());
  Create(Claim("after", "mine"));
  Create(Claim("other", "theirs"));
  Create(Volume("pv-mine", "mine"));
  Create(Volume("pv-other", "theirs"));
  struct Case {
    std::string what;
    bool synced;
  };
  const Case cases[] = {
      {"claim before", true},   {"claim after", true},       {"claim other", false},
      {"volume pv-mine", true}, {"volume pv-other", false},
  };
  for (const auto& c : cases) {
    if (c.synced) {
      EXPECT_TRUE(Eventually([&] { return Synced(c.what) > 0; })) << c.what;
    }
  }
  // The others were seen, and passed over.
  ASSERT_TRUE(Eventually([&] {
    return loop.claims()->Get("default", "other") && loop.volumes()->Get("", "pv-other");
  }));
  std::this_thread::sleep_for(50ms);
  loop.Stop();
  for (const auto& c : cases) {
    if (!c.synced) {
      EXPECT_EQ(Synced(c.what), 0) << c.what;
    }
  }
  EXPECT_NE(loop.claims(), nullptr);
  EXPECT_NE(loop.classes(), nullptr);
}

TEST_F(ProvisioningLoopTest, AFailedSyncIsRetried) {
  ProvisioningLoop loop(server_->local(), {.name = "test", .thread_name = "test", .component = "t"});
  ASSERT_TRUE(loop.Start(Counting(/*failures=*/2), 10s).ok());
  Create(Claim("flaky", "mine"));
  EXPECT_TRUE(Eventually([&] { return Synced("claim flaky") >= 3; }));
}

TEST_F(ProvisioningLoopTest, AKickPassesOverEverything) {
  ProvisioningLoop loop(server_->local(),
                        {.name = "test", .thread_name = "test", .component = "t", .resync = 1h});
  ASSERT_TRUE(loop.Start(Counting(), 10s).ok());
  Create(Claim("waiting", "mine"));
  ASSERT_TRUE(Eventually([&] { return Synced("claim waiting") >= 1; }));
  // Synced for its creation (perhaps twice, if the first pass saw it too); then quiet, with the
  // next pass an hour away.
  std::this_thread::sleep_for(100ms);
  const int before = Synced("claim waiting");
  std::this_thread::sleep_for(100ms);
  ASSERT_EQ(Synced("claim waiting"), before);
  auto kick = loop.Kicker();
  kick();
  EXPECT_TRUE(Eventually([&] { return Synced("claim waiting") == before + 1; }));
  loop.Stop();
  kick();  // a kicker outlives the loop's threads harmlessly
}

TEST_F(ProvisioningLoopTest, EventsUnderTheProvisionersName) {
  ProvisioningLoop loop(server_->local(),
                        {.name = "test", .thread_name = "test", .component = "prov_node-1"});
  loop.Event({}, "Normal", "Ignored", "before the start nothing is recorded");
  ASSERT_TRUE(loop.Start(Counting(), 10s).ok());
  api::ObjectReference about{.kind = "PersistentVolumeClaim", .namespace_ = "default", .name = "c"};
  loop.Event(about, "Normal", "Provisioning", "making it");
  loop.Stop();  // flushes the recorder
  auto events = server_->local().resource<api::Event>().List("default");
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->items.size(), 1u);
  EXPECT_EQ(events->items[0].source.component, "prov_node-1");
  EXPECT_EQ(events->items[0].reason, "Provisioning");
  EXPECT_EQ(events->items[0].message, "making it");
}

}  // namespace
}  // namespace kvol::controller::provisioner
