// pods/NAME/binding: how a scheduler assigns a pod to a node, as Kubernetes' API server does it.
// spec.nodeName cannot change through an update; a Binding sets it once, together with the
// pod's PodScheduled=True condition and any annotations the Binding carries.
#pragma once

#include "api/core.h"
#include "apiserver/registry.h"

namespace kvol::apiserver {

// Binds the pod `ns`/`name` to binding.target.name. Invalid if the Binding names no node or
// another pod; Conflict if the pod already has a node or is being deleted; NotFound if it is
// gone. Returns the pod as stored.
ApiOr<api::Pod> BindPod(Registry<api::Pod>& pods, std::string_view ns, std::string_view name,
                        const api::Binding& binding, const api::Time& now);

}  // namespace kvol::apiserver
