#include "base/thread.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

namespace kvol {
namespace {

// What the kernel shows for the calling thread.
std::string CommOfThisThread() {
  std::ifstream in("/proc/self/task/" + std::to_string(syscall(SYS_gettid)) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

TEST(SetThreadNameTest, TheKernelShowsTheName) {
  std::string comm, name;
  std::thread([&] {
    SetThreadName("pv-claim");
    comm = CommOfThisThread();
    name = ThreadName();
  }).join();
  EXPECT_EQ(comm, "pv-claim");
  EXPECT_EQ(name, "pv-claim");
}

TEST(SetThreadNameTest, ALongNameIsCutToFifteenBytes) {
  std::string comm;
  std::thread([&] {
    SetThreadName("watch-persistentvolumeclaims");
    comm = CommOfThisThread();
  }).join();
  // pthread_setname_np refuses a name over 15 bytes outright; cut, it is taken.
  EXPECT_EQ(comm, "watch-persisten");
}

}  // namespace
}  // namespace kvol
