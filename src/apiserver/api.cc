// The set of registries and cluster-wide admission lookups.
#include "apiserver/api.h"

namespace kvol::apiserver {

Api::Api(store::Store& store, os::Clock& clock) : store_(store), clock_(clock) {
  std::apply([&](auto&... r) {
    ((r = std::make_unique<typename std::remove_reference_t<decltype(r)>::element_type>(
          store_, clock_, *this)),
     ...);
  }, registries_);
}

Api::~Api() { Stop(); }

Status Api::Start() {
  Status result;
  std::apply([&](auto&... r) {
    ((result.ok() ? (result = r->Start(), 0) : 0), ...);
  }, registries_);
  KVOL_RETURN_IF_ERROR(result);
  for (const char* name : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    api::Namespace ns;
    ns.metadata.name = name;
    auto created = registry<api::Namespace>().Create(ns, "");
    if (!created.ok() && created.error().reason != "AlreadyExists") {
      return UnavailableError("creating namespace " + std::string(name) + ": " +
                              created.error().message);
    }
  }
  return OkStatus();
}

void Api::Stop() {
  std::apply([](auto&... r) { ((r ? r->Stop() : void()), ...); }, registries_);
}

Resource* Api::Find(std::string_view group, std::string_view version, std::string_view resource) {
  Resource* found = nullptr;
  std::apply([&](auto&... r) {
    ((found == nullptr && r->info().group == group && r->info().version == version &&
              r->info().resource == resource
          ? (found = r.get(), 0)
          : 0),
     ...);
  }, registries_);
  return found;
}

std::optional<ApiError> Api::CheckNamespace(std::string_view ns) {
  // A read of the store, not of the namespace cache: it sees a namespace created just before,
  // without waiting for the cache to catch up with every other write since.
  auto& reg = registry<api::Namespace>();
  auto stored = reg.GetStored("", ns);
  if (!stored.ok()) {
    if (api::IsNotFound(stored.error())) return NamespaceNotFound(ns);
    return stored.error();
  }
  auto obj = reg.DecodeShared(*stored);
  if (!obj.ok()) return obj.error();
  if ((*obj)->status.phase == "Terminating") {
    return Forbidden("unable to create new content in namespace " + std::string(ns) +
                     " because it is being terminated");
  }
  return std::nullopt;
}

bool Api::AllowsVolumeExpansion(std::string_view name) {
  auto sc = registry<api::StorageClass>().Get("", name);
  return sc.ok() && sc->allow_volume_expansion.value_or(false);
}

std::optional<std::string> Api::DefaultStorageClass() {
  auto& reg = registry<api::StorageClass>();
  auto classes = reg.List("", {}, nullptr);
  if (!classes.ok()) return std::nullopt;
  const api::StorageClass* best = nullptr;
  for (const auto& sc : *classes) {
    auto it = sc.metadata.annotations.find(std::string(kDefaultClassAnnotation));
    if (it == sc.metadata.annotations.end() || it->second != "true") continue;
    // Several defaults: the newest wins, as in Kubernetes.
    if (!best || sc.metadata.creation_timestamp > best->metadata.creation_timestamp ||
        (sc.metadata.creation_timestamp == best->metadata.creation_timestamp &&
         sc.metadata.name < best->metadata.name)) {
      best = &sc;
    }
  }
  if (!best) return std::nullopt;
  return best->metadata.name;
}

}  // namespace kvol::apiserver
