// Each kind's Resource over its Registry.
#include "client/local/local_client.h"

#include "apiserver/binding.h"
#include "apiserver/namespace_finalize.h"
#include "apiserver/errors.h"
#include "apiserver/service_account_token.h"

namespace kvol::client {
namespace {

using apiserver::Registry;

ApiError FromStreamStatus(const Status& s) {
  if (s.code() == StatusCode::kOutOfRange) return apiserver::Gone(s.message());
  if (s.code() == StatusCode::kCancelled) {
    return WatchClosed("the watch was closed");
  }
  return apiserver::FromStatus(s);
}

template <class T>
class LocalWatcher final : public Watcher<T> {
 public:
  LocalWatcher(Registry<T>& reg, std::unique_ptr<apiserver::EventStream> stream, bool bookmarks)
      : reg_(reg), stream_(std::move(stream)), bookmarks_(bookmarks) {}
  ~LocalWatcher() override { stream_->Close(); }

  ApiOr<std::vector<WatchEvent<T>>> Next(std::chrono::milliseconds timeout) override {
    auto evs = stream_->Next(timeout);
    if (!evs.ok()) return FromStreamStatus(evs.status());
    std::vector<WatchEvent<T>> out;
    if (evs->empty()) {
      // A quiet wait: a bookmark tells the caller how far the watch has come, so that it can
      // resume from there instead of from an old, perhaps compacted, revision.
      const store::Revision progress = stream_->Progress();
      if (bookmarks_ && progress > sent_) {
        sent_ = progress;
        out.push_back(Bookmark(progress));
      }
      return out;
    }
    out.reserve(evs->size());
    for (auto& e : *evs) {
      sent_ = std::max(sent_, e.object.rev);
      WatchEvent<T> we;
      switch (e.type) {
        case apiserver::WatchEvent::Type::kAdded: we.type = EventType::kAdded; break;
        case apiserver::WatchEvent::Type::kModified: we.type = EventType::kModified; break;
        case apiserver::WatchEvent::Type::kDeleted: we.type = EventType::kDeleted; break;
        case apiserver::WatchEvent::Type::kBookmark: we.type = EventType::kBookmark; break;
      }
      if (we.type == EventType::kBookmark) {
        out.push_back(Bookmark(e.object.rev));
        continue;
      }
      auto obj = reg_.DecodeShared(e.object);
      if (!obj.ok()) return obj.error();
      we.object = *std::move(obj);
      out.push_back(std::move(we));
    }
    return out;
  }

  void Close() override { stream_->Close(); }

 private:
  static WatchEvent<T> Bookmark(store::Revision rev) {
    auto obj = std::make_shared<T>();
    obj->metadata.resource_version = std::to_string(rev);
    return WatchEvent<T>{EventType::kBookmark, std::move(obj)};
  }

  Registry<T>& reg_;
  std::unique_ptr<apiserver::EventStream> stream_;
  const bool bookmarks_;
  store::Revision sent_ = 0;
};

template <class T>
class LocalResource final : public Resource<T> {
 public:
  explicit LocalResource(apiserver::Api& api) : reg_(api.registry<T>()) {}

