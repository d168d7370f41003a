// subPath resolution on real directories: plain paths, created paths, symlinks inside the
// volume, and every way out refused.
#include "volume/util/subpath.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "volume/testing/temp_dir.h"

namespace kvol::volume::util {
namespace {

namespace fs = std::filesystem;

TEST(SubPath, ResolvesAndCreatesInsideTheVolume) {
  testing::TempDir tmp;
  const std::string vol = tmp.path() + "/vol";
  fs::create_directories(vol + "/html");
  auto p = PrepareSubPath(vol, "html");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(*p, fs::canonical(vol + "/html").string());
  auto made = PrepareSubPath(vol, "a/b/./c");
  ASSERT_TRUE(made.ok()) << made.status().message();
  EXPECT_TRUE(fs::is_directory(vol + "/a/b/c"));
  // A symlink that stays inside is fine.
  fs::create_directory_symlink("html", vol + "/site");
  EXPECT_EQ(*PrepareSubPath(vol, "site"), fs::canonical(vol + "/html").string());
  fs::create_directory_symlink(vol + "/a", vol + "/abs-inside");
  EXPECT_TRUE(PrepareSubPath(vol, "abs-inside/b").ok());
}

TEST(SubPath, EveryWayOutIsRefused) {
  testing::TempDir tmp;
  const std::string vol = tmp.path() + "/vol";
  fs::create_directories(vol);
  fs::create_directories(tmp.path() + "/secret");
  fs::create_directory_symlink("/", vol + "/root");
  fs::create_directory_symlink("../secret", vol + "/up");
  fs::create_symlink("/nonexistent/target", vol + "/dangling");
  for (const char* bad : {"root", "root/etc", "up", "up/x", "..", "a/../..", "/etc", "dangling"}) {
    auto p = PrepareSubPath(vol, bad);
    EXPECT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument)
        << bad << ": " << p.status().message();
  }
  EXPECT_EQ(PrepareSubPath(vol, "root").status().message(),
            "subpath \"/\" not within volume path \"" + vol + "\"");
  EXPECT_FALSE(fs::exists(tmp.path() + "/secret/x")) << "nothing was created outside";
}

}  // namespace
}  // namespace kvol::volume::util
