// Keeping and renewing pods' service account tokens.
#include "node/token_manager.h"

#include "api/authentication.h"
#include "client/worker.h"

namespace kvol::node {
namespace {

constexpr std::chrono::hours kMaxTokenAge{24};

}  // namespace

bool TokenNeedsRefresh(os::WallTime issued, os::WallTime expires, os::WallTime now) {
  if (now >= expires) return true;
  const auto life = expires - issued;
  return now >= issued + life / 10 * 8 || now >= issued + kMaxTokenAge;
}

TokenManager::TokenManager(client::Client& client, const os::Clock& clock)
    : client_(client), clock_(clock) {}

StatusOr<api::authentication::TokenRequestStatus> TokenManager::Get(
    const api::Pod& pod, std::string_view audience, std::optional<int64_t> expiration_seconds) {
  const std::string& ns = pod.metadata.namespace_;
  const std::string sa =
      pod.spec.service_account_name.empty() ? "default" : pod.spec.service_account_name;
  const std::string key = ns + "/" + sa + "/" + pod.metadata.uid + "/" + std::string(audience) +
                          "/" + (expiration_seconds ? std::to_string(*expiration_seconds) : "");
  const os::WallTime now = clock_.Now();
  {
    std::lock_guard lock(mu_);
    std::erase_if(kept_, [&](const auto& e) { return e.second.expires <= now; });
    auto it = kept_.find(key);
    if (it != kept_.end() && !TokenNeedsRefresh(it->second.issued, it->second.expires, now)) {
      return it->second.status;
    }
  }
  api::authentication::TokenRequest req;
  if (!audience.empty()) req.spec.audiences = {std::string(audience)};
  req.spec.expiration_seconds = expiration_seconds;
  req.spec.bound_object_ref =
      api::authentication::BoundObjectReference{"Pod", "v1", pod.metadata.name, pod.metadata.uid};
  auto got = client_.CreateToken(ns, sa, req);
  std::lock_guard lock(mu_);
  if (!got.ok()) {
    // Kubelet's rule: a token still valid serves until a new one comes.
    auto it = kept_.find(key);
    if (it != kept_.end()) return it->second.status;
    return Status(client::ApiStatus(got.error()).code(),
                  "failed to fetch token: " + got.error().message);
  }
  const os::WallTime expires =
      os::WallTime(std::chrono::seconds(got->status.expiration_timestamp.unix_seconds()));
  kept_[key] = {got->status, pod.metadata.uid, now, expires};
  return got->status;
}

void TokenManager::ForgetPod(std::string_view pod_uid) {
  std::lock_guard lock(mu_);
  std::erase_if(kept_, [&](const auto& e) { return e.second.pod_uid == pod_uid; });
}

size_t TokenManager::size() const {
  std::lock_guard lock(mu_);
  return kept_.size();
}

}  // namespace kvol::node
