// Whether a controller may make objects in a namespace.
#pragma once

#include <string>

#include "api/well_known.h"
#include "client/client.h"

namespace kvol::controller {

// True when namespace `ns`, as the server has it, exists and is not being deleted; false when
// it is gone or terminating (a create there would be refused).
inline StatusOr<bool> NamespaceTakesContent(client::Client& client, const std::string& ns) {
  auto got = client.resource<api::Namespace>().Get("", ns);
  if (!got.ok()) {
    if (api::IsNotFound(got.error())) return false;
    return client::ApiStatus(got.error());
  }
  return !got->metadata.deletion_timestamp && got->status.phase != api::kNamespaceTerminating;
}

}  // namespace kvol::controller
