// Waiting in tests for something another thread (an informer, an elector) brings about.
#pragma once

#include <chrono>
#include <thread>

namespace kvol::client::testing {

// Polls `pred` every millisecond for up to 10 s; whether it became true.
template <class Pred>
bool Eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace kvol::client::testing
