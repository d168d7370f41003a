// The CRI client, the pod's configuration as kvol writes it, and kvol's own containerd, against
// a real containerd and runc: an image built here from busybox (no registry is needed), a
// sandbox on the node's network, containers that write to a host directory, exit, log in the
// CRI format and are stopped, and the errors a runtime gives. Run as root; containerd, runc, umoci
// and busybox come from scripts/setup.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "node/runtime/cri/containerd.h"
#include "node/runtime/cri/cri_client.h"
#include "node/runtime/cri/cri_log.h"
#include "node/runtime/cri/pod_config.h"
#include "os/exec.h"

namespace kvol::node::cri {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr char kImage[] = "kvol.local/busybox:1";
constexpr char kPause[] = "kvol.local/busybox:pause";

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Run(const std::vector<std::string>& argv) {
  auto r = os::RealExec().Run(argv, 120s);
  ASSERT_TRUE(r.ok()) << argv[0] << ": " << r.status().message();
  ASSERT_EQ(r->exit_code, 0) << argv[0] << " " << (argv.size() > 1 ? argv[1] : "") << ": "
                             << r->output;
}

// An OCI image of the node's static busybox, tagged 1 (cmd sh) and pause (a long sleep, the
// sandbox image), imported into containerd's k8s.io namespace with ctr.
void ImportBusybox(const std::string& dir, const std::string& socket) {
  const std::string layout = dir + "/image", bundle = dir + "/image-bundle";
  Run({"umoci", "init", "--layout", layout});
  Run({"umoci", "new", "--image", layout + ":1"});
  Run({"umoci", "unpack", "--image", layout + ":1", bundle});
  fs::create_directories(bundle + "/rootfs/bin");
  fs::copy_file("/bin/busybox", bundle + "/rootfs/bin/busybox");
  for (const char* tool : {"sh", "sleep", "cat", "echo", "ls", "true", "false"}) {
    fs::create_symlink("busybox", bundle + "/rootfs/bin/" + tool);
  }
  Run({"umoci", "repack", "--image", layout + ":1", bundle});
  Run({"umoci", "config", "--image", layout + ":1", "--config.cmd", "/bin/sh"});
  Run({"umoci", "config", "--image", layout + ":1", "--tag", "pause", "--config.cmd", "/bin/sleep",
       "--config.cmd", "999999999"});
  Run({"tar", "-C", layout, "-cf", dir + "/image.tar", "."});
  Run({"ctr", "--address", socket, "--namespace", "k8s.io", "images", "import", "--base-name",
       "kvol.local/busybox", dir + "/image.tar"});
}

// Whatever a failed test left: containers' shims, and mounts under `dir`.
void Sweep(const std::string& dir) {
  for (const auto& p : fs::directory_iterator("/proc")) {
    const std::string name = p.path().filename();
    if (!std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::string cmd = Read(p.path().string() + "/cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    if (cmd.find("containerd-shim") != std::string::npos && cmd.find(dir) != std::string::npos) {
      kill(std::stoi(name), SIGKILL);
    }
  }
  std::vector<std::string> mounts;
  std::istringstream info(Read("/proc/self/mountinfo"));
  for (std::string line; std::getline(info, line);) {
    std::istringstream f(line);
    std::string id, parent, dev, root, target;
    f >> id >> parent >> dev >> root >> target;
    if (target.rfind(dir, 0) == 0) mounts.push_back(target);
  }
  for (auto it = mounts.rbegin(); it != mounts.rend(); ++it) umount2(it->c_str(), MNT_DETACH);
}

class CriTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/kvol-cri-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = new std::string(tmpl);
    auto started = Containerd::Start({.dir = *dir_ + "/containerd", .sandbox_image = kPause}, 60s);
    ASSERT_TRUE(started.ok()) << started.status().message();
    containerd_ = started->release();
    ImportBusybox(*dir_, containerd_->socket());
  }

  static void TearDownTestSuite() {
    if (containerd_) {
      if (auto c = Client::New(containerd_->endpoint()); c.ok()) {
        auto list =
            (*c)->Call(&pb::RuntimeService::Stub::ListPodSandbox, pb::ListPodSandboxRequest(), 10s);
        for (int i = 0; list.ok() && i < list->items_size(); ++i) {
          static_cast<void>((*c)->StopPodSandbox(list->items(i).id()));
          static_cast<void>((*c)->RemovePodSandbox(list->items(i).id()));
        }
      }
      delete containerd_;
      containerd_ = nullptr;
    }
    if (dir_) {
      Sweep(*dir_);
      std::error_code ec;
      if (!getenv("KVOL_KEEP")) fs::remove_all(*dir_, ec);
      delete dir_;
      dir_ = nullptr;
    }
  }

  void SetUp() override {
    ASSERT_NE(containerd_, nullptr);
    auto c = Client::New(containerd_->endpoint());
    ASSERT_TRUE(c.ok()) << c.status().message();
    client_ = std::move(*c);
  }

