// The prober's schedule and thresholds with a fake clock and scripted results; the tcpSocket
// and httpGet handlers against real sockets on the loopback.
#include "node/runtime/prober.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <deque>
#include <thread>
#include <mutex>
#include <condition_variable>

#include "api/codec.h"
#include "os/testing/fake_clock.h"

namespace kvol::node::runtime {
namespace {

using std::chrono::seconds;

api::Container ContainerWith(const char* json) {
  api::FieldErrors errs;
  api::Container c = api::DecodeStruct<api::Container>(api::Json::parse(json), &errs);
  EXPECT_TRUE(errs.empty());
  return c;
}

// A prober whose probes answer from a script, per kind; what it reported.
struct Harness {
  os::testing::FakeClock clock;
  // Per kind, the answers in order: 1 success, 0 failure, -1 unknown (not running); then
  // successes.
  std::map<ProbeKind, std::deque<int>> script;
  std::vector<std::string> ran, failed, unhealthy;
  int changed = 0;
  Prober prober{clock, Callbacks()};

  ProberCallbacks Callbacks() {
    ProberCallbacks c;
    c.run = [this](const ProbeTarget&, const api::Probe& p, const ProbeAddress&,
                   std::chrono::milliseconds) { return Answer(p); };
    c.unhealthy = [this](const ProbeTarget&, ProbeKind, const std::string& m) {
      unhealthy.push_back(m);
    };
    c.failed = [this](const ProbeTarget&, ProbeKind kind, const std::string& o) {
      failed.push_back(std::string(ProbeKindName(kind)) + ": " + o);
    };
    c.changed = [this] { ++changed; };
    return c;
  }
  ProbeResult Answer(const api::Probe& p) {
    const ProbeKind kind = KindOf(p);
    ran.emplace_back(ProbeKindName(kind));
    auto& answers = script[kind];
    const int a = answers.empty() ? 1 : answers.front();
    if (!answers.empty()) answers.pop_front();
    return {.success = a > 0, .output = a > 0 ? "" : "no", .unknown = a < 0};
  }
  // Probes are told apart by their command: ["startup"], ["liveness"], ["readiness"].
  static ProbeKind KindOf(const api::Probe& p) {
    const std::string& c = p.exec->command.at(0);
    return c == "startup"    ? ProbeKind::kStartup
           : c == "liveness" ? ProbeKind::kLiveness
                             : ProbeKind::kReadiness;
  }
  // Advances the clock by `s` and runs what is due.
  void At(int s) {
    clock.Advance(seconds(s));
    prober.RunDue();
  }
};

const ProbeTarget kRun{"uid", "c", "run-1"};

TEST(ProberTest, LivenessGivesUpAfterItsFailureThreshold) {
  Harness h;
  h.prober.Watch(kRun, ContainerWith(R"({"name": "c", "livenessProbe": {"exec": {"command":
                     ["liveness"]}, "initialDelaySeconds": 5, "periodSeconds": 10,
                     "failureThreshold": 2}})"),
                 h.clock.Monotonic(), "10.0.0.1");
  h.script[ProbeKind::kLiveness] = {false, true, false, false, false};
  h.At(0);
  EXPECT_TRUE(h.ran.empty()) << "not before initialDelaySeconds";
  h.At(5);
  h.At(10);  // a success in between starts the count again
  h.At(10);
  EXPECT_TRUE(h.unhealthy.empty());
  h.At(10);
  EXPECT_EQ(h.ran.size(), 4u);
  EXPECT_EQ(h.failed, (std::vector<std::string>{"Liveness: no", "Liveness: no", "Liveness: no"}));
  EXPECT_EQ(h.unhealthy,
            (std::vector<std::string>{"Container c failed liveness probe, will be restarted"}));
  h.At(10);
  EXPECT_EQ(h.ran.size(), 4u) << "given up: no more runs until the next run of the container";
  EXPECT_TRUE(h.prober.StatusOf(kRun).ready) << "liveness says nothing of readiness";
}

