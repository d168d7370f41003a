// Status conditions: a pod's written as Kubernetes' podutil.UpdatePodCondition does, and a
// claim's looked up and its resize finished.
#pragma once

#include "api/core.h"

namespace kvol::api {

// Puts `condition` in place of the pod's condition of its type (or adds it). Its
// lastTransitionTime is `now` when the status changes (or the condition is new) and is kept
// otherwise. False when the pod already said exactly this.
bool UpdatePodCondition(PodStatus& status, PodCondition condition, const Time& now);

// Whether the claim has a condition of `type` with status True.
bool HasClaimCondition(const PersistentVolumeClaimStatus& status, std::string_view type);

// A claim whose storage has grown to `size`, as Kubernetes' MarkResizeFinished and
// MarkFSResizeFinished leave it: capacity `size`, no resize condition (Resizing,
// FileSystemResizePending) and no resize status for storage. Written by the expand controller
// when nothing is left to do on a node, and by the node agent once it has grown the filesystem.
void MarkClaimResizeFinished(PersistentVolumeClaimStatus& status, const Quantity& size);

}  // namespace kvol::api
