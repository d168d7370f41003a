// Registry credentials from a pod's imagePullSecrets, matched to an image as kubelet's
// credential keyring matches them: docker config secrets (kubernetes.io/dockerconfigjson and
// the older kubernetes.io/dockercfg) give credentials per registry key ("registry.example:5000",
// "*.example.com/team", "https://index.docker.io/v1/"); an image's repository matches a key when
// their ports are equal, their host names have as many labels and each label matches the key's
// as a glob, and the key's path starts the image's path. The most specific keys are tried
// first; Docker Hub images fall back to the index.docker.io key.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "api/core.h"
#include "base/status.h"
#include "node/runtime/cri/api.pb.h"

namespace kvol::node::cri {

namespace pb = ::runtime::v1;

// The repository an image names, as the registry sees it: "busybox:1" is
// "docker.io/library/busybox", "team/app" is "docker.io/team/app", and
// "registry.example:5000/app@sha256:..." is "registry.example:5000/app".
std::string ImageRepository(std::string_view image);

class Keyring {
 public:
  // Adds the credentials of one of the pod's imagePullSecrets. A secret of another type, or
  // without its key, adds nothing; a config that is not valid JSON, or an "auth" that is not
  // base64 of "user:password", is InvalidArgument naming the secret.
  Status Add(const api::Secret& secret);

  // The credentials to try for `image`, in order; empty to pull without.
  std::vector<pb::AuthConfig> Lookup(std::string_view image) const;

 private:
  // By normalized key (host[:port][/path]); a key may hold several.
  std::map<std::string, std::vector<pb::AuthConfig>, std::greater<>> entries_;
};

}  // namespace kvol::node::cri