TEST(ProberTest, ReadinessStartsFailedAndTurnsWithItsThresholds) {
  Harness h;
  h.prober.Watch(kRun, ContainerWith(R"({"name": "c", "readinessProbe": {"exec": {"command":
                     ["readiness"]}, "periodSeconds": 1, "successThreshold": 2,
                     "failureThreshold": 1}})"),
                 h.clock.Monotonic(), "10.0.0.1");
  h.script[ProbeKind::kReadiness] = {true, true, false};
  EXPECT_FALSE(h.prober.StatusOf(kRun).ready);
  h.At(0);
  EXPECT_FALSE(h.prober.StatusOf(kRun).ready) << "one success of two";
  h.At(1);
  EXPECT_TRUE(h.prober.StatusOf(kRun).ready);
  h.At(1);
  EXPECT_FALSE(h.prober.StatusOf(kRun).ready);
  EXPECT_EQ(h.changed, 2);
  EXPECT_TRUE(h.unhealthy.empty()) << "readiness never kills";
}

TEST(ProberTest, StartupHoldsTheOthersBack) {
  Harness h;
  h.prober.Watch(kRun, ContainerWith(R"({"name": "c",
                     "startupProbe": {"exec": {"command": ["startup"]}, "periodSeconds": 1,
                                      "failureThreshold": 5},
                     "livenessProbe": {"exec": {"command": ["liveness"]}, "periodSeconds": 1},
                     "readinessProbe": {"exec": {"command": ["readiness"]}, "periodSeconds": 1}})"),
                 h.clock.Monotonic(), "10.0.0.1");
  h.script[ProbeKind::kStartup] = {false, false, true};
  h.At(0);
  h.At(1);
  EXPECT_EQ(h.ran, (std::vector<std::string>{"Startup", "Startup"}));
  EXPECT_FALSE(h.prober.StatusOf(kRun).started);
  h.At(1);
  EXPECT_TRUE(h.prober.StatusOf(kRun).started);
  EXPECT_EQ(h.ran,
            (std::vector<std::string>{"Startup", "Startup", "Startup", "Liveness", "Readiness"}))
      << "the others run once it passes (their delay counts from the container's start)";
  h.At(1);
  EXPECT_EQ(h.ran.size(), 7u) << "the startup probe is done once it passed";
  EXPECT_TRUE(h.prober.StatusOf(kRun).ready);
}

TEST(ProberTest, AContainerNotRunningIsNeitherHealthyNorNot) {
  Harness h;
  h.prober.Watch(kRun, ContainerWith(R"({"name": "c", "readinessProbe": {"exec": {"command":
                     ["readiness"]}, "periodSeconds": 1}})"),
                 h.clock.Monotonic(), "10.0.0.1");
  h.script[ProbeKind::kReadiness] = {-1, -1, 1};
  h.At(0);
  h.At(1);
  EXPECT_TRUE(h.failed.empty()) << "no Unhealthy event";
  EXPECT_FALSE(h.prober.StatusOf(kRun).ready);
  h.At(1);
  EXPECT_TRUE(h.prober.StatusOf(kRun).ready);
}

TEST(ProberTest, AForgottenRunIsProbedNoMore) {
  Harness h;
  const auto spec =
      ContainerWith(R"({"name": "c", "livenessProbe": {"exec": {"command": ["liveness"]}}})");
  h.prober.Watch(kRun, spec, h.clock.Monotonic(), "10.0.0.1");
  h.prober.Watch({"uid", "c", "run-2"}, spec, h.clock.Monotonic(), "10.0.0.1");
  h.prober.Forget("uid", "c", "run-2");
  h.At(0);
  EXPECT_EQ(h.ran.size(), 1u) << "only the run kept";
  h.prober.Forget("uid", "c", "");
  h.At(60);
  EXPECT_EQ(h.ran.size(), 1u);
}

// A probe that hangs holds up no other: another thread runs the others meanwhile, and not the
// hanging one again until its run is over.
TEST(ProberTest, AHangingProbeHoldsUpNoOther) {
  os::testing::FakeClock clock;
  std::mutex mu;
  std::condition_variable cv;
  bool a_started = false, release = false;
  std::vector<std::string> ran;
  ProberCallbacks callbacks;
  callbacks.run = [&](const ProbeTarget& t, const api::Probe&, const ProbeAddress&,
                      std::chrono::milliseconds) {
    std::unique_lock lock(mu);
    ran.push_back(t.uid);
    if (t.uid == "a" && !a_started) {
      a_started = true;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
    }
    return ProbeResult{.success = true};
  };
  Prober prober(clock, callbacks, 2);
  const auto spec = ContainerWith(
      R"({"name": "c", "livenessProbe": {"exec": {"command": ["liveness"]}, "periodSeconds": 10}})");
  prober.Watch({"a", "c", "run"}, spec, clock.Monotonic(), "10.0.0.1");
  prober.Watch({"b", "c", "run"}, spec, clock.Monotonic(), "10.0.0.1");
  std::thread first([&] { prober.RunDue(); });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return a_started; });
  }
  prober.RunDue();  // a hangs on the other thread: b runs here
  clock.Advance(seconds(10));
  prober.RunDue();  // b again; a is still running
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(ran, (std::vector<std::string>{"a", "b", "b"}));
    release = true;
  }
  cv.notify_all();
  first.join();  // a's run ends; a is due again, and runs on that thread
  EXPECT_EQ(ran, (std::vector<std::string>{"a", "b", "b", "a"}));
}

