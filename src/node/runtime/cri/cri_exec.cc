// CriExecSync: one ExecSync call on its own thread, answered through an eventfd.
#include "node/runtime/cri/cri_exec.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "csi/client.h"

namespace kvol::node::cri {

StatusOr<std::unique_ptr<CriExecSync>> CriExecSync::Start(Client& client, const std::string& id,
                                                          const std::vector<std::string>& argv) {
  std::unique_ptr<CriExecSync> s(new CriExecSync());
  s->event_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->event_ < 0) return InternalError(std::string("eventfd: ") + std::strerror(errno));
  pb::ExecSyncRequest req;
  req.set_container_id(id);
  for (const auto& a : argv) req.add_cmd(a);
  req.set_timeout(0);  // as long as the command runs, as kubectl exec waits
  s->thread_ = std::thread([s = s.get(), &client, req = std::move(req)] {
    pb::ExecSyncResponse resp;
    grpc::Status status = client.ExecSync(&s->context_, req, &resp);
    {
      std::lock_guard lock(s->mu_);
      if (status.ok()) {
        s->answer_ = std::move(resp);
      } else {
        s->error_ = csi::FromGrpc(status);
      }
    }
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(s->event_, &one, sizeof one);
  });
  return s;
}

CriExecSync::~CriExecSync() {
  Kill();
  if (thread_.joinable()) thread_.join();
  if (event_ >= 0) close(event_);
}

std::optional<int> CriExecSync::Collect(std::vector<std::pair<int, std::string>>* out) {
  out->clear();
  std::lock_guard lock(mu_);
  if (collected_) return answer_ ? answer_->exit_code() : 126;
  if (!answer_ && !error_) return std::nullopt;
  collected_ = true;
  if (error_) {
    // As a shell reports a command it could not run.
    out->emplace_back(2, error_->message() + "\n");
    return 126;
  }
  if (!answer_->stdout().empty()) out->emplace_back(1, answer_->stdout());
  if (!answer_->stderr().empty()) out->emplace_back(2, answer_->stderr());
  return answer_->exit_code();
}

}  // namespace kvol::node::cri
