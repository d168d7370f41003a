// Image pulls off the pod runtime's thread, one at a time in the order asked, as kubelet pulls
// them by default (serializeImagePulls): a pod whose image is being pulled waits, and the
// other pods' containers start and stop meanwhile.
//
// The backend asks for a pull per pod and image (Request), and takes its outcome once done
// (Take): the image's reference or the error, with how long the pull itself took and how long
// since it was asked (what kubelet's Pulled event calls "including waiting").
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "base/status.h"

namespace kvol::node::cri {

struct PullOutcome {
  StatusOr<std::string> ref = InternalError("not pulled");
  std::chrono::milliseconds pulling{0};  // the pull itself
  std::chrono::milliseconds total{0};    // since it was asked, waiting included
};

class ImagePuller {
 public:
  // Pulls one image under `context` (which the puller cancels when it is destroyed).
  using PullFn = std::function<StatusOr<std::string>(grpc::ClientContext* context)>;

  ImagePuller();
  ~ImagePuller();  // cancels the pull under way; queued ones never run
  ImagePuller(const ImagePuller&) = delete;
  ImagePuller& operator=(const ImagePuller&) = delete;

  // Queues `pull` under `key` ("<pod uid>_<image>") unless a pull for it is queued, under way
  // or done and not yet taken. True when it was queued now.
  bool Request(const std::string& key, PullFn pull);
  // Whether a pull for `key` is queued or under way.
  bool Pending(const std::string& key) const;
  // The outcome of the pull for `key`, once, when it is done.
  std::optional<PullOutcome> Take(const std::string& key);
  // Drops what is queued or done for keys starting with `prefix` (a pod that went). A pull
  // under way for one is cancelled, and its outcome dropped.
  void Forget(const std::string& prefix);

 private:
  struct Job {
    std::string key;
    PullFn pull;
    std::chrono::steady_clock::time_point asked;
  };
  void Loop();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;        // guarded by mu_
  std::string current_;          // the key under way, "" for none; guarded by mu_
  bool forget_current_ = false;  // guarded by mu_
  grpc::ClientContext* current_context_ = nullptr;  // guarded by mu_
  std::map<std::string, PullOutcome> done_;         // guarded by mu_
  bool stopping_ = false;                           // guarded by mu_
  std::thread thread_;
};

}  // namespace kvol::node::cri
