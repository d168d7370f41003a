// What the namespace controller does to a namespace being deleted, as Kubernetes' namespaced
// resources deleter does it: delete every namespaced object in it, of every kind the server
// serves, then tell what is left (objects, the finalizers holding them, errors) and how the
// namespace's status conditions say so.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "api/core.h"
#include "client/client.h"

namespace kvol::controller::namespace_ {

// What a pass of deletion left in a namespace.
struct Remaining {
  // By "<resource>.<group>" ("pods.", "volumesnapshots.snapshot.storage.k8s.io"): how many
  // objects of that resource are still there.
  std::map<std::string, int64_t> resources;
  // By finalizer: how many of the remaining objects it holds.
  std::map<std::string, int64_t> finalizers;
  // Lists and deletes that failed, as "<resource>.<group>: <message>".
  std::vector<std::string> failures;
  // Roughly how many seconds until what remains goes: the longest grace period of a pod being
  // deleted, 15 s for an object a finalizer holds.
  int64_t estimate_seconds = 0;

  bool empty() const { return resources.empty() && failures.empty(); }
};

// Deletes every object in namespace `ns` not being deleted already (Background propagation)
// and tells what remains. Errors of single lists and deletes are in Remaining::failures; the
// pass goes on past them.
Remaining DeleteContent(client::Client& client, const std::string& ns);

// The five conditions Kubernetes' namespace controller keeps on a namespace being deleted
// (NamespaceDeletionDiscoveryFailure, NamespaceDeletionGroupVersionParsingFailure,
// NamespaceDeletionContentFailure, NamespaceContentRemaining, NamespaceFinalizersRemaining),
// in that order, for `remaining`. A condition whose status is unchanged keeps its
// lastTransitionTime from `old`; a changed or new one gets `now`.
std::vector<api::NamespaceCondition> DeletionConditions(
    const Remaining& remaining, const std::vector<api::NamespaceCondition>& old,
    const api::Time& now);

}  // namespace kvol::controller::namespace_
