// FakeClient: an in-memory Client for controller unit tests. Objects live in maps;
// resourceVersions come from one counter; Update with a stale resourceVersion is a Conflict;
// Update keeps the stored status and UpdateStatus changes only the status, as the server's
// status subresource does; Delete honours finalizers. Errors can be injected per verb and
// resource, and every call is recorded. Watch and Patch are not offered: controllers under test
// are driven by calling their sync functions.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "api/pod_status.h"
#include "client/client.h"

namespace kvol::client::testing {

struct FakeAction {
  std::string verb;      // create, get, list, update, update-status, delete
  std::string resource;  // persistentvolumes, ...
  std::string key;       // namespace/name or name
};

// The state every kind's fake shares.
class FakeState {
 public:
  // The next `times` calls of `verb` on `resource` fail with `error` ("*" matches any).
  void InjectError(std::string verb, std::string resource, ApiError error, int times = 1) {
    std::lock_guard lock(mu_);
    reactors_.push_back({std::move(verb), std::move(resource), std::move(error), times});
  }
  std::vector<FakeAction> actions() const {
    std::lock_guard lock(mu_);
    return actions_;
  }
  void ClearActions() {
    std::lock_guard lock(mu_);
    actions_.clear();
  }

  // Records the call; the error to return, if one was injected.
  std::optional<ApiError> Call(const std::string& verb, std::string_view resource,
                               std::string key) {
    std::lock_guard lock(mu_);
    actions_.push_back({verb, std::string(resource), std::move(key)});
    for (auto it = reactors_.begin(); it != reactors_.end(); ++it) {
      if ((it->verb == "*" || it->verb == verb) && (it->resource == "*" || it->resource == resource)) {
        ApiError e = it->error;
        if (--it->times <= 0) reactors_.erase(it);
        return e;
      }
    }
    return std::nullopt;
  }
  std::string NextVersion() {
    std::lock_guard lock(mu_);
    return std::to_string(++rv_);
  }
  std::string NextUid() {
    std::lock_guard lock(mu_);
    return "uid-" + std::to_string(++uids_);
  }

 private:
  struct Reactor {
    std::string verb, resource;
    ApiError error;
    int times;
  };
  mutable std::mutex mu_;
  int64_t rv_ = 0;
  int64_t uids_ = 0;
  std::vector<FakeAction> actions_;
  std::vector<Reactor> reactors_;
};

template <class T>
class FakeResource final : public Resource<T> {
 public:
  explicit FakeResource(FakeState& state) : state_(state) {}

  ApiOr<T> Create(const T& obj, const WriteOptions& = {}) override {
    const std::string key = Key(obj.metadata.namespace_, obj.metadata.name);
    if (auto e = state_.Call("create", Info().resource, key)) return *e;
    std::lock_guard lock(mu_);
    if (objects_.count(key)) {
      return ApiError{409, "AlreadyExists", Quoted() + " already exists"};
    }
    T stored = obj;
    if (stored.metadata.uid.empty()) stored.metadata.uid = state_.NextUid();
    stored.metadata.resource_version = state_.NextVersion();
    objects_[key] = stored;
    return stored;
  }

  ApiOr<T> Get(std::string_view ns, std::string_view name) override {
    const std::string key = Key(ns, name);
    if (auto e = state_.Call("get", Info().resource, key)) return *e;
    std::lock_guard lock(mu_);
    auto it = objects_.find(key);
    if (it == objects_.end()) return NotFound(name);
    return it->second;
  }

  ApiOr<ObjectList<T>> List(std::string_view ns, const ListOptions& = {}) override {
    if (auto e = state_.Call("list", Info().resource, std::string(ns))) return *e;
    std::lock_guard lock(mu_);
    ObjectList<T> out;
    for (const auto& [key, obj] : objects_) {
      if (ns.empty() || obj.metadata.namespace_ == ns) out.items.push_back(obj);
    }
    out.resource_version = state_.NextVersion();
    return out;
  }

  ApiOr<T> Update(const T& obj, const WriteOptions& = {}) override {
    return Write(obj, Parts::kMain);
  }
  ApiOr<T> UpdateStatus(const T& obj, const WriteOptions& = {}) override {
    return Write(obj, Parts::kStatus);
  }
  // The object and its status in one write, as the in-process client makes it (for
  // FakeClient::UpdateTogether): an error injected for an update or for a status update fails
  // it with nothing written.
  ApiOr<T> UpdateBoth(const T& obj) { return Write(obj, Parts::kBoth); }

  ApiOr<T> Patch(std::string_view, std::string_view, PatchType, std::string_view, bool) override {
    return ApiError{405, "MethodNotAllowed", "the fake client does not patch"};
  }

