// `kubectl exec` without stdin or a terminal, through a CRI runtime's ExecSync: the command runs
// to its end in the container, and its output and exit status come back whole. The call runs
// on a thread of its own; an eventfd becomes readable when it has answered, so the caller waits
// on one descriptor as with any exec stream.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "node/runtime/cri/cri_client.h"
#include "node/runtime/exec.h"

namespace kvol::node::cri {

class CriExecSync : public runtime::ExecStream {
 public:
  // Runs `argv` in container `id` (the runtime's id) through `client`, which must outlive it.
  static StatusOr<std::unique_ptr<CriExecSync>> Start(Client& client, const std::string& id,
                                                      const std::vector<std::string>& argv);
  ~CriExecSync() override;

  int fd() const override { return event_; }
  std::optional<int> Collect(std::vector<std::pair<int, std::string>>* out) override;
  // ExecSync takes no input: stdin is refused before it starts, so these have nothing to do.
  void WriteStdin(std::string_view data) override { static_cast<void>(data); }
  void CloseStdin() override {}
  void Resize(uint16_t cols, uint16_t rows) override {
    static_cast<void>(cols);
    static_cast<void>(rows);
  }
  // The client went away: the call is cancelled (the runtime ends the process).
  void Kill() override { context_.TryCancel(); }

 private:
  CriExecSync() = default;

  grpc::ClientContext context_;
  int event_ = -1;
  std::mutex mu_;
  std::optional<pb::ExecSyncResponse> answer_;  // guarded by mu_
  std::optional<Status> error_;                 // guarded by mu_
  bool collected_ = false;
  std::thread thread_;
};

}  // namespace kvol::node::cri
