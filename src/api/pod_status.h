// Status conditions: a pod's written as Kubernetes' podutil.UpdatePodCondition does, and a
// claim's looked up.
#pragma once

#include "api/core.h"

namespace kvol::api {

// Puts `condition` in place of the pod's condition of its type (or adds it). Its
// lastTransitionTime is `now` when the status changes (or the condition is new) and is kept
// otherwise. False when the pod already said exactly this.
bool UpdatePodCondition(PodStatus& status, PodCondition condition, const Time& now);

// Whether the claim has a condition of `type` with status True.
bool HasClaimCondition(const PersistentVolumeClaimStatus& status, std::string_view type);

}  // namespace kvol::api