  // A pod and its sandbox as the agent describes them: on the node's network, since the runtime
  // has no CNI configuration.
  static api::Pod Pod(const std::string& name) {
    api::Pod p;
    p.metadata.namespace_ = "default";
    p.metadata.name = name;
    p.metadata.uid = "uid-" + name;
    return p;
  }

  SandboxInputs Inputs(const std::string& name) {
    return {.logs_root = *dir_ + "/logs", .network_ready = false, .hostname = name};
  }

  pb::PodSandboxConfig Sandbox(const std::string& name) {
    return SandboxConfig(Pod(name), Inputs(name));
  }

  // A container of pod `pod`, in a read-only root with every capability dropped, its CPU and
  // memory limited.
  pb::ContainerConfig Container(const std::string& pod, const std::string& name,
                                std::vector<std::string> command,
                                std::vector<runtime::BindMount> mounts = {}) {
    api::Container c;
    c.name = name;
    c.image = kImage;
    c.command = std::move(command);
    c.resources.limits["cpu"] = api::Quantity::MustParse("500m");
    c.resources.limits["memory"] = api::Quantity::MustParse("64Mi");
    c.security_context = api::SecurityContext{.capabilities = api::Capabilities{.drop = {"ALL"}},
                                              .read_only_root_filesystem = true,
                                              .allow_privilege_escalation = false};
    auto config =
        ContainerConfig(Pod(pod), c, Inputs(pod),
                        {.image = kImage, .env = {"GREETING=hello"}, .mounts = std::move(mounts)});
    EXPECT_TRUE(config.ok()) << config.status().message();
    return config.ok() ? *config : pb::ContainerConfig();
  }

  // Waits until the container has exited.
  pb::ContainerStatus WaitExited(const std::string& id) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (true) {
      auto s = client_->ContainerStatus(id);
      EXPECT_TRUE(s.ok()) << s.status().message();
      if (!s.ok() || s->state() == pb::CONTAINER_EXITED) return s.ok() ? *s : pb::ContainerStatus();
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "container " << id << " did not exit: " << s->DebugString();
        return *s;
      }
      std::this_thread::sleep_for(50ms);
    }
  }

  static std::string* dir_;
  static Containerd* containerd_;
  std::unique_ptr<Client> client_;
};

std::string* CriTest::dir_ = nullptr;
Containerd* CriTest::containerd_ = nullptr;

TEST_F(CriTest, VersionAndStatus) {
  auto v = client_->Version();
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->runtime_name(), "containerd");
  EXPECT_EQ(v->runtime_api_version(), "v1");
  auto status = client_->RuntimeStatus();
  ASSERT_TRUE(status.ok()) << status.status().message();
  const pb::RuntimeCondition* network = FindCondition(*status, kNetworkReady);
  ASSERT_NE(network, nullptr);
  EXPECT_FALSE(network->status()) << "no CNI configuration was given";
  EXPECT_FALSE(network->reason().empty());
}

TEST_F(CriTest, Images) {
  auto present = client_->ImageStatus(kImage);
  ASSERT_TRUE(present.ok()) << present.status().message();
  ASSERT_TRUE(present->has_value());
  EXPECT_FALSE((*present)->id().empty());
  EXPECT_GT((*present)->size(), 0u);
  auto missing = client_->ImageStatus("kvol.local/missing:1");
  ASSERT_TRUE(missing.ok()) << missing.status().message();
  EXPECT_FALSE(missing->has_value());
  // No registry answers here: the pull fails, in gRPC's words, and names the image.
  auto pulled = client_->PullImage("kvol.invalid/none:1", nullptr, Sandbox("pull"), 60s);
  ASSERT_FALSE(pulled.ok());
  EXPECT_EQ(pulled.status().message().rfind("rpc error: code = ", 0), 0u)
      << pulled.status().message();
  EXPECT_NE(pulled.status().message().find("kvol.invalid/none:1"), std::string::npos)
      << pulled.status().message();
}

