// The OS layer's own logic: the mountinfo parser, the real Exec (it only runs /bin/sh), and the
// way mount errors are worded. Real mounts are exercised by the integration tests.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "os/exec.h"
#include "os/machine.h"
#include "os/mounter.h"
#include "os/testing/fake_mounter.h"

namespace kvol::os {
namespace {

using namespace std::chrono_literals;

TEST(MountInfo, ParsesFieldsOptionalTagsAndEscapes) {
  const char* text =
      "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
      "95 22 0:52 / /var/lib/kvol/pods/u1/volumes/kubernetes.io~empty-dir/cache rw,relatime - "
      "tmpfs tmpfs rw,size=65536k\n"
      "96 22 8:1 /srv/my\\040dir /mnt/with\\040space ro,relatime shared:5 master:1 - ext4 "
      "/dev/sda1 rw\n"
      "garbage line\n";
  auto m = ParseMountInfo(text);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].id, 22);
  EXPECT_EQ(m[0].parent_id, 1);
  EXPECT_EQ(m[0].path, "/");
  EXPECT_EQ(m[0].type, "ext4");
  EXPECT_EQ(m[0].source, "/dev/sda1");
  EXPECT_EQ(m[0].super_options, (std::vector<std::string>{"rw", "errors=remount-ro"}));
  EXPECT_EQ(m[1].type, "tmpfs");
  EXPECT_EQ(m[1].super_options, (std::vector<std::string>{"rw", "size=65536k"}));
  EXPECT_EQ(m[2].root, "/srv/my dir");
  EXPECT_EQ(m[2].path, "/mnt/with space");
  EXPECT_EQ(m[2].options, (std::vector<std::string>{"ro", "relatime"}));
}

TEST(MountInfo, PointsBelowADirectoryDeepestFirst) {
  std::vector<MountPoint> table;
  for (const char* p : {"/", "/a/pods", "/a/pods/u1/x", "/a/pods/u1", "/a/podsX/y", "/a/pods/u2"})
    table.push_back({.path = p});
  EXPECT_EQ(MountPointsBelow(table, "/a/pods"),
            (std::vector<std::string>{"/a/pods/u2", "/a/pods/u1/x", "/a/pods/u1"}));
  EXPECT_EQ(MountPointsBelow(table, "/a/pods/"), MountPointsBelow(table, "/a/pods"));
  EXPECT_TRUE(MountPointsBelow(table, "/b").empty());
}

TEST(MountInfo, ThisProcessHasARoot) {
  auto m = NewRealMounter()->List();
  ASSERT_TRUE(m.ok()) << m.status().message();
  bool root = false;
  for (const auto& p : *m) root = root || p.path == "/";
  EXPECT_TRUE(root);
}

TEST(Exec, CollectsOutputAndExitCode) {
  auto r = RealExec().Run({"sh", "-c", "echo out; echo err >&2; exit 3"}, 10s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->output, "out\nerr\n");
  EXPECT_EQ(DescribeExit(r->exit_code), "exit status 3");
}

TEST(Exec, MissingProgramIsNotFound) {
  auto r = RealExec().Run({"kvol-no-such-program"}, 10s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("kvol-no-such-program"), std::string::npos);
}

