#include "controller/rootca/publisher.h"

#include "api/well_known.h"
#include "controller/util/namespace.h"

namespace kvol::controller::rootca {

using client::ApiStatus;

Publisher::Publisher(client::Client& client, Options options)
    : client_(client), options_(std::move(options)) {}

Publisher::~Publisher() { Stop(); }

namespace {

bool Current(const api::ConfigMap& cm, const std::string& bundle) {
  auto it = cm.metadata.annotations.find(std::string(kDescriptionAnnotation));
  return cm.data.size() == 1 && cm.data.begin()->first == api::kRootCaKey &&
         cm.data.begin()->second == bundle && it != cm.metadata.annotations.end() &&
         !it->second.empty();
}

}  // namespace

Status Publisher::Sync(const std::string& ns) {
  auto& config_maps = client_.resource<api::ConfigMap>();
  std::optional<api::ConfigMap> cm;
  if (config_maps_) {
    if (auto cached = config_maps_->Get(ns, api::kRootCaConfigMap)) cm = *cached;
  } else if (auto got = config_maps.Get(ns, api::kRootCaConfigMap); got.ok()) {
    cm = *std::move(got);
  } else if (!api::IsNotFound(got.error())) {
    return ApiStatus(got.error());
  }
  if (cm && Current(*cm, options_.ca_bundle)) return OkStatus();

  KVOL_ASSIGN_OR_RETURN(bool takes_content, NamespaceTakesContent(client_, ns));
  if (!takes_content) return OkStatus();
  if (!cm) {
    api::ConfigMap fresh;
    fresh.api_version = "v1";
    fresh.kind = "ConfigMap";
    fresh.metadata.namespace_ = ns;
    fresh.metadata.name = api::kRootCaConfigMap;
    fresh.metadata.annotations[std::string(kDescriptionAnnotation)] = kDescription;
    fresh.data[std::string(api::kRootCaKey)] = options_.ca_bundle;
    auto created = config_maps.Create(fresh);
    if (created.ok()) return OkStatus();
    // Made meanwhile: its informer event brings it back here. A namespace deleted since, or
    // being deleted: nothing to do.
    const auto& err = created.error();
    if (api::IsAlreadyExists(err) || api::IsNotFound(err) || err.code == 403) return OkStatus();
    return ApiStatus(err);
  }
  cm->data.clear();
  cm->data[std::string(api::kRootCaKey)] = options_.ca_bundle;
  cm->metadata.annotations[std::string(kDescriptionAnnotation)] = kDescription;
  auto updated = config_maps.Update(*cm);
  if (updated.ok() || api::IsNotFound(updated.error())) return OkStatus();
  return ApiStatus(updated.error());  // a conflict: synced again with the newer object
}

Status Publisher::Start(std::chrono::milliseconds sync_timeout) {
  queue_ = std::make_unique<client::WorkQueue>(
      *options_.clock, client::WorkQueueOptions{.name = "root_ca_cert_publisher"});
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  auto& namespaces = informers_->Handle<api::Namespace>(
      {.on_add = [this](const auto& ns) { queue_->Add(ns->metadata.name); },
       .on_update = [this](const auto&, const auto& ns) { queue_->Add(ns->metadata.name); }});
  // Only kube-root-ca.crt, whatever happened to it, brings its namespace back.
  auto mine = [this](const std::shared_ptr<const api::ConfigMap>& cm) {
    if (cm->metadata.name == api::kRootCaConfigMap) queue_->Add(cm->metadata.namespace_);
  };
  config_maps_ = &informers_->Handle<api::ConfigMap>(
      {.on_add = mine, .on_update = [mine](const auto&, const auto& cm) { mine(cm); },
       .on_delete = mine});
  config_maps_->Start();
  namespaces.Start();
  if (!config_maps_->WaitForSync(sync_timeout) || !namespaces.WaitForSync(sync_timeout)) {
    Stop();
    return UnavailableError("root-ca-cert-publisher: caches did not fill in time");
  }
  workers_.Start(
      *queue_, options_.workers, "root-ca", [this](const std::string& ns) { return Sync(ns); },
      "root-ca-cert-publisher");
  return OkStatus();
}

void Publisher::Stop() {
  if (informers_) informers_->Stop();
  workers_.Stop();
}

}  // namespace kvol::controller::rootca
