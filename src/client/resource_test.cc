// The client interface behaves the same over both transports: every test runs against the
// in-process client and the HTTPS client of one real API server.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <mutex>
#include <utility>
#include <fstream>
#include <thread>

#include "client/client.h"
#include "client/http.h"
#include "client/http_transport.h"
#include "client/testing/test_server.h"

namespace kvol::client {
namespace {

using namespace std::chrono_literals;

api::PersistentVolume PV(std::string name, std::string size = "5Gi") {
  api::PersistentVolume pv;
  pv.metadata.name = std::move(name);
  pv.spec.capacity["storage"] = api::Quantity::MustParse(size);
  pv.spec.access_modes = {"ReadWriteOnce"};
  pv.spec.host_path.emplace().path = "/data";
  return pv;
}

api::ConfigMap ConfigMap(std::string ns, std::string name) {
  api::ConfigMap cm;
  cm.metadata.namespace_ = std::move(ns);
  cm.metadata.name = std::move(name);
  cm.data = api::StringMap{{"a", "1"}};
  return cm;
}

class ResourceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    testing::TestServerOptions o;
    o.bookmark_interval = 0s;  // a bookmark whenever the watch has moved
    auto s = testing::TestServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  Client& client() { return GetParam() == "http" ? server_->http() : server_->local(); }
  Resource<api::PersistentVolume>& pvs() { return client().resource<api::PersistentVolume>(); }
  Resource<api::ConfigMap>& cms() { return client().resource<api::ConfigMap>(); }

  // Events from `w` until `n` have arrived or 10 s pass.
  template <class T>
  std::vector<WatchEvent<T>> Collect(Watcher<T>& w, size_t n) {
    std::vector<WatchEvent<T>> out;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
      auto evs = w.Next(100ms);
      if (!evs.ok()) {
        ADD_FAILURE() << "watch error: " << evs.error().message;
        break;
      }
      for (auto& e : *evs) out.push_back(std::move(e));
    }
    return out;
  }

  std::unique_ptr<testing::TestServer> server_;
};

TEST_P(ResourceTest, CreateGetUpdateStatusAndDelete) {
  auto created = pvs().Create(PV("pv1"));
  ASSERT_TRUE(created.ok()) << created.error().message;
  EXPECT_EQ(created->metadata.uid.size(), 36u);
  EXPECT_FALSE(created->metadata.resource_version.empty());
  EXPECT_EQ(created->spec.persistent_volume_reclaim_policy, "Retain");  // defaulted
  EXPECT_EQ(created->metadata.finalizers, std::vector<std::string>{"kubernetes.io/pv-protection"});

  auto got = pvs().Get("", "pv1");
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->metadata.uid, created->metadata.uid);

  // Update keeps status; UpdateStatus keeps spec.
  api::PersistentVolume next = *got;
  next.metadata.labels["tier"] = "gold";
  next.status.phase = "Bound";
  auto updated = pvs().Update(next);
  ASSERT_TRUE(updated.ok()) << updated.error().message;
  EXPECT_EQ(updated->metadata.labels.at("tier"), "gold");
  EXPECT_EQ(updated->status.phase, "Pending");
  next = *updated;
  next.status.phase = "Available";
  next.spec.storage_class_name = "ignored";
  auto status = pvs().UpdateStatus(next);
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(status->status.phase, "Available");
  EXPECT_EQ(status->spec.storage_class_name, "");

  // A stale resourceVersion is a conflict.
  auto stale = pvs().Update(*updated);
  ASSERT_FALSE(stale.ok());
  EXPECT_TRUE(api::IsConflict(stale.error())) << stale.error().reason;
  EXPECT_EQ(stale.error().code, 409);

  // The protection finalizer holds the delete; removing it lets the object go.
  auto deleted = pvs().Delete("", "pv1");
  ASSERT_TRUE(deleted.ok()) << deleted.error().message;
  EXPECT_TRUE(deleted->metadata.deletion_timestamp.has_value());
  ASSERT_TRUE(pvs().Get("", "pv1").ok());
  auto released = Mutate<api::PersistentVolume>(pvs(), "", "pv1", [](api::PersistentVolume& pv) {
    pv.metadata.finalizers.clear();
    return true;
  });
  ASSERT_TRUE(released.ok()) << released.error().message;
  auto gone = pvs().Get("", "pv1");
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(api::IsNotFound(gone.error()));
  EXPECT_EQ(gone.error().code, 404);
  EXPECT_EQ(gone.error().message, "persistentvolumes \"pv1\" not found");
}

