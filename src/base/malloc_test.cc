#include "base/malloc.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace kvol {
namespace {

// The bytes that freeing many small blocks (more than the per-thread cache keeps) leaves in
// fast bins, waiting for a merge.
size_t FastBinBytesAfterFreeingSmallBlocks() {
  std::vector<void*> blocks;
  for (int i = 0; i < 4096; ++i) blocks.push_back(malloc(24 + (i % 4) * 16));
  const size_t before = mallinfo2().fsmblks;
  // Every other one, so that no freed block borders another or the top of the heap.
  for (size_t i = 0; i < blocks.size(); i += 2) free(blocks[i]);
  const size_t after = mallinfo2().fsmblks;
  for (size_t i = 1; i < blocks.size(); i += 2) free(blocks[i]);
  return after > before ? after - before : 0;
}

TEST(ConfigureAllocatorTest, FreedSmallBlocksDoNotWaitInFastBins) {
  // Each check runs on a new thread, whose cache of freed blocks (tcache) starts empty.
  size_t before = 0, after = 0;
  std::thread([&] { before = FastBinBytesAfterFreeingSmallBlocks(); }).join();
  ASSERT_GT(before, 0u) << "glibc's defaults keep freed small blocks in fast bins";
  ASSERT_TRUE(ConfigureAllocator());
  std::thread([&] { after = FastBinBytesAfterFreeingSmallBlocks(); }).join();
  EXPECT_EQ(after, 0u);
}

TEST(HugePageTunablesTest, AddsTheSettingOnlyWhereTheKernelGivesHugePagesOnRequest) {
  const std::string madvise = "always [madvise] never\n";
  struct Row {
    const char* name;
    const char* tunables;
    std::string thp;
    std::optional<std::string> want;
  };
  const std::vector<Row> rows = {
      {"unset", nullptr, madvise, "glibc.malloc.hugetlb=1"},
      {"empty", "", madvise, "glibc.malloc.hugetlb=1"},
      {"others kept", "glibc.malloc.tcache_count=8", madvise,
       "glibc.malloc.tcache_count=8:glibc.malloc.hugetlb=1"},
      {"the caller chose", "glibc.malloc.hugetlb=0", madvise, std::nullopt},
      {"the caller chose, among others", "glibc.malloc.check=0:glibc.malloc.hugetlb=2", madvise,
       std::nullopt},
      {"every mapping has them already", nullptr, "[always] madvise never\n", std::nullopt},
      {"none to be had", nullptr, "always madvise [never]\n", std::nullopt},
      {"no such file", nullptr, "", std::nullopt},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(HugePageTunables(row.tunables, row.thp), row.want) << row.name;
  }
}

// The program executed again finds the caller's GLIBC_TUNABLES saved aside, puts it back and
// carries on (no further execution).
TEST(ReexecWithHugePagesTest, ExecutedAgainPutsTheCallersSettingBack) {
  char* argv[] = {nullptr};
  setenv("KVOL_CALLER_GLIBC_TUNABLES", "=glibc.malloc.check=0", 1);
  setenv("GLIBC_TUNABLES", "glibc.malloc.check=0:glibc.malloc.hugetlb=1", 1);
  ReexecWithHugePages(argv);
  ASSERT_NE(getenv("GLIBC_TUNABLES"), nullptr);
  EXPECT_STREQ(getenv("GLIBC_TUNABLES"), "glibc.malloc.check=0");
  EXPECT_EQ(getenv("KVOL_CALLER_GLIBC_TUNABLES"), nullptr);

  setenv("KVOL_CALLER_GLIBC_TUNABLES", "-", 1);
  setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1", 1);
  ReexecWithHugePages(argv);
  EXPECT_EQ(getenv("GLIBC_TUNABLES"), nullptr);
  EXPECT_EQ(getenv("KVOL_CALLER_GLIBC_TUNABLES"), nullptr);
}

}  // namespace
}  // namespace kvol
