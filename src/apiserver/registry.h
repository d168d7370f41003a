// Registry<T>: the API's behaviour for one kind on top of the store. Create, get, list, update,
// patch, delete and watch with Kubernetes' semantics: generated names, uids and timestamps,
// defaults, admission and validation, optimistic concurrency on resourceVersion, status
// subresources, finalizers that hold deletion, consistent lists and resumable watches served
// from a watch cache. The typed methods serve the in-process client; the Resource methods (JSON)
// serve HTTP. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/defaults.h"
#include "api/object_update.h"
#include "api/validation.h"
#include "apiserver/objects.h"
#include "apiserver/resource.h"
#include "apiserver/strategy.h"
#include "apiserver/watch_cache.h"
#include "os/clock.h"

namespace kvol::apiserver {

// An update of a write of several objects (Api::UpdateTogether) decided up to its store write:
// answered already (an error, nothing to write, an update made on its own), or `write` to make,
// answered by `finish` with the store's answer.
struct PreparedTogether {
  std::optional<ApiOr<api::AnySharedObject>> answer;
  store::Write write;
  std::function<ApiOr<api::AnySharedObject>(const StatusOr<store::Revision>&)> finish;
};

template <class T>
class Registry final : public Resource {
 public:
  Registry(store::Store& store, os::Clock& clock, Cluster& cluster);
  ~Registry() override;

  Status Start();
  void Stop();
  WatchCache& cache() { return *cache_; }

  // ---- typed API (the in-process client) ----
  ApiOr<T> Create(T obj, std::string_view ns, const WriteOptions& opts = {});
  // Create, answering with the object as the server and its watchers share it (no copy).
  ApiOr<std::shared_ptr<const T>> CreateShared(T obj, std::string_view ns,
                                               const WriteOptions& opts = {});
  ApiOr<T> Get(std::string_view ns, std::string_view name);
  ApiOr<T> Update(T obj, bool status = false, const WriteOptions& opts = {});
  // An update of the object and its status in one write, for controllers in the server's
  // process: what an update followed by a status update would leave, validated as an update.
  ApiOr<T> UpdateWithStatus(T obj, const WriteOptions& opts = {});
  // Update (`main`), UpdateStatus (`status`) or UpdateWithStatus (both), answering with the
  // stored object shared: the one the registry's memo and in-process watchers get, not a copy.
  ApiOr<std::shared_ptr<const T>> UpdateShared(T obj, bool main, bool status,
                                               const WriteOptions& opts = {});
  // UpdateShared of several objects, each answered (in order) as UpdateShared would answer
  // it alone; their writes go to the store together (Store::WriteMany), so the caller waits
  // for one commit rather than one per object. Objects without a resourceVersion are written
  // one at a time, as they retry conflicts.
  std::vector<ApiOr<std::shared_ptr<const T>>> UpdateSharedMany(std::vector<T> objs, bool main,
                                                                bool status,
                                                                const WriteOptions& opts = {});
  // One update of Api::UpdateTogether (UpdateShared of `main` and `status`), prepared.
  PreparedTogether PrepareTogether(T obj, bool main, bool status);
  // Read-modify-write: `mutate` edits the current object (return false to leave it alone);
  // retried on conflicts. The result is the object as stored.
  ApiOr<T> Mutate(std::string_view ns, std::string_view name, bool status,
                  const std::function<bool(T&)>& mutate);
  // Mutate for what the server itself changes through a subresource other than status (a
  // pod's binding): `mutate` may change spec and status together, past the rules an update
  // follows; the result is validated as a created object is.
  ApiOr<T> MutateWhole(std::string_view ns, std::string_view name,
                       const std::function<bool(T&)>& mutate);
  ApiOr<T> Delete(std::string_view ns, std::string_view name, const DeleteOptions& opts = {});
  ApiOr<std::vector<T>> List(std::string_view ns, const ListOptions& opts, store::Revision* rev);

