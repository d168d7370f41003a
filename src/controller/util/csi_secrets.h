// The secrets a CSI call carries, as kvol's built-in attacher and provisioner read them.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "api/meta.h"
#include "client/client.h"
#include "client/worker.h"
#include "volume/plugins/csi/csi_util.h"

namespace kvol::controller {

// The data of the Secret `ref` names, read from the API and decoded; empty without a `ref`.
// The error says which secret could not be read.
inline StatusOr<std::map<std::string, std::string>> CsiSecretsOf(
    client::Client& c, const std::optional<api::SecretReference>& ref) {
  std::map<std::string, std::string> out;
  if (!ref) return out;
  auto secret = c.resource<api::Secret>().Get(ref->namespace_, ref->name);
  if (!secret.ok()) {
    return Status(
        client::ApiStatus(secret.error()).code(),
        "cannot read secret " + ref->namespace_ + "/" + ref->name + ": " + secret.error().message);
  }
  return volume::plugins::CsiSecrets(*secret);
}

}  // namespace kvol::controller
