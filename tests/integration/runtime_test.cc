// Real containers started through `kvol container-init` (as root): namespaces, the private root,
// volumes bound at their mountPath (read-only when asked), exit codes, and nothing left mounted
// on the node afterwards.
// Usage: runtime_test KVOL_BINARY
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "node/runtime/container.h"

namespace kvol {
namespace {

namespace fs = std::filesystem;
using node::runtime::ContainerSpec;

std::string g_kvol;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int MountsUnder(const std::string& dir) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.find(" " + dir + "/") != std::string::npos;
  return n;
}

class RuntimeTest : public ::testing::Test {
 protected:
  RuntimeTest() {
    char tmpl[] = "/tmp/kvol-runtime-test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    fs::create_directories(dir_ + "/volumes/cache");
  }
  ~RuntimeTest() override {
    EXPECT_EQ(MountsUnder(dir_), 0) << "a container's mounts never reach the node";
    fs::remove_all(dir_);
  }

  ContainerSpec Spec(const std::string& name, const std::string& script) {
    ContainerSpec s;
    s.bundle_dir = dir_ + "/containers/" + name;
    s.hostname = "emptydir-pod";
    s.argv = {"sh", "-c", script};
    s.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "GREETING=hello"};
    s.log_path = dir_ + "/" + name + ".log";
    return s;
  }
  // Runs the container to its end: its exit status as the runtime reports it.
  int Run(const ContainerSpec& s) {
    auto pid = node::runtime::StartContainer(s, g_kvol);
    EXPECT_TRUE(pid.ok()) << pid.status().message();
    if (!pid.ok()) return -1;
    int status = 0;
    while (waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string Log(const std::string& name) { return Read(dir_ + "/" + name + ".log"); }

  std::string dir_;
};

TEST_F(RuntimeTest, TwoContainersShareAnEmptyDir) {
  ContainerSpec c1 = Spec("c1", "touch /path1/abc.txt");
  c1.mounts.push_back({dir_ + "/volumes/cache", "/path1", false});
  ASSERT_EQ(Run(c1), 0) << Log("c1");
  ContainerSpec c2 = Spec("c2", "ls /path2");
  c2.mounts.push_back({dir_ + "/volumes/cache", "/path2", false});
  ASSERT_EQ(Run(c2), 0) << Log("c2");
  EXPECT_EQ(Log("c2"), "abc.txt\n");
  EXPECT_TRUE(fs::exists(dir_ + "/volumes/cache/abc.txt"));
}

TEST_F(RuntimeTest, NamespacesAndAPrivateRoot) {
  ContainerSpec c = Spec("c",
                         "echo $$; hostname; echo $GREETING; pwd; touch /etc/kvol-private; ls "
                         "/dev/null /proc/1 >/dev/null && echo ok");
  c.working_dir = "/tmp";
  ASSERT_EQ(Run(c), 0) << Log("c");
  EXPECT_EQ(Log("c"), "1\nemptydir-pod\nhello\n/tmp\nok\n");
  EXPECT_FALSE(fs::exists("/etc/kvol-private")) << "the container's writes to its root are its own";
  EXPECT_TRUE(fs::exists(c.bundle_dir + "/upper/etc/kvol-private"));
}

// The root is the overlay, entered with pivot_root (the node's root is not a mount of the
// container's namespace any more), and a hidden node directory is empty inside.
TEST_F(RuntimeTest, PivotRootAndHiddenPaths) {
  char tmpl[] = "/var/lib/kvol-runtime-test.XXXXXX";
  const std::string secret_dir = mkdtemp(tmpl);
  std::ofstream(secret_dir + "/token") << "secret";
  ContainerSpec c = Spec("c",
                         "awk '$5 == \"/\" {for (i = 7; i <= NF; i++) if ($i == \"-\") print $(i + 1)}' "
                         "/proc/self/mountinfo; ls -A " + secret_dir +
                             " | wc -l; grep -c ' / / ' /proc/self/mountinfo");
  c.hidden_paths = {secret_dir};
  EXPECT_EQ(Run(c), 0) << Log("c");
  EXPECT_EQ(Log("c"), "overlay\n0\n1\n");
  fs::remove_all(secret_dir);
}

// A mountPath through an absolute symlink of the node's root is resolved inside the container's
// root: the volume is there for the container, and nothing is made on the node.
TEST_F(RuntimeTest, MountPathsThroughSymlinksStayInTheRoot) {
  char tmpl[] = "/var/lib/kvol-runtime-test.XXXXXX";
  const std::string host = mkdtemp(tmpl);
  fs::create_directories(host + "/real");
  fs::create_symlink(host + "/real", host + "/link");
  ContainerSpec c = Spec("c", "ls /mnt-check; ls -d " + host + "/link/vol/");
  c.mounts.push_back({dir_ + "/volumes/cache", host + "/link/vol", false});
  c.mounts.push_back({dir_ + "/volumes/cache", "/mnt-check", false});
  std::ofstream(dir_ + "/volumes/cache/marker") << "x";
  EXPECT_EQ(Run(c), 0) << Log("c");
  EXPECT_EQ(Log("c"), "marker\n" + host + "/link/vol/\n");
  EXPECT_FALSE(fs::exists(host + "/real/vol")) << "the target was made on the node";
  fs::remove_all(host);
}

TEST_F(RuntimeTest, ReadOnlyMountsRefuseWritesAndExitCodesPropagate) {
  ContainerSpec c = Spec("c", "touch /ro/x");
  c.mounts.push_back({dir_ + "/volumes/cache", "/ro", true});
  EXPECT_NE(Run(c), 0);
  EXPECT_NE(Log("c").find("Read-only file system"), std::string::npos) << Log("c");
  EXPECT_FALSE(fs::exists(dir_ + "/volumes/cache/x"));
  EXPECT_EQ(Run(Spec("e", "exit 7")), 7);
  EXPECT_EQ(Run(Spec("missing", "exec /no/such/program")), 127);
}

TEST_F(RuntimeTest, KillingTheGroupEndsTheContainer) {
  auto pid = node::runtime::StartContainer(Spec("sleeper", "sleep 300"), g_kvol);
  ASSERT_TRUE(pid.ok());
  usleep(200 * 1000);
  ASSERT_EQ(kill(-*pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  EXPECT_TRUE(WIFSIGNALED(status));
}

// A container with no command waits until SIGTERM, without the kvol binary in its root.
TEST_F(RuntimeTest, AStandInWaitsWithoutTheBinaryInItsRoot) {
  ContainerSpec c = Spec("pause", "");
  c.argv = {"/no/such/kvol", "pause"};
  c.stand_in = true;
  auto pid = node::runtime::StartContainer(c, g_kvol);
  ASSERT_TRUE(pid.ok()) << pid.status().message();
  std::string pid1;
  for (int i = 0; i < 100 && pid1.empty(); ++i) {
    usleep(20 * 1000);
    pid1 = Read(c.bundle_dir + "/pid");
  }
  ASSERT_FALSE(pid1.empty()) << Log("pause");
  usleep(200 * 1000);
  int status = 0;
  EXPECT_EQ(waitpid(*pid, &status, WNOHANG), 0) << "still waiting: " << Log("pause");
  ASSERT_EQ(kill(std::stoi(pid1), SIGTERM), 0);
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << Log("pause");
}

TEST_F(RuntimeTest, BadSpecsAreRefused) {
  ContainerSpec c = Spec("c", "true");
  c.argv.clear();
  EXPECT_EQ(node::runtime::StartContainer(c, g_kvol).status().code(), StatusCode::kInvalidArgument);
  c = Spec("c", "true");
  c.mounts.push_back({dir_, "relative/path", false});
  EXPECT_EQ(node::runtime::StartContainer(c, g_kvol).status().code(), StatusCode::kInvalidArgument);
  c = Spec("c", "true");
  c.mounts.push_back({dir_, "/../../etc/kvol-escape", false});
  EXPECT_EQ(node::runtime::StartContainer(c, g_kvol).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvol

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: runtime_test KVOL_BINARY\n");
    return 2;
  }
  kvol::g_kvol = std::filesystem::absolute(argv[1]).string();
  return RUN_ALL_TESTS();
}
