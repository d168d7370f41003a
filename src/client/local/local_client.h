// The in-process transport: a Client whose calls go straight into the API's registries in the
// same process, with no HTTP and no JSON between caller and server. Admission, validation,
// optimistic concurrency and watch semantics are the server's own, so code tested against this
// transport behaves the same over HTTP.
//
// This is the one part of client/ that depends on apiserver/: it is the bridge `kvol server`
// uses to hand its controllers a client. Controllers themselves depend only on client/.
#pragma once

#include "apiserver/api.h"
#include "client/client.h"

namespace kvol::client {

class LocalClient final : public Client {
 public:
  explicit LocalClient(apiserver::Api& api);
  std::optional<ApiError> BindPod(const api::Binding& binding) override;
  ApiOr<api::Namespace> FinalizeNamespace(const api::Namespace& ns) override;
  ApiOr<api::authentication::TokenRequest> CreateToken(std::string_view ns, std::string_view name,
                                       const api::authentication::TokenRequest& request) override;
  // In one commit of the store (Api::UpdateTogether).
  std::vector<ApiOr<api::AnySharedObject>> UpdateTogether(
      std::vector<api::ObjectUpdate> updates) override;

 private:
  apiserver::Api& api_;
};

}  // namespace kvol::client