  // ---- Resource (JSON, HTTP) ----
  const api::KindInfo& info() const override { return api::KindInfoOf<T>(); }
  size_t StoredCount() override { return cache_ ? cache_->size() : 0; }
  bool has_status() const override { return kStatusSubresource<T>; }
  ApiOr<StoredObject> CreateJson(std::string_view ns, const api::Json& body,
                                 const WriteOptions& opts) override;
  ApiOr<StoredObject> GetStored(std::string_view ns, std::string_view name) override;
  ApiOr<StoredObject> UpdateJson(std::string_view ns, std::string_view name,
                                 const api::Json& body, bool status,
                                 const WriteOptions& opts) override;
  ApiOr<StoredObject> CreateJsonText(std::string_view ns, std::string_view body,
                                     const WriteOptions& opts) override;
  ApiOr<StoredObject> UpdateJsonText(std::string_view ns, std::string_view name,
                                     std::string_view body, bool status,
                                     const WriteOptions& opts) override;
  ApiOr<std::vector<ApiOr<StoredObject>>> UpdateManyJsonText(std::string_view ns,
                                                            std::string_view body, bool main,
                                                            bool status,
                                                            const WriteOptions& opts) override;
  ApiOr<StoredObject> PatchJson(std::string_view ns, std::string_view name,
                                std::string_view content_type, std::string_view patch, bool status,
                                const WriteOptions& opts) override;
  ApiOr<StoredObject> DeleteStored(std::string_view ns, std::string_view name,
                                   const DeleteOptions& opts) override;
  ApiOr<ListOut> ListStored(std::string_view ns, const ListOptions& opts) override;
  ApiOr<std::unique_ptr<EventStream>> WatchStored(std::string_view ns,
                                                  const ListOptions& opts) override;
  ApiOr<api::Json> Decode(const StoredObject& o) override;
  ApiOr<api::AnyObject> DecodeAny(const api::Json& body) override;

  // The typed object a stored one holds, with its resourceVersion; shared with the registry's
  // memo of recent objects (and every other reader of the same stored version), or a copy.
  ApiOr<std::shared_ptr<const T>> DecodeShared(const StoredObject& o);
  ApiOr<T> DecodeTyped(const StoredObject& o);

 private:
  struct Written {
    std::shared_ptr<const T> obj;  // with its resourceVersion
    StoredObject stored;
    bool memoized = false;  // obj is the memo's, shared with its readers
    // The object by value: moved out when nothing else shares it.
    T Take();
  };
  // The shared object a write answered with, or its error.
  static ApiOr<std::shared_ptr<const T>> SharedOf(ApiOr<Written> w) {
    if (!w.ok()) return w.error();
    return std::move(w->obj);
  }

