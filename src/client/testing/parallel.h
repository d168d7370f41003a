// For tests and benchmarks: run f(0) .. f(n-1) on `threads` threads. When f returns bool, a
// false stops the thread that got it (the others finish their current item and go on).
#pragma once

#include <atomic>
#include <thread>
#include <type_traits>
#include <vector>

namespace kvol::client::testing {

template <class F>
void Parallel(int n, int threads, F f) {
  std::atomic<int> next{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      for (int i = next++; i < n; i = next++) {
        if constexpr (std::is_same_v<decltype(f(i)), bool>) {
          if (!f(i)) return;
        } else {
          f(i);
        }
      }
    });
  }
  for (auto& t : ts) t.join();
}

}  // namespace kvol::client::testing
