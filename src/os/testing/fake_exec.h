// An Exec for unit tests: answers from a script keyed by the program name, and remembers
// every command line.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "os/exec.h"

namespace kvol::os::testing {

class FakeExec final : public Exec {
 public:
  using Handler = std::function<StatusOr<ExecResult>(const std::vector<std::string>& argv)>;

  StatusOr<ExecResult> Run(const std::vector<std::string>& argv,
                           std::chrono::milliseconds) override {
    Handler h;
    {
      std::lock_guard lock(mu_);
      calls_.push_back(argv);
      auto it = argv.empty() ? handlers_.end() : handlers_.find(argv[0]);
      if (it == handlers_.end()) {
        return NotFoundError("exec: \"" + (argv.empty() ? std::string() : argv[0]) +
                             "\": executable file not found");
      }
      h = it->second;
    }
    return h(argv);
  }

  // `program`'s runs answer with `h`.
  void On(const std::string& program, Handler h) {
    std::lock_guard lock(mu_);
    handlers_[program] = std::move(h);
  }
  std::vector<std::vector<std::string>> calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, Handler> handlers_;
  std::vector<std::vector<std::string>> calls_;
};

}  // namespace kvol::os::testing
