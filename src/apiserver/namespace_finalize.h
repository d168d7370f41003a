// namespaces/NAME/finalize: the one way a Namespace's spec.finalizers change, as Kubernetes'
// API server has it. The namespace controller takes its "kubernetes" finalizer out here once
// it has emptied a namespace being deleted; with no finalizer left, the namespace goes.
#pragma once

#include "api/core.h"
#include "apiserver/registry.h"

namespace kvol::apiserver {

// Sets namespace `name`'s spec.finalizers to `finalized`'s. Conflict if `finalized` carries a
// resourceVersion the namespace no longer has; Invalid if it names another namespace or a
// finalizer that is not a qualified name; NotFound if the namespace is gone. Returns the
// namespace as stored (its last state, if the write removed it).
ApiOr<api::Namespace> FinalizeNamespace(Registry<api::Namespace>& namespaces, std::string_view name,
                                        const api::Namespace& finalized);

}  // namespace kvol::apiserver
