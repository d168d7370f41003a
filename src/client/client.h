// The client every controller and agent uses to talk to the API: one typed interface per kind,
// the same whichever transport carries it. In `kvol server` the in-process transport
// (client/local) calls the API's registries directly, with no HTTP and no JSON between them; a
// remote agent uses the HTTP transport (client/http.h), which speaks Kubernetes' REST protocol
// and reads a kubeconfig.
//
//   client::Client& c = ...;
//   auto pv = c.resource<api::PersistentVolume>().Get("", "pv0001");
//   if (!pv.ok() && api::IsNotFound(pv.error())) ...
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "api/api_error.h"
#include "api/authentication.h"
#include "api/object_update.h"
#include "api/request_options.h"
#include "api/scheme.h"

namespace kvol::client {

using api::ApiError;
using api::ApiOr;
using api::DeleteOptions;
using api::ListOptions;
using api::WriteOptions;

template <class T>
struct ObjectList {
  std::vector<T> items;
  std::string resource_version;  // of the list as a whole: watch from here
  std::string continue_token;    // non-empty when a limit cut the list short
};

// A list whose objects may be shared with others: in process, with the registry and every
// informer holding the same version.
template <class T>
struct SharedList {
  std::vector<std::shared_ptr<const T>> items;
  std::string resource_version;
  std::string continue_token;
};

enum class EventType { kAdded, kModified, kDeleted, kBookmark };
const char* EventTypeName(EventType t);

template <class T>
struct WatchEvent {
  EventType type = EventType::kAdded;
  // Never null. For kDeleted the last state; for kBookmark only metadata.resourceVersion. In
  // process it is the registry's own decoded object, shared by every watcher, not a copy.
  std::shared_ptr<const T> object;
};

// A watch's stream of events.
template <class T>
class Watcher {
 public:
  virtual ~Watcher() = default;
  // The next events, in order; empty when `timeout` passes first. An error ends the watch:
  // IsGone(error) means the resourceVersion is older than the server keeps and the caller must
  // list again; any other error (the server ended the stream, the connection dropped) means
  // watch again from the last resourceVersion seen.
  virtual ApiOr<std::vector<WatchEvent<T>>> Next(std::chrono::milliseconds timeout) = 0;
  // Ends the watch; a Next waiting in another thread returns promptly. Thread-safe.
  virtual void Close() = 0;
};

// What a Watcher returns when its stream ends without a server error (the server's watch
// timeout, a Close): watch again from the last resourceVersion seen.
ApiError WatchClosed(std::string message);
inline bool IsWatchClosed(const ApiError& e) { return e.reason == "WatchClosed"; }

enum class PatchType { kJson, kMerge, kStrategicMerge };
// The Content-Type of a patch type ("application/merge-patch+json", ...).
std::string_view PatchContentType(PatchType t);

// One kind's verbs. For cluster-scoped kinds `ns` is ignored; for namespaced kinds an empty
// `ns` in List and Watch means every namespace. Create, Update and UpdateStatus take the
// namespace and name from the object.
template <class T>
class Resource {
 public:
  virtual ~Resource() = default;

