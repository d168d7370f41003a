// One holder at a time per key: for operations that must not overlap on the same object (a
// volume's id or name) while those on different objects run at once.
#pragma once

#include <condition_variable>
#include <mutex>
#include <set>
#include <string>

namespace kvol {

class KeyedLocks {
 public:
  // Holds `key` from construction, waiting while another holds it, to destruction.
  class Hold {
   public:
    Hold(KeyedLocks& locks, std::string key);
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    KeyedLocks& locks_;
    std::string key_;
  };

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> held_;
};

}  // namespace kvol