TEST_P(ResourceTest, ErrorsKeepReasonAndFieldCauses) {
  ASSERT_TRUE(pvs().Create(PV("dup")).ok());
  auto again = pvs().Create(PV("dup"));
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(api::IsAlreadyExists(again.error()));
  EXPECT_EQ(again.error().name, "dup");

  auto bad = pvs().Create(PV("bad", "-1Gi"));
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(api::IsInvalid(bad.error()));
  EXPECT_EQ(bad.error().code, 422);
  ASSERT_FALSE(bad.error().causes.empty());
  EXPECT_EQ(bad.error().causes[0].field, "spec.capacity[storage]");
  EXPECT_EQ(bad.error().causes[0].ToString(),
            "spec.capacity[storage]: Invalid value: -1073741824: must be a valid resource quantity");

  auto no_ns = cms().Create(ConfigMap("", "c"));
  ASSERT_FALSE(no_ns.ok());
  EXPECT_EQ(no_ns.error().code, 400);
  auto missing_ns = cms().Create(ConfigMap("nowhere", "c"));
  ASSERT_FALSE(missing_ns.ok());
  EXPECT_TRUE(api::IsNotFound(missing_ns.error()));
  EXPECT_EQ(missing_ns.error().message, "namespaces \"nowhere\" not found");

  // Kinds without a status subresource have no UpdateStatus.
  auto cm = cms().Create(ConfigMap("default", "c"));
  ASSERT_TRUE(cm.ok());
  auto st = cms().UpdateStatus(*cm);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, 404);
}

TEST_P(ResourceTest, ThreePatchTypes) {
  ASSERT_TRUE(cms().Create(ConfigMap("default", "p")).ok());
  auto merged = cms().Patch("default", "p", PatchType::kMerge, R"({"data": {"b": "2"}})");
  ASSERT_TRUE(merged.ok()) << merged.error().message;
  EXPECT_EQ(merged->data.size(), 2u);
  auto json = cms().Patch("default", "p", PatchType::kJson,
                          R"([{"op": "remove", "path": "/data/a"}])");
  ASSERT_TRUE(json.ok()) << json.error().message;
  EXPECT_EQ(json->data.count("a"), 0u);
  auto strategic = cms().Patch("default", "p", PatchType::kStrategicMerge,
                               R"({"metadata": {"finalizers": ["x.io/keep"]}})");
  ASSERT_TRUE(strategic.ok()) << strategic.error().message;
  EXPECT_EQ(strategic->metadata.finalizers, std::vector<std::string>{"x.io/keep"});
  auto bad = cms().Patch("default", "p", PatchType::kJson, "not json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, 400);
}

TEST_P(ResourceTest, ListSelectsAndPages) {
  for (int i = 0; i < 7; ++i) {
    auto pv = PV("pv" + std::to_string(i));
    pv.metadata.labels["parity"] = i % 2 ? "odd" : "even";
    ASSERT_TRUE(pvs().Create(pv).ok());
  }
  ListOptions odd;
  odd.label_selector = "parity=odd";
  auto l = pvs().List("", odd);
  ASSERT_TRUE(l.ok()) << l.error().message;
  EXPECT_EQ(l->items.size(), 3u);
  EXPECT_FALSE(l->resource_version.empty());

  ListOptions page;
  page.limit = 3;
  std::vector<std::string> names;
  for (int pages = 0; pages < 10; ++pages) {
    auto p = pvs().List("", page);
    ASSERT_TRUE(p.ok()) << p.error().message;
    for (auto& pv : p->items) names.push_back(pv.metadata.name);
    if (p->continue_token.empty()) break;
    page.continue_token = p->continue_token;
  }
  EXPECT_EQ(names.size(), 7u);

  ListOptions bad;
  bad.label_selector = "a in (";
  auto e = pvs().List("", bad);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code, 400);
}