TEST(ProbeAddressTest, NamedPortsAndHosts) {
  const auto spec =
      ContainerWith(R"({"name": "c", "ports": [{"name": 5, "containerPort": 1}, {"name": "web",
      "containerPort": 8080}]})");
  auto probe = [](const char* json) {
    api::FieldErrors errs;
    return api::DecodeStruct<api::Probe>(api::Json::parse(json), &errs);
  };
  auto a = ProbeAddressOf(probe(R"({"httpGet": {"port": "web"}})"), spec, "10.0.0.1");
  EXPECT_EQ(a.host, "10.0.0.1");
  EXPECT_EQ(a.port, 8080);
  a = ProbeAddressOf(probe(R"({"tcpSocket": {"port": 53, "host": "127.0.0.1"}})"), spec, "x");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 53);
  EXPECT_EQ(ProbeAddressOf(probe(R"({"httpGet": {"port": "nope"}})"), spec, "x").port, 0);
}

// A listening socket on the loopback; Serve answers one connection with `reply`.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(fd_, 4), 0);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~Listener() {
    Join();
    close(fd_);
  }
  void Join() {
    if (server_.joinable()) server_.join();
  }
  int port() const { return port_; }
  std::string request;  // what the one connection served sent first (read after the join)
  void Serve(std::string reply) {
    server_ = std::thread([this, reply] {
      const int c = accept(fd_, nullptr, nullptr);
      char buf[4096];
      const ssize_t n = recv(c, buf, sizeof buf, 0);
      if (n > 0) request.assign(buf, static_cast<size_t>(n));
      (void)!send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      close(c);
    });
  }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread server_;
};

TEST(ProbeHandlersTest, TcpAndHttpFromTheNode) {
  Listener open;
  EXPECT_TRUE(RunTcpProbe("127.0.0.1", open.port(), seconds(1)).success);
  int closed_port = 0;
  {
    Listener gone;
    closed_port = gone.port();
  }
  auto refused = RunTcpProbe("127.0.0.1", closed_port, seconds(1));
  EXPECT_FALSE(refused.success);
  EXPECT_NE(refused.output.find("connection refused"), std::string::npos) << refused.output;

  api::HTTPGetAction get;
  get.path = "/healthz";
  get.http_headers = {{.name = "host", .value = "app.example"}, {.name = "X-Probe", .value = "1"}};
  {
    Listener ok;
    ok.Serve("HTTP/1.1 204 No Content\r\n\r\n");
    EXPECT_TRUE(RunHttpProbe(get, "127.0.0.1", ok.port(), seconds(2)).success);
    ok.Join();
    EXPECT_EQ(ok.request,
              "GET /healthz HTTP/1.1\r\nHost: app.example\r\nUser-Agent: kube-probe/1.32\r\n"
              "Accept: */*\r\nX-Probe: 1\r\nConnection: close\r\n\r\n")
        << "the probe's Host replaces kubelet's";
  }
  {
    Listener silent;  // accepts, never answers
    auto timed_out = RunHttpProbe(get, "127.0.0.1", silent.port(), std::chrono::milliseconds(200));
    EXPECT_FALSE(timed_out.success);
    EXPECT_NE(timed_out.output.find("context deadline exceeded"), std::string::npos)
        << timed_out.output;
  }
  Listener bad;
  bad.Serve("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n");
  auto failed = RunHttpProbe(get, "127.0.0.1", bad.port(), seconds(2));
  EXPECT_FALSE(failed.success);
  EXPECT_EQ(failed.output, "HTTP probe failed with statuscode: 503");
}

}  // namespace
}  // namespace kvol::node::runtime
