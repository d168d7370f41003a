#include "controller/util/worker.h"

#include "base/log.h"

namespace kvol::controller {

Status ApiStatus(const api::ApiError& e) {
  StatusCode code = StatusCode::kUnknown;
  if (e.code == 404) code = StatusCode::kNotFound;
  if (e.code == 409) code = api::IsConflict(e) ? StatusCode::kAborted : StatusCode::kAlreadyExists;
  if (e.code >= 500) code = StatusCode::kUnavailable;
  return Status(code, e.message);
}

void RunWorker(client::WorkQueue& queue, const std::function<Status(const std::string&)>& sync,
               std::string_view who) {
  while (auto key = queue.Get()) {
    Status s = sync(*key);
    if (s.ok()) {
      queue.Forget(*key);
    } else {
      if (s.code() != StatusCode::kAborted) {
        log::Warn(std::string(who) + ": " + *key + ": " + s.message());
      }
      queue.AddRateLimited(*key);
    }
    queue.Done(*key);
  }
}

}  // namespace kvol::controller
