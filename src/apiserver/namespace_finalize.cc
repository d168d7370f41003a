#include "apiserver/namespace_finalize.h"

namespace kvol::apiserver {

ApiOr<api::Namespace> FinalizeNamespace(Registry<api::Namespace>& namespaces, std::string_view name,
                                        const api::Namespace& finalized) {
  const auto& kind = api::KindInfoOf<api::Namespace>();
  if (!finalized.metadata.name.empty() && finalized.metadata.name != name) {
    return Invalid(kind, name,
                   {api::Invalid(api::Path("metadata").Child("name"), finalized.metadata.name,
                                 "must match the namespace's name (" + std::string(name) + ")")});
  }
  const std::string& rv = finalized.metadata.resource_version;
  bool stale = false;
  auto written = namespaces.MutateWhole("", name, [&](api::Namespace& ns) {
    stale = !rv.empty() && rv != ns.metadata.resource_version;
    if (stale || ns.spec.finalizers == finalized.spec.finalizers) return false;
    ns.spec.finalizers = finalized.spec.finalizers;
    return true;
  });
  if (stale) return ObjectModified(kind, name);
  return written;
}

}  // namespace kvol::apiserver