TEST_F(CriTest, ContainersRunWriteLogAndExit) {
  const std::string vol = *dir_ + "/vol";
  fs::create_directories(vol);
  pb::PodSandboxConfig sandbox = Sandbox("writer");
  auto sandbox_id = client_->RunPodSandbox(sandbox);
  ASSERT_TRUE(sandbox_id.ok()) << sandbox_id.status().message();
  auto ready = client_->PodSandboxStatus(*sandbox_id);
  ASSERT_TRUE(ready.ok()) << ready.status().message();
  EXPECT_EQ(ready->state(), pb::SANDBOX_READY);
  EXPECT_EQ(ready->metadata().name(), "writer");
  EXPECT_EQ(ready->labels().at(std::string(kPodUidLabel)), "uid-writer");

  pb::ContainerConfig writer =
      Container("writer", "writer", {"/bin/sh", "-c", "echo $(GREETING); echo kept > /data/out"},
                {{.source = vol, .target = "/data"}});
  auto id = client_->CreateContainer(*sandbox_id, writer, sandbox);
  ASSERT_TRUE(id.ok()) << id.status().message();
  ASSERT_TRUE(client_->StartContainer(*id).ok());
  pb::ContainerStatus done = WaitExited(*id);
  EXPECT_EQ(done.exit_code(), 0);
  EXPECT_EQ(done.reason(), "Completed");
  // Both times are there; containerd may note the start after a quick process has ended.
  EXPECT_GT(done.started_at(), 0);
  EXPECT_GT(done.finished_at(), 0);
  EXPECT_EQ(Read(vol + "/out"), "kept\n");
  // The CRI log format: time, stream, F for a full line, the line.
  EXPECT_EQ(sandbox.log_directory(), *dir_ + "/logs/default_writer_uid-writer");
  const std::string log = Read(sandbox.log_directory() + "/writer/0.log");
  EXPECT_NE(log.find(" stdout F hello\n"), std::string::npos) << log;
  std::string output;
  CriLogDecoder decoder;
  decoder.Feed(log, &output);
  EXPECT_EQ(output, "hello\n");
  EXPECT_EQ(decoder.skipped(), 0);

  auto failing = client_->CreateContainer(
      *sandbox_id, Container("writer", "failing", {"/bin/sh", "-c", "exit 3"}), sandbox);
  ASSERT_TRUE(failing.ok()) << failing.status().message();
  ASSERT_TRUE(client_->StartContainer(*failing).ok());
  pb::ContainerStatus failed = WaitExited(*failing);
  EXPECT_EQ(failed.exit_code(), 3);
  EXPECT_EQ(failed.reason(), "Error");

  // A running container stopped with a grace period: sleep, its PID 1, has no handler for
  // SIGTERM, which the kernel then ignores, so the runtime kills it when the 2 s are over.
  auto sleeper = client_->CreateContainer(
      *sandbox_id, Container("writer", "sleeper", {"/bin/sleep", "600"}), sandbox);
  ASSERT_TRUE(sleeper.ok()) << sleeper.status().message();
  ASSERT_TRUE(client_->StartContainer(*sleeper).ok());
  auto running = client_->ContainerStatus(*sleeper);
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->state(), pb::CONTAINER_RUNNING);
  ASSERT_TRUE(client_->StopContainer(*sleeper, 2).ok());
  EXPECT_EQ(WaitExited(*sleeper).state(), pb::CONTAINER_EXITED);

  for (const std::string& c : {*id, *failing, *sleeper}) {
    EXPECT_TRUE(client_->RemoveContainer(c).ok());
    EXPECT_EQ(client_->ContainerStatus(c).status().code(), StatusCode::kNotFound);
  }
  EXPECT_TRUE(client_->StopPodSandbox(*sandbox_id).ok());
  EXPECT_TRUE(client_->StopPodSandbox(*sandbox_id).ok()) << "stopping twice is no error";
  EXPECT_TRUE(client_->RemovePodSandbox(*sandbox_id).ok());
  EXPECT_EQ(client_->PodSandboxStatus(*sandbox_id).status().code(), StatusCode::kNotFound);
}

TEST_F(CriTest, Errors) {
  auto status = client_->ContainerStatus("no-such-container");
  EXPECT_EQ(status.status().code(), StatusCode::kNotFound) << status.status().message();
  EXPECT_EQ(status.status().message().rfind("rpc error: code = NotFound desc = ", 0), 0u)
      << status.status().message();
  EXPECT_EQ(Client::New("tcp://127.0.0.1:1").status().message(),
            "container runtime endpoint \"tcp://127.0.0.1:1\": only unix sockets are supported");
  // A runtime that is not there: Unavailable, within the call's deadline.
  auto gone = Client::New("unix://" + *dir_ + "/none.sock");
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(
      (*gone)->Call(&pb::RuntimeService::Stub::Version, pb::VersionRequest(), 2s).status().code(),
      StatusCode::kUnavailable);
}

TEST(ContainerdConfig, NamesItsDirectoryAndSandboxImage) {
  const std::string c = Containerd::Config(
      {.dir = "/var/lib/kvol/containerd", .sandbox_image = "kvol.local/pause:1"});
  EXPECT_NE(c.find("root = \"/var/lib/kvol/containerd/root\""), std::string::npos) << c;
  EXPECT_NE(c.find("address = \"/var/lib/kvol/containerd/containerd.sock\""), std::string::npos);
  EXPECT_NE(c.find("sandbox_image = \"kvol.local/pause:1\""), std::string::npos);
  EXPECT_NE(c.find("conf_dir = \"/var/lib/kvol/containerd/cni\""), std::string::npos);
  EXPECT_EQ(Containerd::Start({.dir = "relative"}, 1s).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvol::node::cri
