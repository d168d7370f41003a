// Api: every kind's registry on one store, plus what admission asks of the cluster (does this
// namespace exist, which StorageClass is the default). The HTTP server and the in-process
// client are two doors into the same Api.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "apiserver/registry.h"
#include "os/clock.h"
#include "store/store.h"

namespace kvol::metrics {
class Collector;
}  // namespace kvol::metrics

namespace kvol::apiserver {

class ServiceAccountTokens;

class Api final : public Cluster {
 public:
  Api(store::Store& store, os::Clock& clock);
  ~Api() override;

  // Starts every watch cache and creates the namespaces that always exist (default,
  // kube-system, kube-public, kube-node-lease).
  Status Start();
  void Stop();

  template <class T>
  Registry<T>& registry() {
    return *std::get<std::unique_ptr<Registry<T>>>(registries_);
  }

  // Updates of objects of any kinds written together (see api/object_update.h): each answered,
  // in order, as UpdateShared of its object alone would answer it; every write goes to the
  // store in one WriteMany, an update that follows another only if that one is made. Updates
  // without a resourceVersion, or following none, are made on their own first.
  std::vector<ApiOr<api::AnySharedObject>> UpdateTogether(std::vector<api::ObjectUpdate> updates);

  // The resource served at group/version/resource (group "" for core), or nullptr.
  Resource* Find(std::string_view group, std::string_view version, std::string_view resource);
  // Calls `f` with each resource served.
  void ForEachResource(const std::function<void(Resource&)>& f);

  store::Store& store() { return store_; }
  // The issuer and checker of service account tokens (serviceaccounts/NAME/token); nullptr
  // until one is set, and then no token is issued.
  void SetServiceAccountTokens(std::unique_ptr<ServiceAccountTokens> tokens);
  ServiceAccountTokens* service_account_tokens() { return tokens_.get(); }
  os::Clock& clock() { return clock_; }

  // Cluster
  std::optional<ApiError> CheckNamespace(std::string_view ns) override;
  std::optional<std::string> DefaultStorageClass() override;
  bool AllowsVolumeExpansion(std::string_view name) override;
  std::optional<ApiError> AdmitQuota(std::string_view ns, std::string_view name,
                                     const std::function<api::QuotaItem()>& item,
                                     bool dry_run) override;
  ApiOr<std::shared_ptr<const api::ServiceAccount>> FindServiceAccount(
      std::string_view ns, std::string_view name) override;

 private:
  template <class... T>
  static std::tuple<std::unique_ptr<Registry<T>>...> Registries(std::tuple<T...>*);
  using RegistryTuple = decltype(Registries(static_cast<api::AllKinds*>(nullptr)));

  store::Store& store_;
  os::Clock& clock_;
  RegistryTuple registries_;
  // apiserver_storage_objects, served while the Api lives.
  std::shared_ptr<metrics::Collector> storage_objects_;
  std::unique_ptr<ServiceAccountTokens> tokens_;
  // Quota admission reads and charges a namespace's quotas one object at a time.
  std::mutex quota_mu_;
};

}  // namespace kvol::apiserver