  ApiOr<T> Delete(std::string_view ns, std::string_view name, const DeleteOptions& = {}) override {
    const std::string key = Key(ns, name);
    if (auto e = state_.Call("delete", Info().resource, key)) return *e;
    std::lock_guard lock(mu_);
    auto it = objects_.find(key);
    if (it == objects_.end()) return NotFound(name);
    T last = it->second;
    if (Held(last) || (std::is_same_v<T, api::Namespace> && !last.metadata.deletion_timestamp)) {
      if (!last.metadata.deletion_timestamp) {
        last.metadata.deletion_timestamp = api::Time::FromUnixSeconds(1);
        if constexpr (std::is_same_v<T, api::Namespace>) last.status.phase = "Terminating";
        last.metadata.resource_version = state_.NextVersion();
        it->second = last;
      }
      return last;
    }
    objects_.erase(it);
    return last;
  }

  ApiOr<std::unique_ptr<Watcher<T>>> Watch(std::string_view, const ListOptions& = {}) override {
    return ApiError{405, "MethodNotAllowed", "the fake client does not watch"};
  }

  // Stores an object as it is (a test's starting state), with a resourceVersion if it has none.
  T Seed(T obj) {
    std::lock_guard lock(mu_);
    if (obj.metadata.resource_version.empty()) obj.metadata.resource_version = state_.NextVersion();
    objects_[Key(obj.metadata.namespace_, obj.metadata.name)] = obj;
    return obj;
  }
  // Called with each object an update stores, before the update answers: as a watch event
  // that reaches an informer before the writer has its answer.
  void OnWritten(std::function<void(const T&)> f) {
    std::lock_guard lock(mu_);
    on_written_ = std::move(f);
  }
  // Every stored object, by key.
  std::map<std::string, T> Objects() const {
    std::lock_guard lock(mu_);
    return objects_;
  }

 private:
  static const api::KindInfo& Info() { return api::KindInfoOf<T>(); }
  static std::string Key(std::string_view ns, std::string_view name) {
    return Info().namespaced ? std::string(ns) + "/" + std::string(name) : std::string(name);
  }
  static std::string Quoted(std::string_view name = {}) {
    return std::string(Info().resource) + " \"" + std::string(name) + "\"";
  }
  static ApiError NotFound(std::string_view name) {
    return ApiError{404, "NotFound", Quoted(name) + " not found"};
  }

  enum class Parts { kMain, kStatus, kBoth };
  ApiOr<T> Write(const T& obj, Parts parts) {
    const std::string key = Key(obj.metadata.namespace_, obj.metadata.name);
    if (parts != Parts::kStatus) {
      if (auto e = state_.Call("update", Info().resource, key)) return *e;
    }
    if (parts != Parts::kMain) {
      if (auto e = state_.Call("update-status", Info().resource, key)) return *e;
    }
    std::unique_lock lock(mu_);
    auto it = objects_.find(key);
    if (it == objects_.end()) return NotFound(obj.metadata.name);
    const std::string& rv = obj.metadata.resource_version;
    if (!rv.empty() && rv != it->second.metadata.resource_version) {
      return ApiError{409, "Conflict",
                      "Operation cannot be fulfilled on " + Quoted(obj.metadata.name) +
                          ": the object has been modified; please apply your changes to the "
                          "latest version and try again"};
    }
    T stored = obj;
    if constexpr (requires { stored.status; }) {
      // kBoth stores the object as given, status and all.
      if (parts == Parts::kStatus) {
        stored = it->second;
        stored.status = obj.status;
      } else if (parts == Parts::kMain) {
        stored.status = it->second.status;
      }
    }
    stored.metadata.uid = it->second.metadata.uid;
    stored.metadata.resource_version = state_.NextVersion();
    if (stored.metadata.deletion_timestamp && !Held(stored)) {
      objects_.erase(it);
      return stored;
    }
    it->second = stored;
    if (auto written = on_written_) {
      lock.unlock();
      written(stored);
    }
    return stored;
  }

  // Finalizers keep an object marked for deletion; a Namespace's spec.finalizers too.
  static bool Held(const T& obj) {
    if constexpr (std::is_same_v<T, api::Namespace>) {
      if (!obj.spec.finalizers.empty()) return true;
    }
    return !obj.metadata.finalizers.empty();
  }

  FakeState& state_;
  mutable std::mutex mu_;
  std::map<std::string, T> objects_;
  std::function<void(const T&)> on_written_;
};

class FakeClient final : public Client {
 public:
  FakeClient() { Emplace<FakeResource>(state_); }
  FakeState& state() { return state_; }

