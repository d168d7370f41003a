#include "base/malloc.h"

#include <gtest/gtest.h>
#include <malloc.h>

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

}  // namespace
}  // namespace kvol
