// Writing a pod's status conditions as Kubernetes' podutil.UpdatePodCondition does.
#pragma once

#include "api/core.h"

namespace kvol::api {

// Puts `condition` in place of the pod's condition of its type (or adds it). Its
// lastTransitionTime is `now` when the status changes (or the condition is new) and is kept
// otherwise. False when the pod already said exactly this.
bool UpdatePodCondition(PodStatus& status, PodCondition condition, const Time& now);

}  // namespace kvol::api
