// The atomic writer on a real directory: layout, modes, updates, and what it refuses.
#include "volume/util/atomic_writer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "volume/testing/temp_dir.h"

namespace kvol::volume::util {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Mode(const fs::path& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
}

std::vector<std::string> Entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

const os::WallTime kT0{seconds(1645165663)};  // 2022-02-18 06:27:43 UTC

TEST(AtomicWriter, LaysOutDataDirAndVisibleSymlinksAsKubelet) {
  testing::TempDir dir;
  Payload p = {{"log_level", {"INFO", 0644}}, {"ui.properties", {"color.good=purple\n", 0600}}};
  auto changed = WriteAtomically(dir.path(), p, kT0);
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_TRUE(*changed);

  auto entries = Entries(dir.path());
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0].rfind("..2022_02_18_06_27_43.", 0), 0u) << entries[0];
  EXPECT_EQ(entries[1], "..data");
  EXPECT_EQ(entries[2], "log_level");
  EXPECT_EQ(entries[3], "ui.properties");
  EXPECT_EQ(fs::read_symlink(fs::path(dir.path()) / "..data").string(), entries[0]);
  EXPECT_EQ(fs::read_symlink(fs::path(dir.path()) / "log_level").string(), "..data/log_level");
  EXPECT_EQ(Read(fs::path(dir.path()) / "log_level"), "INFO");
  EXPECT_EQ(Read(fs::path(dir.path()) / "ui.properties"), "color.good=purple\n");
  EXPECT_EQ(Mode(fs::path(dir.path()) / "log_level"), 0644);
  EXPECT_EQ(Mode(fs::path(dir.path()) / "ui.properties"), 0600);
  EXPECT_EQ(Mode(fs::path(dir.path()) / entries[0]), 0755);
}

TEST(AtomicWriter, SamePayloadWritesNothing) {
  testing::TempDir dir;
  Payload p = {{"a", {"1", 0644}}};
  ASSERT_TRUE(WriteAtomically(dir.path(), p, kT0).ok());
  const auto before = fs::read_symlink(fs::path(dir.path()) / "..data");
  auto again = WriteAtomically(dir.path(), p, kT0 + seconds(5));
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
  EXPECT_EQ(fs::read_symlink(fs::path(dir.path()) / "..data"), before);
  // A mode change alone is a change.
  p["a"].mode = 0400;
  EXPECT_TRUE(*WriteAtomically(dir.path(), p, kT0 + seconds(6)));
}

TEST(AtomicWriter, UpdateSwapsDataAndDropsWhatIsGone) {
  testing::TempDir dir;
  const fs::path root(dir.path());
  ASSERT_TRUE(WriteAtomically(dir.path(), {{"a", {"1", 0644}}, {"b", {"2", 0644}}}, kT0).ok());
  const auto old_ts = fs::read_symlink(root / "..data");
  ASSERT_TRUE(
      WriteAtomically(dir.path(), {{"a", {"one", 0644}}, {"c/d", {"4", 0644}}}, kT0 + seconds(1))
          .ok());
  EXPECT_EQ(Read(root / "a"), "one");
  EXPECT_FALSE(fs::exists(fs::symlink_status(root / "b")));
  EXPECT_EQ(fs::read_symlink(root / "c").string(), "..data/c");
  EXPECT_EQ(Read(root / "c" / "d"), "4");
  EXPECT_FALSE(fs::exists(root / old_ts)) << "the previous timestamped directory is removed";
  EXPECT_EQ(Entries(root).size(), 4u);  // ..<ts>, ..data, a, c
}

TEST(AtomicWriter, LeftoversOfAnInterruptedWriteAreCleared) {
  testing::TempDir dir;
  const fs::path root(dir.path());
  fs::create_directory(root / "..2022_01_01_00_00_00.abcdef");
  fs::create_directory_symlink("..2022_01_01_00_00_00.abcdef", root / "..data_tmp");
  ASSERT_TRUE(WriteAtomically(dir.path(), {{"a", {"1", 0644}}}, kT0).ok());
  EXPECT_EQ(Entries(root).size(), 3u);  // ..<ts>, ..data, a
}

TEST(AtomicWriter, EmptyPayloadLeavesOnlyTheDataLink) {
  testing::TempDir dir;
  ASSERT_TRUE(WriteAtomically(dir.path(), {}, kT0).ok());
  EXPECT_EQ(Entries(dir.path()).size(), 2u);
}

TEST(AtomicWriter, RefusesPathsThatEscape) {
  testing::TempDir dir;
  for (const char* bad : {"/etc/passwd", "../x", "a/../../x", "..data", ""}) {
    auto r = WriteAtomically(dir.path(), {{bad, {"x", 0644}}}, kT0);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(Entries(dir.path()).empty()) << "nothing written for a bad payload";
}

}  // namespace
}  // namespace kvol::volume::util