TEST_P(ResourceTest, WatchSeesChangesInOrderAndResumes) {
  auto l = pvs().List("");
  ASSERT_TRUE(l.ok());
  ListOptions wo;
  wo.resource_version = l->resource_version;
  auto w = pvs().Watch("", wo);
  ASSERT_TRUE(w.ok()) << w.error().message;

  ASSERT_TRUE(pvs().Create(PV("w1")).ok());
  ASSERT_TRUE(Mutate<api::PersistentVolume>(pvs(), "", "w1", [](api::PersistentVolume& pv) {
                pv.metadata.labels["x"] = "y";
                return true;
              }).ok());
  ASSERT_TRUE(Mutate<api::PersistentVolume>(pvs(), "", "w1", [](api::PersistentVolume& pv) {
                pv.metadata.finalizers.clear();
                return true;
              }).ok());
  ASSERT_TRUE(pvs().Delete("", "w1").ok());
  auto evs = Collect(**w, 4);
  ASSERT_EQ(evs.size(), 4u);
  EXPECT_EQ(evs[0].type, EventType::kAdded);
  EXPECT_EQ(evs[1].type, EventType::kModified);
  EXPECT_EQ(evs[1].object->metadata.labels.at("x"), "y");
  EXPECT_EQ(evs[2].type, EventType::kModified);
  EXPECT_EQ(evs[3].type, EventType::kDeleted);
  EXPECT_EQ(evs[3].object->metadata.name, "w1");

  // Resuming from the second event replays exactly the two after it.
  wo.resource_version = evs[1].object->metadata.resource_version;
  auto resumed = pvs().Watch("", wo);
  ASSERT_TRUE(resumed.ok());
  auto again = Collect(**resumed, 2);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].object->metadata.resource_version, evs[2].object->metadata.resource_version);
  EXPECT_EQ(again[1].type, EventType::kDeleted);
  auto quiet = (*resumed)->Next(50ms);
  ASSERT_TRUE(quiet.ok());
  EXPECT_TRUE(quiet->empty());
}

TEST_P(ResourceTest, CloseEndsAWaitingNext) {
  auto w = pvs().Watch("");
  ASSERT_TRUE(w.ok());
  std::atomic<bool> returned{false};
  std::thread reader([&] {
    while (true) {
      auto evs = (*w)->Next(30s);
      if (!evs.ok()) {
        EXPECT_TRUE(IsWatchClosed(evs.error())) << evs.error().message;
        break;
      }
    }
    returned = true;
  });
  std::this_thread::sleep_for(20ms);
  const auto start = std::chrono::steady_clock::now();
  (*w)->Close();
  reader.join();
  EXPECT_TRUE(returned);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST_P(ResourceTest, WatchFromACompactedVersionIsGone) {
  auto first = pvs().Create(PV("old"));
  ASSERT_TRUE(first.ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(pvs().Create(PV("n" + std::to_string(i))).ok());
  auto rev = server_->store().CurrentRevision();
  ASSERT_TRUE(rev.ok());
  ASSERT_TRUE(server_->store().Compact(*rev).ok());
  // After a restart the watch cache starts at the current revision, so the old version must
  // come from the store, which no longer has it.
  ASSERT_TRUE(server_->Restart().ok());
  ListOptions wo;
  wo.resource_version = first->metadata.resource_version;
  auto w = pvs().Watch("", wo);
  std::optional<ApiError> err;
  if (!w.ok()) {
    err = w.error();
  } else {
    auto evs = (*w)->Next(5s);
    ASSERT_FALSE(evs.ok());
    err = evs.error();
  }
  EXPECT_TRUE(api::IsGone(*err)) << err->code << " " << err->message;
}

// A watch that sees nothing still learns, through bookmarks, how far the store has come, so that
// it can resume from there rather than from a revision that may since have been compacted.
TEST_P(ResourceTest, BookmarksMoveWithWritesTheWatchDoesNotSee) {
  ListOptions wo;
  wo.allow_bookmarks = true;
  wo.label_selector = "app=nothing";
  auto w = pvs().Watch("", wo);
  ASSERT_TRUE(w.ok()) << w.error().message;
  auto pv = pvs().Create(PV("unlabelled"));
  ASSERT_TRUE(pv.ok());
  auto cm = cms().Create(ConfigMap("default", "elsewhere"));
  ASSERT_TRUE(cm.ok());
  const int64_t want = std::stoll(cm->metadata.resource_version);
  int64_t seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (seen < want && std::chrono::steady_clock::now() < deadline) {
    auto evs = (*w)->Next(100ms);
    ASSERT_TRUE(evs.ok()) << evs.error().message;
    for (auto& e : *evs) {
      ASSERT_EQ(e.type, EventType::kBookmark) << "the selector matches nothing";
      const int64_t rv = std::stoll(e.object->metadata.resource_version);
      EXPECT_GT(rv, seen) << "bookmarks only move forward";
      seen = rv;
    }
  }
  EXPECT_GE(seen, want);
  // Resuming from the bookmark sees the next matching change and nothing before it.
  ListOptions ro = wo;
  ro.resource_version = std::to_string(seen);
  ro.allow_bookmarks = false;
  auto w2 = pvs().Watch("", ro);
  ASSERT_TRUE(w2.ok());
  auto labelled = PV("labelled");
  labelled.metadata.labels = api::StringMap{{"app", "nothing"}};
  ASSERT_TRUE(pvs().Create(labelled).ok());
  auto evs = Collect(**w2, 1);
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].type, EventType::kAdded);
  EXPECT_EQ(evs[0].object->metadata.name, "labelled");
}

