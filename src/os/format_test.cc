// SafeFormatAndMount's rules with scripted blkid and mkfs: blank devices are formatted, devices
// with a filesystem or a partition table never are.
#include "os/format.h"

#include <gtest/gtest.h>

#include "os/testing/fake_exec.h"
#include "os/testing/fake_mounter.h"

namespace kvol::os {
namespace {

using os::ExecResult;

class FormatTest : public ::testing::Test {
 protected:
  void Blkid(int code, std::string out) {
    exec_.On("blkid", [code, out](const auto&) -> StatusOr<ExecResult> { return ExecResult{code, out}; });
  }
  void Mkfs(const std::string& type, int code, std::string out = "") {
    exec_.On("mkfs." + type,
             [code, out](const auto&) -> StatusOr<ExecResult> { return ExecResult{code, out}; });
  }
  std::vector<std::string> Programs() {
    std::vector<std::string> out;
    for (const auto& c : exec_.calls()) out.push_back(c[0]);
    return out;
  }
  os::testing::FakeExec exec_;
  os::testing::FakeMounter mounter_;
};

TEST_F(FormatTest, BlankDeviceIsFormattedThenMounted) {
  Blkid(2, "");
  Mkfs("ext4", 0);
  ASSERT_TRUE(FormatAndMount(exec_, mounter_, "/dev/loop7", "/g", "", {"noatime"}).ok());
  auto calls = exec_.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0], (std::vector<std::string>{"blkid", "-p", "-s", "TYPE", "-s", "PTTYPE", "-o",
                                                "export", "/dev/loop7"}));
  EXPECT_EQ(calls[1], (std::vector<std::string>{"mkfs.ext4", "-F", "-m0", "/dev/loop7"}));
  auto m = mounter_.calls();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].source, "/dev/loop7");
  EXPECT_EQ(m[0].type, "ext4");
  EXPECT_EQ(m[0].options, (std::vector<std::string>{"noatime"}));
}

TEST_F(FormatTest, XfsIsFormattedWithItsOwnTool) {
  Blkid(2, "");
  Mkfs("xfs", 0);
  ASSERT_TRUE(FormatAndMount(exec_, mounter_, "/dev/loop7", "/g", "xfs", {}).ok());
  EXPECT_EQ(exec_.calls()[1], (std::vector<std::string>{"mkfs.xfs", "-f", "/dev/loop7"}));
}

TEST_F(FormatTest, ExistingFilesystemIsNeverFormatted) {
  Blkid(0, "DEVNAME=/dev/loop7\nTYPE=xfs\n");
  ASSERT_TRUE(FormatAndMount(exec_, mounter_, "/dev/loop7", "/g", "", {}).ok());
  EXPECT_EQ(Programs(), std::vector<std::string>{"blkid"});
  EXPECT_EQ(mounter_.calls()[0].type, "xfs") << "mounted as what it holds";

  mounter_.ClearCalls();
  Status s = FormatAndMount(exec_, mounter_, "/dev/loop7", "/g", "ext4", {});
  EXPECT_EQ(s.message(), "failed to mount the volume as \"ext4\", it already contains xfs");
  EXPECT_TRUE(mounter_.calls().empty());
}

TEST_F(FormatTest, PartitionTableRefusesFormatting) {
  Blkid(0, "DEVNAME=/dev/sdb\nPTTYPE=gpt\n");
  Status s = FormatAndMount(exec_, mounter_, "/dev/sdb", "/g", "", {});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "disk /dev/sdb appears to contain a partition table (gpt); it will not be formatted");
  EXPECT_EQ(Programs(), std::vector<std::string>{"blkid"});
}

TEST_F(FormatTest, FailuresSayWhat) {
  Blkid(2, "");
  Mkfs("ext4", 1, "mke2fs: Device size reported to be zero.\n");
  Status s = FormatAndMount(exec_, mounter_, "/dev/loop7", "/g", "ext4", {});
  EXPECT_EQ(s.message(),
            "format of disk \"/dev/loop7\" failed: type:(\"ext4\") target:(\"/g\") errcode:(exit "
            "status 1) output:(mke2fs: Device size reported to be zero.)");
  EXPECT_TRUE(mounter_.calls().empty());
  Blkid(4, "blkid: error: /dev/nope: No such file or directory\n");
  EXPECT_EQ(DetectFilesystem(exec_, "/dev/nope").status().message(),
            "blkid /dev/nope failed: exit status 4: blkid: error: /dev/nope: No such file or directory");
}

}  // namespace
}  // namespace kvol::os