  // Sets the stored pod's spec.nodeName and PodScheduled=True, refusing as the server does.
  std::optional<ApiError> BindPod(const api::Binding& b) override {
    const std::string key = b.metadata.namespace_ + "/" + b.metadata.name;
    if (auto e = state_.Call("create", "pods/binding", key)) return *e;
    auto& pods = fake<api::Pod>();
    auto stored = pods.Objects();
    auto it = stored.find(key);
    if (it == stored.end()) return ApiError{404, "NotFound", "pods \"" + b.metadata.name + "\" not found"};
    api::Pod pod = it->second;
    if (!pod.spec.node_name.empty() || pod.metadata.deletion_timestamp) {
      return ApiError{409, "Conflict", "Operation cannot be fulfilled on pods/binding \"" + b.metadata.name + "\""};
    }
    pod.spec.node_name = b.target.name;
    api::UpdatePodCondition(pod.status, {.type = "PodScheduled", .status = "True"}, api::Time());
    pod.metadata.resource_version.clear();
    pods.Seed(pod);
    return std::nullopt;
  }
  // Sets the stored namespace's spec.finalizers; removes it if it is being deleted and
  // nothing holds it any more.
  ApiOr<api::Namespace> FinalizeNamespace(const api::Namespace& ns) override {
    if (auto e = state_.Call("update", "namespaces/finalize", ns.metadata.name)) return *e;
    auto& r = fake<api::Namespace>();
    auto current = r.Get("", ns.metadata.name);
    if (!current.ok()) return current;
    api::Namespace next = *current;
    next.spec.finalizers = ns.spec.finalizers;
    if (!ns.metadata.resource_version.empty()) {
      next.metadata.resource_version = ns.metadata.resource_version;
    }
    return r.UpdateBoth(next);
  }
  // Answers with the token `token_issuer` makes; without one, "token-N" (N counting requests
  // from 1) expiring expirationSeconds from now.
  ApiOr<api::authentication::TokenRequest> CreateToken(std::string_view ns, std::string_view name,
                                       const api::authentication::TokenRequest& request) override {
    const std::string key = std::string(ns) + "/" + std::string(name);
    if (auto e = state_.Call("create", "serviceaccounts/token", key)) return *e;
    if (token_issuer) return token_issuer(ns, name, request);
    api::authentication::TokenRequest out = request;
    out.status.token = "token-" + std::to_string(++tokens_issued_);
    out.status.expiration_timestamp = api::Time::FromTimePoint(
        std::chrono::system_clock::now() +
        std::chrono::seconds(request.spec.expiration_seconds.value_or(3600)));
    return out;
  }
  std::function<ApiOr<api::authentication::TokenRequest>(std::string_view, std::string_view,
                                         const api::authentication::TokenRequest&)>
      token_issuer;
  template <class T>
  FakeResource<T>& fake() {
    return static_cast<FakeResource<T>&>(resource<T>());
  }

  // With `write_status_apart`, UpdateTogether writes an object and its status in two requests,
  // as over HTTP; without, in one write, as the in-process client does.
  bool write_status_apart = false;
  // As the in-process client answers it: each update as UpdateShared would make it, in order,
  // one that follows another only if that one was made.
  std::vector<ApiOr<api::AnySharedObject>> UpdateTogether(
      std::vector<api::ObjectUpdate> updates) override {
    if (write_status_apart) return Client::UpdateTogether(std::move(updates));
    std::vector<ApiOr<api::AnySharedObject>> out;
    for (size_t i = 0; i < updates.size(); ++i) {
      const int after = updates[i].after;
      if (after >= 0 && (after >= static_cast<int>(i) || !out[after].ok())) {
        out.push_back(ApiError{409, "Conflict", "the update it follows failed"});
        continue;
      }
      out.push_back(std::visit(
          [&](auto& obj) {
            return api::ToAny(WriteParts(std::move(obj), updates[i].main, updates[i].status));
          },
          updates[i].object));
    }
    return out;
  }
  // The object, its status, or both in one write.
  template <class T>
  ApiOr<std::shared_ptr<const T>> WriteParts(T obj, bool main, bool status) {
    if (!main || !status) return resource<T>().UpdateShared(std::move(obj), main, status);
    auto both = fake<T>().UpdateBoth(obj);
    if (!both.ok()) return both.error();
    return std::make_shared<const T>(*std::move(both));
  }

 private:
  FakeState state_;
  std::atomic<int> tokens_issued_ = 0;
};

}  // namespace kvol::client::testing
