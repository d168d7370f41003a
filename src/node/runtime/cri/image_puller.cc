#include "node/runtime/cri/image_puller.h"

#include <algorithm>

namespace kvol::node::cri {

namespace {
std::chrono::milliseconds Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               t);
}
}  // namespace

ImagePuller::ImagePuller() : thread_([this] { Loop(); }) {}

ImagePuller::~ImagePuller() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (current_context_) current_context_->TryCancel();
  }
  cv_.notify_all();
  thread_.join();
}

bool ImagePuller::Request(const std::string& key, PullFn pull) {
  {
    std::lock_guard lock(mu_);
    if (current_ == key || done_.count(key)) return false;
    if (std::any_of(queue_.begin(), queue_.end(), [&](const Job& j) { return j.key == key; })) {
      return false;
    }
    queue_.push_back(
        {.key = key, .pull = std::move(pull), .asked = std::chrono::steady_clock::now()});
  }
  cv_.notify_all();
  return true;
}

bool ImagePuller::Pending(const std::string& key) const {
  std::lock_guard lock(mu_);
  return current_ == key ||
         std::any_of(queue_.begin(), queue_.end(), [&](const Job& j) { return j.key == key; });
}

std::optional<PullOutcome> ImagePuller::Take(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = done_.find(key);
  if (it == done_.end()) return std::nullopt;
  PullOutcome out = std::move(it->second);
  done_.erase(it);
  return out;
}

void ImagePuller::Forget(const std::string& prefix) {
  std::lock_guard lock(mu_);
  auto mine = [&](const std::string& key) { return key.rfind(prefix, 0) == 0; };
  queue_.erase(
      std::remove_if(queue_.begin(), queue_.end(), [&](const Job& j) { return mine(j.key); }),
      queue_.end());
  for (auto it = done_.begin(); it != done_.end();) {
    it = mine(it->first) ? done_.erase(it) : std::next(it);
  }
  if (!current_.empty() && mine(current_)) {
    // Cancelled, so that the pulls queued behind it (other pods') are not held up by it.
    forget_current_ = true;
    if (current_context_) current_context_->TryCancel();
  }
}

void ImagePuller::Loop() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    grpc::ClientContext context;
    current_ = job.key;
    current_context_ = &context;
    forget_current_ = false;
    lock.unlock();
    const auto started = std::chrono::steady_clock::now();
    PullOutcome out;
    out.ref = job.pull(&context);
    out.pulling = Since(started);
    out.total = Since(job.asked);
    lock.lock();
    current_context_ = nullptr;
    current_.clear();
    if (!forget_current_ && !stopping_) done_[job.key] = std::move(out);
  }
}

}  // namespace kvol::node::cri
