// Registry<T>'s JSON requests (the HTTP server's door): bodies decoded and checked as
// Kubernetes checks them, then created, updated, patched or deleted through the typed
// operations of registry.cc.
#include "apiserver/patch.h"
#include "apiserver/registry.h"
#include "apiserver/registry_internal.h"

namespace kvol::apiserver {

using registry_internal::kConflictRetries;

template <class T>
ApiOr<api::Json> Registry<T>::Decode(const StoredObject& o) {
  auto j = api::ParseJson(o.Json());
  if (!j.ok()) return Internal("stored object does not parse: " + j.status().message());
  return *std::move(j);
}

template <class T>
ApiOr<T> Registry<T>::DecodeBody(const api::Json& body, const WriteOptions& opts,
                                 std::vector<std::string>* warnings) {
  const auto& k = info();
  if (!body.is_object()) return BadRequest("the request body must be a JSON object");
  // The kind first: a body of another kind would mostly fail to decode, less clearly.
  auto text = [&](const char* key) {
    auto it = body.find(key);
    return it != body.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (auto err = CheckKind(text("apiVersion"), text("kind"))) return *err;
  api::FieldErrors errs;
  T obj = api::DecodeStruct<T>(body, &errs);
  if (!errs.empty()) {
    return BadRequest(std::string(k.kind) + " in version \"" + std::string(k.version) +
                      "\" cannot be handled as a " + std::string(k.kind) + ": " +
                      api::AggregateMessage(errs));
  }
  return CheckBody(std::move(obj), opts, warnings);
}

template <class T>
ApiOr<api::AnyObject> Registry<T>::DecodeAny(const api::Json& body) {
  auto obj = DecodeBody(body, {}, nullptr);
  if (!obj.ok()) return obj.error();
  return api::AnyObject(std::in_place_type<T>, *std::move(obj));
}

template <class T>
ApiOr<T> Registry<T>::DecodeBodyText(std::string_view body, const WriteOptions& opts,
                                     std::vector<std::string>* warnings) {
  T obj;
  if (api::DecodeJsonText(body, obj)) return CheckBody(std::move(obj), opts, warnings);
  auto j = api::ParseJson(body);
  if (!j.ok()) return BadRequest("error decoding the request body: " + j.status().message());
  return DecodeBody(*j, opts, warnings);
}

template <class T>
std::optional<ApiError> Registry<T>::CheckKind(const std::string& api_version,
                                               const std::string& kind) {
  const auto& k = info();
  if (!api_version.empty() && api_version != k.ApiVersion()) {
    return BadRequest("the API version in the data (" + api_version +
                      ") does not match the expected API version (" + k.ApiVersion() + ")");
  }
  if (!kind.empty() && kind != k.kind) {
    return BadRequest("the kind in the data (" + kind + ") does not match the expected kind (" +
                      std::string(k.kind) + ")");
  }
  return std::nullopt;
}

template <class T>
ApiOr<T> Registry<T>::CheckBody(T obj, const WriteOptions& opts,
                                std::vector<std::string>* warnings) {
  if (auto err = CheckKind(obj.api_version, obj.kind)) return *err;
  // metadata is modelled completely: an unknown field there is a mistake.
  if (obj.metadata.unknown_fields.is_object()) {
    for (auto it = obj.metadata.unknown_fields.begin(); it != obj.metadata.unknown_fields.end();) {
      const std::string key = it.key();
      if (key == "managedFields" || key == "selfLink") {
        it = obj.metadata.unknown_fields.erase(it);
        continue;
      }
      std::string msg = "unknown field \"metadata." + key + "\"";
      if (opts.field_validation == "Strict") return BadRequest("strict decoding error: " + msg);
      if (opts.field_validation != "Ignore" && warnings) warnings->push_back(msg);
      it = obj.metadata.unknown_fields.erase(it);
    }
    if (obj.metadata.unknown_fields.empty()) obj.metadata.unknown_fields = api::Json();
  }
  return obj;
}

template <class T>
ApiOr<StoredObject> Registry<T>::CreateDecoded(ApiOr<T> obj, std::vector<std::string> warnings,
                                               std::string_view ns, const WriteOptions& opts) {
  if (!obj.ok()) return obj.error();
  auto w = CreateImpl(*std::move(obj), ns, opts);
  if (!w.ok()) return w.error();
  w->stored.warnings = std::move(warnings);
  return std::move(w->stored);
}

template <class T>
ApiOr<StoredObject> Registry<T>::UpdateDecoded(ApiOr<T> obj, std::vector<std::string> warnings,
                                               std::string_view ns, std::string_view name,
                                               bool status, const WriteOptions& opts) {
  if (!obj.ok()) return obj.error();
  auto w = UpdateImpl(*std::move(obj), ns, name, PartsOf(status), opts);
  if (!w.ok()) return w.error();
  w->stored.warnings = std::move(warnings);
  return std::move(w->stored);
}

template <class T>
ApiOr<StoredObject> Registry<T>::CreateJson(std::string_view ns, const api::Json& body,
                                            const WriteOptions& opts) {
  std::vector<std::string> warnings;
  auto obj = DecodeBody(body, opts, &warnings);
  return CreateDecoded(std::move(obj), std::move(warnings), ns, opts);
}

template <class T>
ApiOr<StoredObject> Registry<T>::UpdateJson(std::string_view ns, std::string_view name,
                                            const api::Json& body, bool status,
                                            const WriteOptions& opts) {
  std::vector<std::string> warnings;
  auto obj = DecodeBody(body, opts, &warnings);
  return UpdateDecoded(std::move(obj), std::move(warnings), ns, name, status, opts);
}

template <class T>
ApiOr<StoredObject> Registry<T>::CreateJsonText(std::string_view ns, std::string_view body,
                                                const WriteOptions& opts) {
  std::vector<std::string> warnings;
  auto obj = DecodeBodyText(body, opts, &warnings);
  return CreateDecoded(std::move(obj), std::move(warnings), ns, opts);
}

template <class T>
ApiOr<StoredObject> Registry<T>::UpdateJsonText(std::string_view ns, std::string_view name,
                                                std::string_view body, bool status,
                                                const WriteOptions& opts) {
  std::vector<std::string> warnings;
  auto obj = DecodeBodyText(body, opts, &warnings);
  return UpdateDecoded(std::move(obj), std::move(warnings), ns, name, status, opts);
}

template <class T>
ApiOr<StoredObject> Registry<T>::PatchJson(std::string_view ns, std::string_view name,
                                           std::string_view content_type, std::string_view patch,
                                           bool status, const WriteOptions& opts) {
  const auto& k = info();
  for (int attempt = 0; attempt < kConflictRetries; ++attempt) {
    auto current = GetStored(ns, name);
    if (!current.ok()) return current.error();
    auto cur = Decode(*current);
    if (!cur.ok()) return cur.error();
    auto patched = ApplyPatch(*cur, content_type, patch, k.kind);
    if (!patched.ok()) return patched.error();
    std::vector<std::string> warnings;
    auto obj = DecodeBody(*patched, opts, &warnings);
    if (!obj.ok()) return obj.error();
    // A patch that names a resourceVersion is a precondition; otherwise it applies to
    // whatever is current, retrying if that changes underneath.
    const bool pinned = obj->metadata.resource_version != std::to_string(current->rev);
    auto w = UpdateImpl(*std::move(obj), ns, name, PartsOf(status), opts);
    if (w.ok()) {
      w->stored.warnings = std::move(warnings);
      return std::move(w->stored);
    }
    if (w.error().reason == "Conflict" && !pinned) continue;
    return w.error();
  }
  return ObjectModified(k, name);
}

template <class T>
ApiOr<StoredObject> Registry<T>::DeleteStored(std::string_view ns, std::string_view name,
                                              const DeleteOptions& opts) {
  auto w = DeleteImpl(ns, name, opts);
  if (!w.ok()) return w.error();
  return std::move(w->stored);
}

#define KVOL_INSTANTIATE(T)                                                                        \
  template ApiOr<api::Json> Registry<T>::Decode(const StoredObject&);                              \
  template ApiOr<T> Registry<T>::DecodeBody(const api::Json&, const WriteOptions&,                 \
                                            std::vector<std::string>*);                            \
  template ApiOr<api::AnyObject> Registry<T>::DecodeAny(const api::Json&);                         \
  template ApiOr<T> Registry<T>::DecodeBodyText(std::string_view, const WriteOptions&,             \
                                                std::vector<std::string>*);                        \
  template std::optional<ApiError> Registry<T>::CheckKind(const std::string&, const std::string&); \
  template ApiOr<T> Registry<T>::CheckBody(T, const WriteOptions&, std::vector<std::string>*);     \
  template ApiOr<StoredObject> Registry<T>::CreateDecoded(ApiOr<T>, std::vector<std::string>,      \
                                                          std::string_view, const WriteOptions&);  \
  template ApiOr<StoredObject> Registry<T>::UpdateDecoded(ApiOr<T>, std::vector<std::string>,      \
                                                          std::string_view, std::string_view,      \
                                                          bool, const WriteOptions&);              \
  template ApiOr<StoredObject> Registry<T>::CreateJson(std::string_view, const api::Json&,         \
                                                       const WriteOptions&);                       \
  template ApiOr<StoredObject> Registry<T>::UpdateJson(                                            \
      std::string_view, std::string_view, const api::Json&, bool, const WriteOptions&);            \
  template ApiOr<StoredObject> Registry<T>::CreateJsonText(std::string_view, std::string_view,     \
                                                           const WriteOptions&);                   \
  template ApiOr<StoredObject> Registry<T>::UpdateJsonText(                                        \
      std::string_view, std::string_view, std::string_view, bool, const WriteOptions&);            \
  template ApiOr<StoredObject> Registry<T>::PatchJson(std::string_view, std::string_view,          \
                                                      std::string_view, std::string_view, bool,    \
                                                      const WriteOptions&);                        \
  template ApiOr<StoredObject> Registry<T>::DeleteStored(std::string_view, std::string_view,       \
                                                         const DeleteOptions&);
KVOL_REGISTRY_KINDS(KVOL_INSTANTIATE)
#undef KVOL_INSTANTIATE

}  // namespace kvol::apiserver