  ApiOr<Written> CreateImpl(T obj, std::string_view ns, const WriteOptions& opts);
  // What an update writes: the main resource keeps the stored status, the status subresource
  // keeps everything else; kMainAndStatus writes both, validated as an update (in-process
  // controllers); kWhole writes both, validated as on create (MutateWhole).
  enum class Parts { kMain, kStatus, kMainAndStatus, kWhole };
  static Parts PartsOf(bool status) { return status ? Parts::kStatus : Parts::kMain; }
  static Parts PartsOfShared(bool main, bool status) {
    return !kStatusSubresource<T> || !status ? Parts::kMain
           : main                            ? Parts::kMainAndStatus
                                             : Parts::kStatus;
  }
  // An update decided up to its store write: the value is encoded, primed in the watch cache
  // and memoized (with `obj`) until FinishUpdate.
  struct PreparedUpdate {
    std::string key;
    StoredObject stored;
    std::shared_ptr<T> obj;
    store::Revision expected = 0;
  };
  // One attempt at an update: answered already (an error, nothing changed, a dry run, or the
  // object deleted as its last finalizer went), to be tried again (`retry`: an unconditional
  // update lost a race), or `write` to be made.
  struct UpdateStep {
    std::optional<ApiOr<Written>> answer;
    bool retry = false;
    PreparedUpdate write;
  };
  static UpdateStep Answered(ApiOr<Written> answer) {
    UpdateStep step;
    step.answer = std::move(answer);
    return step;
  }
  // Fills the object's name and namespace from the request's, and checks them and its
  // resourceVersion.
  std::optional<ApiError> CheckUpdateTarget(T& obj, std::string_view ns, std::string_view name);
  // `precondition`: the resourceVersion the update was asked for ("" for none).
  UpdateStep PrepareUpdate(T next, const std::string& key, std::string_view name, Parts parts,
                           const WriteOptions& opts, const std::string& precondition);
  // The answer once the store has answered `write`; nullopt when an unconditional update
  // should be tried again.
  std::optional<ApiOr<Written>> FinishUpdate(PreparedUpdate write,
                                             const StatusOr<store::Revision>& rev,
                                             std::string_view name, bool conditional);
  ApiOr<Written> UpdateImpl(T obj, std::string_view ns, std::string_view name, Parts parts,
                            const WriteOptions& opts);
  // An update of a batch (UpdateMany, PrepareTogether) up to its store write: answered at
  // once (an error, nothing to write, or an update without a resourceVersion or a dry run,
  // made on its own), or `write` to be made. `obj` is moved from.
  UpdateStep PrepareBatched(T& obj, Parts parts, const WriteOptions& opts);
  // The updates of UpdateSharedMany (`objs` of T) and UpdateManyJsonText (of ApiOr<T>:
  // objects that did not decode are answered with their error), in order. The objects are
  // moved from.
  template <class Objects>
  std::vector<ApiOr<Written>> UpdateMany(Objects& objs, Parts parts, const WriteOptions& opts);
  // UpdateImpl at the object's own namespace and name (the typed updates).
  ApiOr<Written> UpdateTyped(T obj, Parts parts, const WriteOptions& opts);
  ApiOr<T> MutateImpl(std::string_view ns, std::string_view name, Parts parts,
                      const std::function<bool(T&)>& mutate);
  // A decoded request body created or written, with the decoder's warnings.
  ApiOr<StoredObject> CreateDecoded(ApiOr<T> obj, std::vector<std::string> warnings,
                                    std::string_view ns, const WriteOptions& opts);
  ApiOr<StoredObject> UpdateDecoded(ApiOr<T> obj, std::vector<std::string> warnings,
                                    std::string_view ns, std::string_view name, bool status,
                                    const WriteOptions& opts);
  ApiOr<Written> DeleteImpl(std::string_view ns, std::string_view name, const DeleteOptions& opts);
  ApiOr<T> DecodeBody(const api::Json& body, const WriteOptions& opts,
                      std::vector<std::string>* warnings);
  ApiOr<T> DecodeBodyText(std::string_view body, const WriteOptions& opts,
                          std::vector<std::string>* warnings);
  // What every body goes through once decoded: the apiVersion and kind it names, if any,
  // must be this kind's (CheckKind); unknown metadata fields are dropped (with a warning) or
  // refused.
  ApiOr<T> CheckBody(T obj, const WriteOptions& opts, std::vector<std::string>* warnings);
  std::optional<ApiError> CheckKind(const std::string& api_version, const std::string& kind);
  ApiOr<Filter> MakeFilter(std::string_view ns, const ListOptions& opts);
  std::string Encode(T& obj);
  // Remembers the typed object a stored value holds, so that readers of that value (the next
  // update, in-process watchers) need not parse it.
  void Memoize(const store::Value& json, std::shared_ptr<const T> obj);
  // For an object just encoded into `json`, about to be written: it becomes the memo's
  // decode of `json` (without a resourceVersion until one is known), shared, not copied.
  std::shared_ptr<T> MemoizeWritten(const store::Value& json, T obj);
  // After the write of `obj` succeeded at `rev`: the object with its resourceVersion.
  std::shared_ptr<const T> WrittenAt(std::shared_ptr<T> obj, store::Revision rev);
  // After the write failed: the memo forgets `json`, and the object comes back.
  T Unwritten(const store::Value& json, std::shared_ptr<T> obj);
  api::Time Now() const;

  store::Store& store_;
  os::Clock& clock_;
  Cluster& cluster_;
  std::unique_ptr<WatchCache> cache_;

  // Decoded objects are left with the stored value they came from (store::StoredText::memo):
  // a write is read back by the next update of the object and by every in-process watcher,
  // and the typed object written (or one parse) serves them all. The value holds it weakly;
  // the kDecodedMemo objects memoized last are held here, and older ones are found for as long
  // as something else holds them (in-process informers hold every object of their kind), so
  // an update of an object written long ago need not parse it again. Memoized objects are
  // allocated apart from their reference counts, so a value outliving its object keeps only
  // the counts.
  //
  // An object whose resourceVersion is empty was memoized by its writer before the store
  // gave it a revision and has not been handed out yet: the first reader, or the writer,
  // sets it in place, under decoded_mu_.
  //
  // The object memoized for `json`, if it is still alive. Called with decoded_mu_ held.
  std::shared_ptr<const T> FindDecoded(const store::Value& json);
  static constexpr size_t kDecodedMemo = 8192;
  const uint64_t memo_owner_;  // this registry's tag on the memos it leaves
  std::mutex decoded_mu_;
  std::vector<std::shared_ptr<const T>> recent_;  // a ring of the last kDecodedMemo memoized
  size_t recent_next_ = 0;
};

}  // namespace kvol::apiserver
