#include "controller/namespace/namespace_controller.h"

#include <algorithm>

#include "api/well_known.h"
#include "client/worker.h"
#include "controller/namespace/content.h"

namespace kvol::controller::namespace_ {

using client::ApiStatus;

Controller::Controller(client::Client& client, Options options)
    : client_(client), options_(options) {}

Controller::~Controller() { Stop(); }

Status Controller::UpdateConditions(api::Namespace& ns,
                                    std::vector<api::NamespaceCondition> conditions) {
  if (ns.status.conditions == conditions && ns.status.phase == api::kNamespaceTerminating) {
    return OkStatus();
  }
  api::Namespace next = ns;
  next.status.phase = api::kNamespaceTerminating;
  next.status.conditions = std::move(conditions);
  auto written = client_.resource<api::Namespace>().UpdateStatus(next);
  if (!written.ok()) return ApiStatus(written.error());
  ns = *std::move(written);
  return OkStatus();
}

StatusOr<Controller::Result> Controller::Sync(const std::string& name) {
  auto& namespaces = client_.resource<api::Namespace>();
  auto got = namespaces.Get("", name);
  if (!got.ok()) {
    if (api::IsNotFound(got.error())) return Result{};
    return ApiStatus(got.error());
  }
  api::Namespace ns = *std::move(got);
  if (!ns.metadata.deletion_timestamp) return Result{};
  auto& finalizers = ns.spec.finalizers;
  const bool ours =
      std::find(finalizers.begin(), finalizers.end(), api::kNamespaceFinalizer) != finalizers.end();
  if (!ours) {
    // OBSERVATION: emptied already; other finalizers (of other controllers) may still hold it.
    if (!finalizers.empty()) return Result{};
    api::DeleteOptions opts;
    opts.precondition_uid = ns.metadata.uid;
    auto deleted = namespaces.Delete("", name, opts);
    if (!deleted.ok() && !api::IsNotFound(deleted.error())) return ApiStatus(deleted.error());
    return Result{};
  }
  const Remaining remaining = DeleteContent(client_, name);
  KVOL_RETURN_IF_ERROR(
      UpdateConditions(ns, DeletionConditions(remaining, ns.status.conditions,
                                              api::Time::FromTimePoint(options_.clock->Now()))));
  if (!remaining.empty()) {
    // OBSERVATION: content remains, or could not be deleted: look again in about half the
    // time it should take.
    auto wait = std::chrono::milliseconds(remaining.estimate_seconds * 500);
    return Result{.requeue =
                      std::clamp(wait, std::chrono::milliseconds(200), options_.max_requeue)};
  }
  // OBSERVATION: the namespace is empty: take our finalizer out; with none left, the server
  // removes the namespace.
  api::Namespace finalized = ns;
  std::erase(finalized.spec.finalizers, std::string(api::kNamespaceFinalizer));
  auto written = client_.FinalizeNamespace(finalized);
  if (!written.ok()) {
    if (api::IsNotFound(written.error())) return Result{};
    return ApiStatus(written.error());
  }
  return Result{};
}

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  queue_ = std::make_unique<client::WorkQueue>(*options_.clock,
                                               client::WorkQueueOptions{.name = "namespace"});
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  auto changed = [this](const auto& ns) {
    if (ns->metadata.deletion_timestamp) queue_->Add(ns->metadata.name);
  };
  auto& namespaces = informers_->Handle<api::Namespace>(
      {.on_add = changed, .on_update = [changed](const auto&, const auto& ns) { changed(ns); }});
  namespaces.Start();
  if (!namespaces.WaitForSync(sync_timeout)) {
    Stop();
    return UnavailableError("namespace controller: the namespace cache did not fill in time");
  }
  auto sync = [this](const std::string& name) -> Status {
    auto result = Sync(name);
    if (!result.ok()) return result.status();
    if (result->requeue) queue_->AddAfter(name, *result->requeue);
    return OkStatus();
  };
  workers_.Start(*queue_, options_.workers, "namespace", sync, "namespace-controller");
  return OkStatus();
}

void Controller::Stop() {
  if (informers_) informers_->Stop();
  workers_.Stop();
}

}  // namespace kvol::controller::namespace_