  virtual ApiOr<T> Create(const T& obj, const WriteOptions& opts = {}) = 0;
  // Create, answering with the object shared, as UpdateShared: in process, the very object the
  // server and its watchers share, so a caller that keeps it, or only looks at it, copies
  // nothing.
  virtual ApiOr<std::shared_ptr<const T>> CreateShared(T obj, const WriteOptions& opts = {}) {
    auto created = Create(obj, opts);
    if (!created.ok()) return created.error();
    return std::make_shared<const T>(*std::move(created));
  }
  virtual ApiOr<T> Get(std::string_view ns, std::string_view name) = 0;
  virtual ApiOr<ObjectList<T>> List(std::string_view ns, const ListOptions& opts = {}) = 0;
  // List, with the objects shared where the transport has them shared (in process).
  virtual ApiOr<SharedList<T>> ListShared(std::string_view ns, const ListOptions& opts = {}) {
    auto l = List(ns, opts);
    if (!l.ok()) return l.error();
    SharedList<T> out;
    out.items.reserve(l->items.size());
    for (auto& item : l->items) out.items.push_back(std::make_shared<const T>(std::move(item)));
    out.resource_version = std::move(l->resource_version);
    out.continue_token = std::move(l->continue_token);
    return out;
  }
  // Replaces the object (its spec and metadata; status is kept for kinds with a status
  // subresource). A non-empty metadata.resourceVersion must match: Conflict otherwise.
  virtual ApiOr<T> Update(const T& obj, const WriteOptions& opts = {}) = 0;
  // Writes only the status of a kind with a status subresource.
  virtual ApiOr<T> UpdateStatus(const T& obj, const WriteOptions& opts = {}) = 0;
  // Writes the object and its status in one write, where the transport can (the in-process
  // client): see writes_with_status(). Elsewhere Unsupported (405): use Update, then
  // UpdateStatus.
  virtual bool writes_with_status() const { return false; }
  virtual ApiOr<T> UpdateWithStatus(const T&, const WriteOptions& = {}) {
    return ApiError{405, "MethodNotAllowed", "the object and its status are written apart here",
                    {}, {}, {}, {}};
  }
  // Update (`main`), UpdateStatus (`status`) or UpdateWithStatus (both, where
  // writes_with_status()), answering with the object shared: in process, the very object the
  // server and its watchers share, so a caller that keeps it copies nothing.
  virtual ApiOr<std::shared_ptr<const T>> UpdateShared(T obj, bool main, bool status,
                                                       const WriteOptions& opts = {}) {
    auto written = main && status ? UpdateWithStatus(obj, opts)
                   : status       ? UpdateStatus(obj, opts)
                                  : Update(obj, opts);
    if (!written.ok()) return written.error();
    return std::make_shared<const T>(*std::move(written));
  }
  // UpdateShared of several objects, each answered in order as if written alone (some may
  // fail while others succeed). In process their writes are committed together, so the
  // caller waits once; elsewhere they are written one after another.
  virtual std::vector<ApiOr<std::shared_ptr<const T>>> UpdateSharedMany(
      std::vector<T> objs, bool main, bool status, const WriteOptions& opts = {}) {
    std::vector<ApiOr<std::shared_ptr<const T>>> out;
    out.reserve(objs.size());
    for (auto& obj : objs) out.push_back(UpdateShared(std::move(obj), main, status, opts));
    return out;
  }
  virtual ApiOr<T> Patch(std::string_view ns, std::string_view name, PatchType type,
                         std::string_view patch, bool status = false) = 0;
  // The object as the delete left it: gone, or marked for deletion while finalizers remain.
  virtual ApiOr<T> Delete(std::string_view ns, std::string_view name,
                          const DeleteOptions& opts = {}) = 0;
  virtual ApiOr<std::unique_ptr<Watcher<T>>> Watch(std::string_view ns,
                                                   const ListOptions& opts = {}) = 0;
};

// Read-modify-write with retries on conflict, as client-go's RetryOnConflict: `mutate` edits
// the current object and returns false to leave it alone. The result is the object as stored.
template <class T>
ApiOr<T> Mutate(Resource<T>& r, std::string_view ns, std::string_view name,
                const std::function<bool(T&)>& mutate, bool status = false, int attempts = 16) {
  for (int i = 0;; ++i) {
    auto current = r.Get(ns, name);
    if (!current.ok()) return current;
    T next = *current;
    if (!mutate(next)) return current;
    auto written = status ? r.UpdateStatus(next) : r.Update(next);
    if (written.ok() || !api::IsConflict(written.error()) || i + 1 >= attempts) return written;
  }
}

// Every kind's Resource, from one transport.
class Client {
 public:
  virtual ~Client() = default;

  template <class T>
  Resource<T>& resource() {
    return *std::get<std::unique_ptr<Resource<T>>>(resources_);
  }

  // Assigns a pod to a node (POST pods/NAME/binding), as a scheduler does: the one way
  // spec.nodeName is set after a pod is created. The server also marks the pod PodScheduled.
  // Conflict if the pod has a node already or is being deleted.
  virtual std::optional<ApiError> BindPod(const api::Binding& binding) = 0;

  // Sets a Namespace's spec.finalizers (PUT namespaces/NAME/finalize), as the namespace
  // controller does once it has emptied a namespace being deleted: the one way they change.
  // A non-empty metadata.resourceVersion must match (Conflict otherwise). Returns the
  // namespace as stored, or as it was last if finalizing it removed it.
  virtual ApiOr<api::Namespace> FinalizeNamespace(const api::Namespace& ns) = 0;

  // Asks for a token of the service account ns/name (POST serviceaccounts/NAME/token), as
  // kubelet does for a pod's projected token and `kubectl create token` for a user. The answer
  // carries the token and when it expires.
  virtual ApiOr<api::authentication::TokenRequest> CreateToken(std::string_view ns, std::string_view name,
                                               const api::authentication::TokenRequest& request) = 0;

  // Updates of objects of any kinds made together (api/object_update.h), each answered in
  // order as Resource<T>::UpdateShared would answer it alone. The in-process client writes
  // them in one commit of the store. Elsewhere they are made in rounds, an update once the one
  // it follows is made, each round's updates of one kind in as few requests as the transport
  // can (UpdateSharedMany): what follows is never written without what it follows, though a
  // crash between rounds may leave what it follows written alone.
  virtual std::vector<ApiOr<api::AnySharedObject>> UpdateTogether(
      std::vector<api::ObjectUpdate> updates);

 protected:
  Client() = default;
  // Fills every kind's slot with Impl<T>(args...).
  template <template <class> class Impl, class... Args>
  void Emplace(Args&... args) {
    std::apply([&](auto&... slot) { (Make<Impl>(slot, args...), ...); }, resources_);
  }

 private:
  template <template <class> class Impl, class T, class... Args>
  static void Make(std::unique_ptr<Resource<T>>& slot, Args&... args) {
    slot = std::make_unique<Impl<T>>(args...);
  }
  template <class... T>
  static std::tuple<std::unique_ptr<Resource<T>>...> Slots(std::tuple<T...>*);
  decltype(Slots(static_cast<api::AllKinds*>(nullptr))) resources_;
};

}  // namespace kvol::client