  ApiOr<T> Create(const T& obj, const WriteOptions& opts) override {
    return reg_.Create(obj, obj.metadata.namespace_, opts);
  }
  ApiOr<std::shared_ptr<const T>> CreateShared(T obj, const WriteOptions& opts) override {
    const std::string ns = obj.metadata.namespace_;
    return reg_.CreateShared(std::move(obj), ns, opts);
  }
  ApiOr<T> Get(std::string_view ns, std::string_view name) override {
    return reg_.Get(Namespace(ns), name);
  }
  ApiOr<ObjectList<T>> List(std::string_view ns, const ListOptions& opts) override {
    auto l = ListShared(ns, opts);
    if (!l.ok()) return l.error();
    ObjectList<T> out;
    out.items.reserve(l->items.size());
    for (const auto& obj : l->items) out.items.push_back(*obj);
    out.resource_version = std::move(l->resource_version);
    out.continue_token = std::move(l->continue_token);
    return out;
  }
  ApiOr<SharedList<T>> ListShared(std::string_view ns, const ListOptions& opts) override {
    auto l = reg_.ListStored(Namespace(ns), opts);
    if (!l.ok()) return l.error();
    SharedList<T> out;
    out.items.reserve(l->items.size());
    for (const auto& s : l->items) {
      auto obj = reg_.DecodeShared(s);
      if (!obj.ok()) return obj.error();
      out.items.push_back(*std::move(obj));
    }
    out.resource_version = std::to_string(l->rev);
    out.continue_token = std::move(l->continue_token);
    return out;
  }
  ApiOr<T> Update(const T& obj, const WriteOptions& opts) override {
    return reg_.Update(obj, false, opts);
  }
  ApiOr<T> UpdateStatus(const T& obj, const WriteOptions& opts) override {
    if (!reg_.has_status()) return NoStatus();
    return reg_.Update(obj, true, opts);
  }
  bool writes_with_status() const override { return true; }
  ApiOr<T> UpdateWithStatus(const T& obj, const WriteOptions& opts) override {
    return reg_.UpdateWithStatus(obj, opts);
  }
  ApiOr<std::shared_ptr<const T>> UpdateShared(T obj, bool main, bool status,
                                               const WriteOptions& opts) override {
    if (status && !main && !reg_.has_status()) return NoStatus();
    return reg_.UpdateShared(std::move(obj), main, status, opts);
  }
  std::vector<ApiOr<std::shared_ptr<const T>>> UpdateSharedMany(
      std::vector<T> objs, bool main, bool status, const WriteOptions& opts) override {
    if (status && !main && !reg_.has_status()) {
      return std::vector<ApiOr<std::shared_ptr<const T>>>(objs.size(), NoStatus());
    }
    return reg_.UpdateSharedMany(std::move(objs), main, status, opts);
  }
  ApiOr<T> Patch(std::string_view ns, std::string_view name, PatchType type,
                 std::string_view patch, bool status) override {
    if (status && !reg_.has_status()) return NoStatus();
    auto s = reg_.PatchJson(Namespace(ns), name, PatchContentType(type), patch, status, {});
    if (!s.ok()) return s.error();
    return reg_.DecodeTyped(*s);
  }
  ApiOr<T> Delete(std::string_view ns, std::string_view name,
                  const DeleteOptions& opts) override {
    return reg_.Delete(Namespace(ns), name, opts);
  }
  ApiOr<std::unique_ptr<Watcher<T>>> Watch(std::string_view ns,
                                           const ListOptions& opts) override {
    auto s = reg_.WatchStored(Namespace(ns), opts);
    if (!s.ok()) return s.error();
    return std::unique_ptr<Watcher<T>>(std::make_unique<LocalWatcher<T>>(reg_, std::move(*s),
                                                                         opts.allow_bookmarks));
  }

 private:
  std::string_view Namespace(std::string_view ns) const {
    return reg_.info().namespaced ? ns : std::string_view();
  }
  static ApiError NoStatus() {
    return ApiError{404, "NotFound", "the server could not find the requested resource",
                    {}, {}, {}, {}};
  }

  Registry<T>& reg_;
};

}  // namespace

LocalClient::LocalClient(apiserver::Api& api) : api_(api) { Emplace<LocalResource>(api); }

std::optional<ApiError> LocalClient::BindPod(const api::Binding& binding) {
  auto bound = apiserver::BindPod(api_.registry<api::Pod>(), binding.metadata.namespace_,
                                  binding.metadata.name, binding,
                                  api::Time::FromTimePoint(api_.clock().Now()));
  if (!bound.ok()) return bound.error();
  return std::nullopt;
}

ApiOr<api::Namespace> LocalClient::FinalizeNamespace(const api::Namespace& ns) {
  return apiserver::FinalizeNamespace(api_.registry<api::Namespace>(), ns.metadata.name, ns);
}

ApiOr<api::authentication::TokenRequest> LocalClient::CreateToken(std::string_view ns, std::string_view name,
                                                  const api::authentication::TokenRequest& request) {
  auto* tokens = api_.service_account_tokens();
  if (!tokens) return apiserver::Unavailable("this server issues no service account tokens");
  return tokens->Request(ns, name, request);
}

std::vector<ApiOr<api::AnySharedObject>> LocalClient::UpdateTogether(
    std::vector<api::ObjectUpdate> updates) {
  return api_.UpdateTogether(std::move(updates));
}

}  // namespace kvol::client
