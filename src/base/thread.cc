#include "base/thread.h"

#include <pthread.h>

namespace kvol {

namespace {
constexpr size_t kMaxName = 15;  // the kernel's TASK_COMM_LEN, 16, with its terminating NUL
}  // namespace

void SetThreadName(std::string_view name) {
  const std::string cut(name.substr(0, kMaxName));
  pthread_setname_np(pthread_self(), cut.c_str());
}

std::string ThreadName() {
  char name[kMaxName + 1] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof name) != 0) return {};
  return name;
}

}  // namespace kvol
