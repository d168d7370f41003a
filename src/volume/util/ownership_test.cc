#include "volume/util/ownership.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "volume/testing/temp_dir.h"

namespace kvol::volume::util {
namespace {

namespace fs = std::filesystem;

struct Mode {
  gid_t gid;
  mode_t mode;
};
Mode Of(const std::string& path) {
  struct stat st;
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return {st.st_gid, static_cast<mode_t>(st.st_mode & 07777)};
}

// (modes before, read-only) -> modes after; every entry gets the group. Run as root, as the
// node agent is: only root gives a file any group.
TEST(SetVolumeOwnershipTest, GroupAndModesAsKubelet) {
  struct Case {
    std::string name;
    bool read_only;
    mode_t dir_before, file_before, exe_before;
    mode_t dir_after, file_after, exe_after;
  };
  const Case cases[] = {
      {"read-write", false, 0700, 0600, 0700, 02770, 0660, 0760},
      {"read-only", true, 0700, 0600, 0700, 02750, 0640, 0740},
      {"already open", false, 0777, 0666, 0755, 02777, 0666, 0775},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    testing::TempDir tmp;
    const std::string root = tmp.path() + "/vol";
    fs::create_directories(root + "/sub");
    std::ofstream(root + "/sub/f") << "x";
    std::ofstream(root + "/run.sh") << "#!/bin/sh";
    fs::create_symlink("sub/f", root + "/link");
    chmod(root.c_str(), c.dir_before);
    chmod((root + "/sub").c_str(), c.dir_before);
    chmod((root + "/sub/f").c_str(), c.file_before);
    chmod((root + "/run.sh").c_str(), c.exe_before);
    ASSERT_TRUE(SetVolumeOwnership(root, 4321, c.read_only).ok());
    for (const char* p : {"", "/sub", "/sub/f", "/run.sh", "/link"}) {
      EXPECT_EQ(Of(root + p).gid, 4321u) << p;
    }
    EXPECT_EQ(Of(root).mode, c.dir_after);
    EXPECT_EQ(Of(root + "/sub").mode, c.dir_after);
    EXPECT_EQ(Of(root + "/sub/f").mode, c.file_after);
    EXPECT_EQ(Of(root + "/run.sh").mode, c.exe_after);
  }
}

TEST(SetVolumeOwnershipTest, ErrorsNameThePath) {
  Status s = SetVolumeOwnership("/nonexistent/volume", 1000, false);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent/volume"), std::string::npos) << s.message();
  EXPECT_EQ(SetVolumeOwnership("/tmp", -1, false).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvol::volume::util
