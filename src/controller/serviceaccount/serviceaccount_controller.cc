#include "controller/serviceaccount/serviceaccount_controller.h"

#include "api/well_known.h"
#include "client/worker.h"
#include "controller/util/namespace.h"

namespace kvol::controller::serviceaccount {

using client::ApiStatus;

Controller::Controller(client::Client& client, Options options)
    : client_(client), options_(options) {}

Controller::~Controller() { Stop(); }

Status Controller::Sync(const std::string& ns) {
  if (accounts_ && accounts_->Get(ns, kDefaultServiceAccount)) return OkStatus();
  KVOL_ASSIGN_OR_RETURN(bool takes_content, NamespaceTakesContent(client_, ns));
  if (!takes_content) return OkStatus();
  api::ServiceAccount sa;
  sa.api_version = "v1";
  sa.kind = "ServiceAccount";
  sa.metadata.namespace_ = ns;
  sa.metadata.name = kDefaultServiceAccount;
  auto created = client_.resource<api::ServiceAccount>().Create(sa);
  if (created.ok() || api::IsAlreadyExists(created.error())) return OkStatus();
  // A namespace deleted since: nothing to do.
  if (created.error().code == 403 || api::IsNotFound(created.error())) return OkStatus();
  return ApiStatus(created.error());
}

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  queue_ = std::make_unique<client::WorkQueue>(*options_.clock,
                                               client::WorkQueueOptions{.name = "serviceaccount"});
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  auto& namespaces = informers_->Handle<api::Namespace>(
      {.on_add = [this](const auto& ns) { queue_->Add(ns->metadata.name); },
       .on_update = [this](const auto&, const auto& ns) { queue_->Add(ns->metadata.name); }});
  accounts_ = &informers_->Handle<api::ServiceAccount>({.on_delete = [this](const auto& sa) {
    if (sa->metadata.name == kDefaultServiceAccount) queue_->Add(sa->metadata.namespace_);
  }});
  accounts_->Start();
  namespaces.Start();
  if (!accounts_->WaitForSync(sync_timeout) || !namespaces.WaitForSync(sync_timeout)) {
    Stop();
    return UnavailableError("serviceaccount controller: caches did not fill in time");
  }
  workers_.Start(
      *queue_, options_.workers, "serviceaccount",
      [this](const std::string& ns) { return Sync(ns); }, "serviceaccount-controller");
  return OkStatus();
}

void Controller::Stop() {
  if (informers_) informers_->Stop();
  workers_.Stop();
}

}  // namespace kvol::controller::serviceaccount
