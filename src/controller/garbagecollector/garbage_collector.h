// The garbage collector, as Kubernetes runs it for ownerReferences:
//  - an object all of whose owners are gone is deleted (in the background);
//  - an owner deleted with propagationPolicy Orphan (the "orphan" finalizer) first has its
//    dependents' references to it removed, then its finalizer;
//  - an owner deleted with propagationPolicy Foreground (the "foregroundDeletion" finalizer)
//    has its dependents deleted, and stays until those that block its deletion
//    (blockOwnerDeletion) are gone.
// A dependent with another owner that stays keeps that one and loses the references to owners
// that are gone or going. Owners are looked up in the informers' caches and, when a cache does
// not have one, on the server, so a cache that lags never gets an object deleted.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/meta.h"
#include "client/client.h"
#include "client/informer.h"
#include "client/worker.h"
#include "client/workqueue.h"
#include "controller/garbagecollector/dependents.h"
#include "os/clock.h"

namespace kvol::controller::garbagecollector {

struct Options {
  int workers = 2;
  os::Clock* clock = &os::RealClock();
  // The process's informers, shared with its other controllers; its own when null.
  client::SharedInformers* informers = nullptr;
};

class Collector {
 public:
  Collector(client::Client& client, Options options = {});
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Watches every kind but Events (which own nothing and are owned by nothing).
  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();

  // One pass over the object `key` (ObjectKey), as the caches or the server have it.
  Status Sync(const std::string& key);

  // What the informers tell the collector; tests call these directly. Keys to sync go to the
  // queue once started.
  template <class T>
  void Observe(const T& obj);
  template <class T>
  void ObserveDeleted(const T& obj);

 private:
  // What the collector reads of an object.
  struct State {
    std::string uid;
    std::vector<api::OwnerReference> owners;
    bool deleting = false;
    std::vector<std::string> finalizers;
  };
  // One kind's verbs, for objects the collector knows only by apiVersion, kind and name.
  struct KindOps {
    bool namespaced = false;
    // The object in the informer's cache; nullopt when the cache does not have it (or is not
    // running).
    std::function<std::optional<State>(const std::string& ns, const std::string& name)> cached;
    std::function<api::ApiOr<State>(const std::string& ns, const std::string& name)> live;
    std::function<std::optional<api::ApiError>(const std::string& ns, const std::string& name,
                                               const api::DeleteOptions& opts)>
        remove;
    // Read-modify-write of the object's metadata (`edit` returns false to leave it alone).
    std::function<std::optional<api::ApiError>(const std::string& ns, const std::string& name,
                                               const std::function<bool(api::ObjectMeta&)>& edit)>
        edit;
  };
  template <class T>
  void AddKind();
  const KindOps* Ops(const std::string& api_version, const std::string& kind) const;
  // The object from the cache, else from the server; nullopt when it is gone.
  StatusOr<std::optional<State>> Read(const KindOps& ops, const std::string& ns,
                                      const std::string& name) const;
  void Enqueue(const std::string& key);
  // The key of the owner `ref` of an object in namespace `ns`; empty for a kind not served.
  std::string OwnerKey(const api::OwnerReference& ref, const std::string& ns) const;
  void Observed(const std::string& key, const api::ObjectMeta& meta);
  void Deleted(const std::string& key, const api::ObjectMeta& meta);

  Status Orphan(const KindOps& ops, const ObjectId& id, const State& obj);
  Status Foreground(const KindOps& ops, const ObjectId& id, const State& obj);
  Status AttemptToDelete(const KindOps& ops, const ObjectId& id, const State& obj);

  client::Client& client_;
  const Options options_;
  std::map<std::string, KindOps> kinds_;  // by "<apiVersion>|<kind>"; constant after construction
  Dependents dependents_;
  std::unique_ptr<client::WorkQueue> queue_;
  std::unique_ptr<client::InformerScope> informers_;
  client::Workers workers_;
};

template <class T>
void Collector::Observe(const T& obj) {
  const api::KindInfo& k = api::KindInfoOf<T>();
  Observed(ObjectKey(k.ApiVersion(), k.kind, obj.metadata.namespace_, obj.metadata.name),
           obj.metadata);
}

template <class T>
void Collector::ObserveDeleted(const T& obj) {
  const api::KindInfo& k = api::KindInfoOf<T>();
  Deleted(ObjectKey(k.ApiVersion(), k.kind, obj.metadata.namespace_, obj.metadata.name),
          obj.metadata);
}

}  // namespace kvol::controller::garbagecollector
