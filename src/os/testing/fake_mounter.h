// A Mounter for unit tests: a mount table in memory. Mount records what it was asked (so a
// test checks the source, type and options) and can be told to fail for one target.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "os/mounter.h"

namespace kvol::os::testing {

class FakeMounter final : public Mounter {
 public:
  struct Call {
    std::string op;  // "mount" or "unmount"
    std::string source, target, type;
    std::vector<std::string> options;
  };

  Status Mount(const std::string& source, const std::string& target, const std::string& type,
               const std::vector<std::string>& options,
               const std::vector<std::string>& sensitive_options = {}) override {
    std::lock_guard lock(mu_);
    calls_.push_back({"mount", source, target, type, options});
    if (auto f = fail_.find(target); f != fail_.end()) return f->second;
    MountPoint m;
    m.id = next_id_++;
    m.source = source;
    m.path = target;
    m.type = type.empty() ? "bind" : type;
    m.options = options;
    m.super_options = sensitive_options;
    table_.push_back(std::move(m));
    return OkStatus();
  }

  Status Unmount(const std::string& target) override {
    std::lock_guard lock(mu_);
    calls_.push_back({"unmount", "", target, "", {}});
    for (auto it = table_.rbegin(); it != table_.rend(); ++it) {
      if (it->path == target) {
        table_.erase(std::next(it).base());
        return OkStatus();
      }
    }
    return NotFoundError("unmount " + target + ": not mounted");
  }

  StatusOr<std::vector<MountPoint>> List() override {
    std::lock_guard lock(mu_);
    return table_;
  }

  StatusOr<bool> IsMountPoint(const std::string& path) override {
    std::lock_guard lock(mu_);
    for (const auto& m : table_) {
      if (m.path == path) return true;
    }
    return false;
  }

  // Mounts at `target` fail with `s` until cleared with OkStatus().
  void FailMountAt(const std::string& target, Status s) {
    std::lock_guard lock(mu_);
    if (s.ok()) {
      fail_.erase(target);
    } else {
      fail_[target] = std::move(s);
    }
  }
  // Adds an entry as if something else had mounted it (reconstruction tests).
  void AddMountForTest(MountPoint m) {
    std::lock_guard lock(mu_);
    m.id = next_id_++;
    table_.push_back(std::move(m));
  }
  std::vector<Call> calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  void ClearCalls() {
    std::lock_guard lock(mu_);
    calls_.clear();
  }

 private:
  mutable std::mutex mu_;
  std::vector<MountPoint> table_;
  std::vector<Call> calls_;
  std::map<std::string, Status> fail_;
  int next_id_ = 100;
};

}  // namespace kvol::os::testing
