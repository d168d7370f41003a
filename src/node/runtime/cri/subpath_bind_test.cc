// subPath binds with real mounts (run as root): what is bound, what is refused, and that
// unbinding leaves the volume's files alone.
#include "node/runtime/cri/subpath_bind.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "os/files.h"
#include "os/mounter.h"

namespace kvol::node::cri {
namespace {

namespace fs = std::filesystem;

bool MountedBelow(const std::string& dir) {
  std::string table;
  if (!os::ReadFile("/proc/self/mountinfo", &table).ok()) return false;
  for (const auto& m : os::ParseMountInfo(table)) {
    if (m.path.rfind(dir + "/", 0) == 0) return true;
  }
  return false;
}

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class SubPathBindTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "run as root: the test mounts";
    root_ = fs::path(testing::TempDir()) / ("subpath_bind." + std::to_string(getpid()));
    fs::remove_all(root_);
    volume_ = root_ / "volume";
    binds_ = root_ / "bundle" / "subpaths" / "0";
    fs::create_directories(volume_ / "dir" / "deeper");
    std::ofstream(volume_ / "dir" / "deeper" / "f") << "in the volume";
    std::ofstream(volume_ / "file") << "a file";
    fs::create_directories(root_ / "outside");
    std::ofstream(root_ / "outside" / "secret") << "outside";
    fs::create_directory_symlink(root_ / "outside", volume_ / "link");
  }
  void TearDown() override {
    if (root_.empty()) return;
    EXPECT_TRUE(UnbindSubPaths(binds_.string()).ok());
    EXPECT_FALSE(MountedBelow(root_.string()));
    if (!MountedBelow(root_.string())) fs::remove_all(root_);
  }
  Status Bind(const std::string& sub, const std::string& index) {
    return BindSubPath(volume_.string(), (volume_ / sub).lexically_normal().string(),
                       (binds_ / index).string());
  }

  fs::path root_, volume_, binds_;
};

TEST_F(SubPathBindTest, BindsDirectoriesAndFilesOfTheVolume) {
  ASSERT_TRUE(Bind("dir/deeper", "0").ok());
  ASSERT_TRUE(Bind("file", "1").ok());
  EXPECT_EQ(Read(binds_ / "0" / "f"), "in the volume");
  EXPECT_EQ(Read(binds_ / "1"), "a file");
  std::ofstream(binds_ / "0" / "new") << "through the bind";
  EXPECT_EQ(Read(volume_ / "dir" / "deeper" / "new"), "through the bind");

  ASSERT_TRUE(UnbindSubPaths(binds_.string()).ok());
  EXPECT_FALSE(MountedBelow(binds_.string()));
  EXPECT_FALSE(fs::exists(binds_));
  EXPECT_EQ(Read(volume_ / "dir" / "deeper" / "new"), "through the bind") << "the volume stays";
  EXPECT_EQ(Read(volume_ / "file"), "a file");
}

TEST_F(SubPathBindTest, RefusesWhatCouldLeaveTheVolume) {
  struct Row {
    const char* name;
    std::string sub;
    StatusCode code;
  };
  const Row rows[] = {
      {.name = "a symlink out of the volume", .sub = "link", .code = StatusCode::kPermissionDenied},
      {.name = "a path through that symlink",
       .sub = "link/secret",
       .code = StatusCode::kPermissionDenied},
      {.name = "a component that is gone", .sub = "dir/absent", .code = StatusCode::kNotFound},
  };
  int i = 0;
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    Status s = Bind(row.sub, std::to_string(i++));
    EXPECT_EQ(s.code(), row.code) << s.message();
    EXPECT_FALSE(MountedBelow(binds_.string()));
  }
  Status outside =
      BindSubPath(volume_.string(), (root_ / "outside").string(), (binds_ / "9").string());
  EXPECT_EQ(outside.code(), StatusCode::kInvalidArgument) << outside.message();
}

TEST_F(SubPathBindTest, UnbindingNothingIsFine) {
  EXPECT_TRUE(UnbindSubPaths((root_ / "never-made").string()).ok());
}

}  // namespace
}  // namespace kvol::node::cri
