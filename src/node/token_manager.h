// The node's service account tokens for pods' projected volumes, as kubelet's token manager
// keeps them: one asked of the API server per (pod, service account, audience, duration), given
// again while fresh, and asked anew once it is 80% through its life or a day old, so that the
// file a pod reads is replaced well before it expires.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "base/status.h"
#include "client/client.h"
#include "os/clock.h"

namespace kvol::node {

// Whether a token issued at `issued` that expires at `expires` should be replaced at `now`.
bool TokenNeedsRefresh(os::WallTime issued, os::WallTime expires, os::WallTime now);

class TokenManager {
 public:
  TokenManager(client::Client& client, const os::Clock& clock);

  // The token for the pod's service account (spec.serviceAccountName, "default" when unset),
  // bound to the pod. When a fresh one cannot be had, a kept one still valid is given.
  StatusOr<api::authentication::TokenRequestStatus> Get(
      const api::Pod& pod, std::string_view audience, std::optional<int64_t> expiration_seconds);

  // Forgets the tokens of a pod that is gone.
  void ForgetPod(std::string_view pod_uid);

  size_t size() const;

 private:
  struct Kept {
    api::authentication::TokenRequestStatus status;
    std::string pod_uid;
    os::WallTime issued;
    os::WallTime expires;
  };

  client::Client& client_;
  const os::Clock& clock_;
  mutable std::mutex mu_;
  std::map<std::string, Kept> kept_;  // by key: ns/sa/pod uid/audience/duration
};

}  // namespace kvol::node
