#include "base/keyed_locks.h"

namespace kvol {

KeyedLocks::Hold::Hold(KeyedLocks& locks, std::string key) : locks_(locks), key_(std::move(key)) {
  std::unique_lock lock(locks_.mu_);
  locks_.cv_.wait(lock, [&] { return !locks_.held_.contains(key_); });
  locks_.held_.insert(key_);
}

KeyedLocks::Hold::~Hold() {
  {
    std::lock_guard lock(locks_.mu_);
    locks_.held_.erase(key_);
  }
  locks_.cv_.notify_all();
}

}  // namespace kvol