INSTANTIATE_TEST_SUITE_P(Transports, ResourceTest, ::testing::Values("local", "http"),
                         [](const auto& info) { return info.param; });

TEST_P(ResourceTest, BindingSetsTheNodeOnceAndAnUpdateCannot) {
  auto& pods = client().resource<api::Pod>();
  api::Pod pod;
  pod.metadata.namespace_ = "default";
  pod.metadata.name = "web";
  pod.spec.containers.push_back({.name = "c", .image = "busybox"});
  auto created = pods.Create(pod);
  ASSERT_TRUE(created.ok()) << created.error().message;

  // An update may not set spec.nodeName.
  api::Pod moved = *created;
  moved.spec.node_name = "n1";
  auto updated = pods.Update(moved);
  ASSERT_FALSE(updated.ok());
  EXPECT_EQ(updated.error().code, 422);

  api::Binding b;
  b.metadata.namespace_ = "default";
  b.metadata.name = "web";
  b.metadata.annotations["example.com/why"] = "fits";
  b.target.kind = "Node";
  b.target.name = "n1";
  EXPECT_FALSE(client().BindPod(b).has_value());
  auto got = pods.Get("default", "web");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->spec.node_name, "n1");
  EXPECT_EQ(got->metadata.annotations.at("example.com/why"), "fits");
  ASSERT_EQ(got->status.conditions.size(), 1u);
  EXPECT_EQ(got->status.conditions[0].type, "PodScheduled");
  EXPECT_EQ(got->status.conditions[0].status, "True");

  // Once only.
  b.target.name = "n2";
  auto again = client().BindPod(b);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->code, 409);
  EXPECT_EQ(again->message,
            "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"n1\"");
  // A Binding must name a node; a missing pod is NotFound.
  b.metadata.name = "other";
  b.target.name = "";
  auto invalid = client().BindPod(b);
  ASSERT_TRUE(invalid.has_value());
  EXPECT_EQ(invalid->code, 422);
  EXPECT_EQ(invalid->message, "Binding \"other\" is invalid: target.name: Required value");
  b.target.name = "n1";
  auto missing = client().BindPod(b);
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->code, 404);
}