TEST(Exec, KillsWhatOverrunsItsTimeout) {
  auto start = std::chrono::steady_clock::now();
  auto r = RealExec().Run({"sleep", "30"}, 50ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(Exec, AHelperLeftRunningDoesNotHoldTheResult) {
  // The program exits at once; a background child keeps the pipe open for 30 s.
  auto start = std::chrono::steady_clock::now();
  auto r = RealExec().Run({"sh", "-c", "echo started; sleep 30 & exit 0"}, 10s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->output, "started\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  (void)RealExec().Run({"pkill", "-f", "^sleep 30$"}, 5s);
}

TEST(Exec, ATimeoutKillsTheProgramsHelpersToo) {
  auto r = RealExec().Run({"sh", "-c", "sleep 31 & sleep 31; echo never"}, 100ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  // SIGKILL is delivered asynchronously: give the helpers a moment to be gone.
  std::string survivors;
  for (int i = 0; i < 500; ++i) {
    auto left = RealExec().Run({"pgrep", "-f", "^sleep 31$"}, 5s);
    ASSERT_TRUE(left.ok());
    survivors = left->exit_code == 0 ? left->output : "";
    if (survivors.empty()) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(survivors, "") << "no helper survives";
}

TEST(Exec, SignalledProgramReportsTheSignal) {
  auto r = RealExec().Run({"sh", "-c", "kill -9 $$"}, 10s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 137);
  EXPECT_EQ(DescribeExit(r->exit_code), "signal: killed");
}

TEST(Mounter, ErrorsCarryMountsOutputAndMaskSecrets) {
  EXPECT_EQ(MountArguments("srv:/x", "/t", "nfs", {"ro"}, {"password=hunter2"}),
            "-t nfs -o ro,<masked> srv:/x /t");
  EXPECT_EQ(MountArguments("/a", "/b", "", {"bind"}, {}), "-o bind /a /b");

  struct ScriptedExec : Exec {
    std::vector<std::string> argv;
    StatusOr<ExecResult> Run(const std::vector<std::string>& a,
                             std::chrono::milliseconds) override {
      argv = a;
      return ExecResult{32, "mount.nfs: Connection refused\n"};
    }
  } exec;
  auto m = NewRealMounter(exec, 1s);
  Status s = m->Mount("srv:/x", "/t", "nfs", {"ro"}, {"password=hunter2"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "mount failed: exit status 32\nMounting command: mount\nMounting arguments: -t nfs -o "
            "ro,<masked> srv:/x /t\nOutput: mount.nfs: Connection refused");
  EXPECT_EQ(exec.argv, (std::vector<std::string>{"mount", "-t", "nfs", "-o", "ro,password=hunter2",
                                                 "srv:/x", "/t"}));
}

// The real mounter with real mounts (run as root): a mount's root is a mount point, what is
// below it or beside it is not, a file bind-mounted over is one, a symlink never is.
TEST(Mounter, TellsMountPointsFromTheKernel) {
  char tmpl[] = "/tmp/kvol-os-test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto m = NewRealMounter();
  const std::string root = dir + "/mnt";
  const std::string file = dir + "/file";
  std::filesystem::create_directories(root);
  std::ofstream(file) << "x";
  std::filesystem::create_symlink(root, dir + "/link");
  EXPECT_FALSE(*m->IsMountPoint(root));
  ASSERT_TRUE(m->Mount("tmpfs", root, "tmpfs", {"size=1m"}).ok());
  std::filesystem::create_directories(root + "/sub");
  std::ofstream(root + "/target") << "";
  ASSERT_TRUE(m->Mount(file, root + "/target", "", {"bind"}).ok());
  EXPECT_TRUE(*m->IsMountPoint(root));
  EXPECT_FALSE(*m->IsMountPoint(root + "/sub"));
  EXPECT_TRUE(*m->IsMountPoint(root + "/target"));
  EXPECT_FALSE(*m->IsMountPoint(dir + "/link"));
  EXPECT_FALSE(*m->IsMountPoint(dir));
  EXPECT_EQ(m->IsMountPoint(dir + "/none").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(m->Unmount(root + "/target").ok());
  EXPECT_TRUE(m->Unmount(root).ok());
  EXPECT_FALSE(*m->IsMountPoint(root));
  std::filesystem::remove_all(dir);
}

// A tmpfs is made by mount(2) itself, with the flags and data mount(8) would give it; an option
// only mount(8) knows still goes through mount(8).
TEST(Mounter, MakesATmpfsWithItsOptions) {
  char tmpl[] = "/tmp/kvol-os-test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto m = NewRealMounter();
  const std::string root = dir + "/mnt";
  std::filesystem::create_directories(root);
  ASSERT_TRUE(
      m->Mount("tmpfs", root, "tmpfs", {"ro", "nosuid", "nodev", "size=1m", "mode=0750"}).ok());
  auto table = m->List();
  ASSERT_TRUE(table.ok());
  std::vector<MountPoint> mine;
  for (const auto& p : *table) {
    if (p.path == root) mine.push_back(p);
  }
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].type, "tmpfs");
  EXPECT_EQ(mine[0].source, "tmpfs");
  for (const char* o : {"ro", "nosuid", "nodev"}) {
    EXPECT_NE(std::find(mine[0].options.begin(), mine[0].options.end(), o), mine[0].options.end())
        << o;
  }
  EXPECT_NE(std::find(mine[0].super_options.begin(), mine[0].super_options.end(), "size=1024k"),
            mine[0].super_options.end());
  EXPECT_NE(std::find(mine[0].super_options.begin(), mine[0].super_options.end(), "mode=750"),
            mine[0].super_options.end());
  struct stat st {};
  ASSERT_EQ(stat(root.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  EXPECT_TRUE(m->Unmount(root).ok());

  // Through mount(8): an option it interprets (noatime here).
  ASSERT_TRUE(m->Mount("tmpfs", root, "tmpfs", {"noatime", "size=1m"}).ok());
  EXPECT_TRUE(*m->IsMountPoint(root));
  EXPECT_TRUE(m->Unmount(root).ok());

  Status missing = m->Mount("tmpfs", dir + "/none", "tmpfs", {"size=1m"});
  EXPECT_EQ(missing.message(), "mount failed: No such file or directory\nMounting command: mount\n"
                               "Mounting arguments: -t tmpfs -o size=1m tmpfs " + dir + "/none");
  std::filesystem::remove_all(dir);
}

TEST(FakeMounter, KeepsATableAndFailsOnRequest) {
  testing::FakeMounter m;
  ASSERT_TRUE(m.Mount("tmpfs", "/a", "tmpfs", {"size=1m"}).ok());
  EXPECT_TRUE(*m.IsMountPoint("/a"));
  m.FailMountAt("/b", InternalError("boom"));
  EXPECT_FALSE(m.Mount("/x", "/b", "", {"bind"}).ok());
  EXPECT_FALSE(*m.IsMountPoint("/b"));
  EXPECT_TRUE(m.Unmount("/a").ok());
  EXPECT_EQ(m.Unmount("/a").code(), StatusCode::kNotFound);
  EXPECT_EQ(m.calls().size(), 4u);
}

TEST(Machine, ReadsThisMachine) {
  MachineInfo m = ReadMachineInfo("/");
  EXPECT_GE(m.cpus, 1);
  EXPECT_GT(m.memory_bytes, 0);
  EXPECT_GT(m.disk_bytes, 0);
  EXPECT_FALSE(m.arch.empty());
  EXPECT_FALSE(m.address.empty());
}

TEST(Machine, ReadsUsage) {
  auto fs = StatFilesystem("/");
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  EXPECT_GT(fs->capacity_bytes, 0);
  EXPECT_LE(fs->available_bytes, fs->capacity_bytes);
  EXPECT_LE(fs->inodes_free, fs->inodes);
  auto missing = StatFilesystem("/no/such/dir");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/no/such/dir"), std::string::npos);

  auto mem = ReadMemoryStats();
  ASSERT_TRUE(mem.ok()) << mem.status().ToString();
  EXPECT_GT(mem->total_bytes, 0);
  EXPECT_LE(mem->available_bytes, mem->total_bytes);

  auto pids = ReadProcessStats();
  ASSERT_TRUE(pids.ok()) << pids.status().ToString();
  EXPECT_GT(pids->in_use, 1) << "this process and init at least";
  EXPECT_LT(pids->in_use, pids->max_pids);
}

TEST(Machine, MeasuresADirectoryAsDuDoes) {
  char tmpl[] = "/tmp/kvol-du.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto empty = MeasureDirectory(dir);
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_EQ(empty->inodes, 1);
  ASSERT_EQ(
      std::system(("mkdir " + dir + "/sub && head -c 1048576 /dev/urandom >" + dir +
                   "/sub/f && ln " + dir + "/sub/f " + dir + "/hard && ln -s /usr " + dir + "/link")
                      .c_str()),
      0);
  auto full = MeasureDirectory(dir);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->inodes, 4) << "the directory, sub, f (linked twice) and the symlink";
  EXPECT_GE(full->bytes - empty->bytes, 1 << 20) << "the file's blocks, once";
  EXPECT_LT(full->bytes - empty->bytes, 2 << 20) << "not twice, and not /usr through the link";
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(MeasureDirectory(dir).ok());
}

}  // namespace
}  // namespace kvol::os