TEST(HttpClientTest, RejectsAWrongTokenAndAnUntrustedServer) {
  auto s = testing::TestServer::Start();
  ASSERT_TRUE(s.ok());
  HttpConfig cfg = (*s)->http_config();
  cfg.token = "wrong";
  auto c = HttpClient::Create(cfg);
  ASSERT_TRUE(c.ok());
  auto r = (*c)->resource<api::PersistentVolume>().Get("", "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, 401);

  cfg = (*s)->http_config();
  cfg.ca_pem.clear();  // the system's CAs do not know kvol's
  c = HttpClient::Create(cfg);
  ASSERT_TRUE(c.ok());
  r = (*c)->resource<api::PersistentVolume>().Get("", "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, 503);
  EXPECT_NE(r.error().message.find("certificate verify failed"), std::string::npos)
      << r.error().message;

  cfg.insecure_skip_tls_verify = true;
  c = HttpClient::Create(cfg);
  ASSERT_TRUE(c.ok());
  r = (*c)->resource<api::PersistentVolume>().Get("", "x");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(api::IsNotFound(r.error()));
}

TEST(HttpClientTest, ReusesConnectionsAcrossManyRequestsAndThreads) {
  auto s = testing::TestServer::Start();
  ASSERT_TRUE(s.ok());
  auto& cms = (*s)->http().resource<api::ConfigMap>();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        if (cms.Create(ConfigMap("default", "c" + std::to_string(t) + "-" + std::to_string(i))).ok()) {
          ++ok;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 200);
  auto l = cms.List("default");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->items.size(), 200u);
}

// Each call has a deadline: a server that accepts and then says nothing, and a response that
// never ends, both fail with DeadlineExceeded in about the configured time, and the transport
// goes on working.
TEST(HttpClientTest, ACallPastItsDeadlineFailsAndTheNextOneWorks) {
  int silent = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(silent, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(silent, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(silent, 8), 0);  // the kernel completes the TCP handshake; nobody answers
  ASSERT_EQ(getsockname(silent, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  auto t = HttpTransport::Create({.server = "https://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)),
                                  .insecure_skip_tls_verify = true,
                                  .timeout = 200ms});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto start = std::chrono::steady_clock::now();
  auto r = (*t)->Do("GET", "/api", "", "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
  EXPECT_NE(r.status().message().find("TLS handshake"), std::string::npos) << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  close(silent);

  auto s = testing::TestServer::Start();
  ASSERT_TRUE(s.ok());
  HttpConfig cfg = (*s)->http_config();
  cfg.timeout = 300ms;
  t = HttpTransport::Create(cfg);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  start = std::chrono::steady_clock::now();
  r = (*t)->Do("GET", "/api/v1/persistentvolumes?watch=true", "", "");  // streams for good
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
  EXPECT_NE(r.status().message().find("reading from"), std::string::npos) << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  r = (*t)->Do("GET", "/api/v1/persistentvolumes", "", "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
}

// The server turns Nagle's algorithm off on every connection: with it on, a small write (a
// watch event, say) waits while an earlier one is unacknowledged, and a client with nothing to
// send acknowledges only when its delayed-ACK timer fires, about 40 ms later.
TEST(HttpServerTest, ConnectionsSendSmallWritesAtOnce) {
  std::promise<int> nodelay;  // the option's value, -1 if it could not be read
  testing::TestServerOptions o;
  o.intercept = [&](const apiserver::HttpRequest& req, apiserver::ResponseWriter& w) {
    if (req.path != "/nodelay") return false;
    // The connection's own socket, reached through an upgrade.
    auto conn = w.Upgrade({{"Connection", "Upgrade"}, {"Upgrade", "nodelay-test"}});
    int on = 0;
    socklen_t len = sizeof on;
    const bool read = conn && getsockopt(conn->fd(), IPPROTO_TCP, TCP_NODELAY, &on, &len) == 0;
    nodelay.set_value(read ? on : -1);
    return true;
  };
  auto s = testing::TestServer::Start(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto t = HttpTransport::Create((*s)->http_config());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto r = (*t)->Do("GET", "/nodelay", "", "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 101);
  // The 101 reaches the client before the handler reads the option.
  auto value = nodelay.get_future();
  ASSERT_EQ(value.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(value.get(), 1);
}

TEST(KubeconfigTest, ReadsContextClusterAndUser) {
  auto s = testing::TestServer::Start({.http = false});
  ASSERT_TRUE(s.ok());
  const std::string path = (*s)->dir() + "/config";
  std::ofstream(path) << R"(apiVersion: v1
kind: Config
current-context: b
clusters:
- name: one
  cluster: {server: "https://10.0.0.1:6443", insecure-skip-tls-verify: true}
- name: two
  cluster: {server: "https://[::1]:7443", certificate-authority: ca.pem}
users:
- name: u
  user: {tokenFile: )" << (*s)->dir() << R"(/tok}
- name: cert
  user: {client-certificate-data: AAAA}
contexts:
- name: a
  context: {cluster: one, user: cert}
- name: b
  context: {cluster: two, user: u, namespace: team}
)";
  std::ofstream((*s)->dir() + "/ca.pem") << "PEM";
  std::ofstream((*s)->dir() + "/tok") << "secret\n";
  auto cfg = LoadKubeconfig(path);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://[::1]:7443");
  EXPECT_EQ(cfg->ca_pem, "PEM");
  EXPECT_EQ(cfg->token, "secret");
  EXPECT_EQ(cfg->default_namespace, "team");
  auto a = LoadKubeconfig(path, "a");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("client-certificate-data"), std::string::npos);
  auto missing = LoadKubeconfig(path, "zzz");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("context \"zzz\" not found"), std::string::npos);
  EXPECT_FALSE(LoadKubeconfig((*s)->dir() + "/nope").ok());
  EXPECT_FALSE(HttpClient::Create(HttpConfig{.server = "http://127.0.0.1:1"}).ok());
}

// CreateShared answers as Create does; in process with the object the server shares, so that a
// list right after hands out that very object, and errors are Create's.
TEST_P(ResourceTest, CreateSharedAnswersWithTheStoredObject) {
  auto created = pvs().CreateShared(PV("shared"));
  ASSERT_TRUE(created.ok()) << created.error().message;
  const api::PersistentVolume& pv = **created;
  EXPECT_EQ(pv.metadata.name, "shared");
  EXPECT_EQ(pv.metadata.uid.size(), 36u);
  EXPECT_FALSE(pv.metadata.resource_version.empty());
  EXPECT_EQ(pv.spec.persistent_volume_reclaim_policy, "Retain");  // defaulted
  EXPECT_EQ(pv.metadata.finalizers, std::vector<std::string>{"kubernetes.io/pv-protection"});

  auto got = pvs().Get("", "shared");
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(*got, pv);

  auto listed = pvs().ListShared("");
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  ASSERT_EQ(listed->items.size(), 1u);
  EXPECT_EQ(*listed->items[0], pv);
  if (GetParam() == "local") {
    EXPECT_EQ(listed->items[0].get(), created->get());
  }

  auto again = pvs().CreateShared(PV("shared"));
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(api::IsAlreadyExists(again.error())) << again.error().reason;
  api::PersistentVolume bad = PV("bad");
  bad.spec.capacity.clear();
  auto invalid = pvs().CreateShared(bad);
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.error().code, 422);
  EXPECT_NE(invalid.error().message.find("spec.capacity"), std::string::npos)
      << invalid.error().message;
}

// Updates of several kinds at once (Client::UpdateTogether, over HTTP one request): each
// answered in order as if written alone, one that follows a failed update not made.
TEST_P(ResourceTest, UpdateTogetherWritesSeveralKindsInOrder) {
  auto a = pvs().Create(PV("a"));
  auto b = pvs().Create(PV("b"));
  auto cm = cms().Create(ConfigMap("default", "after-a"));
  auto cm2 = cms().Create(ConfigMap("default", "after-b"));
  ASSERT_TRUE(a.ok() && b.ok() && cm.ok() && cm2.ok());
  api::PersistentVolume next_a = *a;
  next_a.metadata.labels["tier"] = "gold";
  next_a.status.phase = "Available";
  api::PersistentVolume stale_b = *b;
  stale_b.metadata.resource_version = "1";
  api::ConfigMap next_cm = *cm;
  next_cm.data["a"] = "2";
  api::ConfigMap next_cm2 = *cm2;
  next_cm2.data["a"] = "2";
  std::vector<api::ObjectUpdate> updates;
  updates.push_back(api::UpdateOf(next_a, true, true));
  updates.push_back(api::UpdateOf(stale_b, true, false));
  updates.push_back(api::UpdateOf(next_cm, true, false, 0));
  updates.push_back(api::UpdateOf(next_cm2, true, false, 1));
  auto written = client().UpdateTogether(std::move(updates));
  ASSERT_EQ(written.size(), 4u);
  ASSERT_TRUE(written[0].ok()) << written[0].error().message;
  auto got_a = api::SharedAs<api::PersistentVolume>(*written[0]);
  ASSERT_NE(got_a, nullptr);
  EXPECT_EQ(got_a->metadata.labels.at("tier"), "gold");
  EXPECT_EQ(got_a->status.phase, "Available");
  ASSERT_FALSE(written[1].ok());
  EXPECT_EQ(written[1].error().code, 409);
  ASSERT_TRUE(written[2].ok()) << written[2].error().message;
  EXPECT_EQ(api::SharedAs<api::ConfigMap>(*written[2])->data.at("a"), "2");
  ASSERT_FALSE(written[3].ok()) << "follows the stale update";
  EXPECT_EQ(written[3].error().code, 409);
  EXPECT_EQ(cms().Get("default", "after-b")->data.at("a"), "1");
  EXPECT_EQ(pvs().Get("", "a")->status.phase, "Available");
}

// Several objects and their status at once: each answered in order as if written alone (a
// stale one with its conflict), the others written whole; the status alone keeps the object.
TEST_P(ResourceTest, UpdateSharedManyWritesObjectsWithTheirStatusAnsweringEach) {
  std::vector<api::PersistentVolume> next;
  for (std::string name : {"a", "b", "c"}) {
    auto created = pvs().Create(PV(name));
    ASSERT_TRUE(created.ok()) << created.error().message;
    api::PersistentVolume pv = *created;
    pv.metadata.labels["tier"] = name;
    pv.status.phase = "Available";
    pv.status.message = "checked " + name;
    next.push_back(std::move(pv));
  }
  next[1].metadata.resource_version = "1";  // stale
  auto written = pvs().UpdateSharedMany(next, true, true);
  ASSERT_EQ(written.size(), 3u);
  for (size_t i : {0u, 2u}) {
    const std::string& name = next[i].metadata.name;
    ASSERT_TRUE(written[i].ok()) << written[i].error().message;
    EXPECT_EQ((*written[i])->metadata.labels.at("tier"), name);
    EXPECT_EQ((*written[i])->status.message, "checked " + name);
    auto got = pvs().Get("", name);
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->metadata.labels.at("tier"), name);
    EXPECT_EQ(got->status.phase, "Available");
    EXPECT_EQ(got->metadata.resource_version, (*written[i])->metadata.resource_version);
  }
  ASSERT_FALSE(written[1].ok());
  EXPECT_EQ(written[1].error().code, 409) << written[1].error().message;
  auto b = pvs().Get("", "b");
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->metadata.labels.count("tier"), 0u);
  EXPECT_EQ(b->status.phase, "Pending");

  api::PersistentVolume a = **written[0];
  a.metadata.labels["tier"] = "ignored";
  a.status.message = "status only";
  auto status_only = pvs().UpdateSharedMany({a}, false, true);
  ASSERT_EQ(status_only.size(), 1u);
  ASSERT_TRUE(status_only[0].ok()) << status_only[0].error().message;
  EXPECT_EQ((*status_only[0])->metadata.labels.at("tier"), "a");
  EXPECT_EQ((*status_only[0])->status.message, "status only");

  // One object with its status, alone.
  api::PersistentVolume c = **written[2];
  c.metadata.labels["tier"] = "gold";
  c.status.message = "both";
  auto one = pvs().UpdateShared(c, true, true);
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ((*one)->metadata.labels.at("tier"), "gold");
  EXPECT_EQ((*one)->status.message, "both");
}

// The HTTPS client against a server that counts (and may refuse) what it is sent.
class HttpUpdatesTest : public ::testing::Test {
 protected:
  void StartServer(bool refuse_batches) {
    testing::TestServerOptions o;
    o.intercept = [this, refuse_batches](const apiserver::HttpRequest& req,
                                         apiserver::ResponseWriter& w) {
      if (req.method != "PUT") return false;
      const bool collection = req.path == "/api/v1/persistentvolumes";
      std::lock_guard lock(mu_);
      puts_.push_back(req.path + (req.Query("write").empty() ? "" : "?" + req.Query("write")));
      if (!collection || !refuse_batches) return false;
      // As Kubernetes answers a PUT on a collection.
      w.Send(405, "application/json",
             R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
             R"("message":"the server does not allow this method on the requested resource",)"
             R"("reason":"MethodNotAllowed","details":{},"code":405})");
      return true;
    };
    auto s = testing::TestServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  Resource<api::PersistentVolume>& pvs() {
    return server_->http().resource<api::PersistentVolume>();
  }
  std::vector<api::PersistentVolume> Created(std::vector<std::string> names) {
    std::vector<api::PersistentVolume> out;
    for (const auto& name : names) {
      auto pv = pvs().Create(PV(name));
      EXPECT_TRUE(pv.ok()) << pv.error().message;
      if (!pv.ok()) continue;
      pv->metadata.labels["tier"] = name;
      pv->status.message = "checked " + name;
      out.push_back(*std::move(pv));
    }
    return out;
  }
  std::vector<std::string> Puts() {
    std::lock_guard lock(mu_);
    return std::exchange(puts_, {});
  }

  std::mutex mu_;
  std::vector<std::string> puts_;
  std::unique_ptr<testing::TestServer> server_;
};

TEST_F(HttpUpdatesTest, ABatchOfObjectsWithTheirStatusIsOneRequest) {
  StartServer(/*refuse_batches=*/false);
  auto next = Created({"a", "b", "c"});
  ASSERT_EQ(next.size(), 3u);
  EXPECT_TRUE(pvs().writes_with_status());
  auto written = pvs().UpdateSharedMany(next, true, true);
  ASSERT_EQ(written.size(), 3u);
  for (auto& w : written) {
    ASSERT_TRUE(w.ok()) << w.error().message;
    EXPECT_EQ((*w)->status.message, "checked " + (*w)->metadata.name);
  }
  EXPECT_EQ(Puts(), std::vector<std::string>{"/api/v1/persistentvolumes?object,status"});
  auto one = pvs().UpdateWithStatus(**written[0]);
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(Puts(), std::vector<std::string>{"/api/v1/persistentvolumes?object,status"});
}

TEST_F(HttpUpdatesTest, WhereTheServerRefusesABatchEachObjectIsWrittenAlone) {
  StartServer(/*refuse_batches=*/true);
  auto next = Created({"a", "b"});
  ASSERT_EQ(next.size(), 2u);
  auto written = pvs().UpdateSharedMany(next, true, true);
  ASSERT_EQ(written.size(), 2u);
  for (auto& w : written) {
    ASSERT_TRUE(w.ok()) << w.error().message;
    EXPECT_EQ((*w)->metadata.labels.at("tier"), (*w)->metadata.name);
    EXPECT_EQ((*w)->status.message, "checked " + (*w)->metadata.name);
  }
  EXPECT_EQ(Puts(), (std::vector<std::string>{
                        "/api/v1/persistentvolumes?object,status",
                        "/api/v1/persistentvolumes/a", "/api/v1/persistentvolumes/a/status",
                        "/api/v1/persistentvolumes/b", "/api/v1/persistentvolumes/b/status"}));
  // Not asked again.
  EXPECT_FALSE(pvs().writes_with_status());
  api::PersistentVolume a = **written[0];
  a.status.message = "again";
  auto again = pvs().UpdateWithStatus(a);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->status.message, "again");
  EXPECT_EQ(Puts(), (std::vector<std::string>{"/api/v1/persistentvolumes/a",
                                              "/api/v1/persistentvolumes/a/status"}));
}

// What kvol's server answers to PUTs on a collection it cannot take, and to items that fail.
TEST_F(HttpUpdatesTest, BadBatchesAreRefusedNamingWhatIsWrong) {
  StartServer(/*refuse_batches=*/false);
  auto t = HttpTransport::Create(server_->http_config());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto put = [&](const std::string& target, const std::string& body) {
    auto r = (*t)->Do("PUT", target, "application/json", body);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : HttpResponse{};
  };
  auto refused = [&](const std::string& target, const std::string& body, const std::string& says) {
    HttpResponse r = put(target, body);
    EXPECT_EQ(r.status, 400) << target << ": " << r.body;
    EXPECT_NE(r.body.find(says), std::string::npos) << r.body;
  };
  const std::string empty_pvs = R"({"kind":"PersistentVolumeList","items":[]})";
  refused("/api/v1/persistentvolumes?write=everything", empty_pvs,
          R"(write: Unsupported value: \"everything\")");
  refused("/api/v1/persistentvolumes", R"({"kind":"ConfigMapList","items":[]})",
          R"(kind: Invalid value: \"ConfigMapList\")");
  refused("/api/v1/persistentvolumes", R"({"kind":"PersistentVolumeList","items":7})",
          "items: Required value");
  refused("/api/v1/persistentvolumes", "not json", "error decoding the request body");
  refused("/api/v1/namespaces/default/configmaps?write=status",
          R"({"kind":"ConfigMapList","items":[]})", "configmaps have no status subresource");

  // Each item answered on its own: the good one written, the others with their Status.
  auto& cms = server_->http().resource<api::ConfigMap>();
  auto cm = cms.Create(ConfigMap("default", "good"));
  ASSERT_TRUE(cm.ok()) << cm.error().message;
  api::ConfigMap changed = *cm;
  changed.data = api::StringMap{{"a", "2"}};
  changed.api_version = "v1";
  changed.kind = "ConfigMap";
  const std::string body = R"({"kind":"ConfigMapList","items":[)" +
                           api::EncodeJsonText(changed) +
                           R"(,{"metadata":{"name":"x","namespace":"other"}})"
                           R"(,{"metadata":{"namespace":"default"}}]})";
  HttpResponse r = put("/api/v1/namespaces/default/configmaps", body);
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = api::ParseJson(r.body);
  ASSERT_TRUE(j.ok()) << r.body;
  const api::Json& items = (*j)["items"];
  ASSERT_EQ(items.size(), 3u) << r.body;
  EXPECT_EQ(items[0]["kind"], "ConfigMap");
  EXPECT_EQ(items[0]["data"]["a"], "2");
  EXPECT_EQ(items[1]["kind"], "Status");
  EXPECT_EQ(items[1]["code"], 400);
  EXPECT_NE(items[1]["message"].get<std::string>().find("does not match the namespace"),
            std::string::npos);
  EXPECT_EQ(items[2]["code"], 400);
  EXPECT_NE(items[2]["message"].get<std::string>().find("metadata.name: Required value"),
            std::string::npos);
  auto got = cms.Get("default", "good");
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->data, (api::StringMap{{"a", "2"}}));
}

}  // namespace
}  // namespace kvol::client
