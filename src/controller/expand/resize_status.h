// The writes of a resize that the expand controller (in-tree plugins) and kvol's built-in CSI
// resizer share, each as Kubernetes' expand controller and external-resizer make them:
//
//   claim Resizing  ->  volume's capacity  ->  claim FileSystemResizePending (the node's turn)
//                                          or  claim's capacity, no resize condition
//
// Each step is written before the next starts and each is a no-op once done, so a controller
// that dies anywhere finishes the job on its next sync. A claim or volume that is gone, or has
// been replaced by another of its name (another uid), is left alone.
#pragma once

#include "api/core.h"
#include "base/status.h"
#include "client/client.h"

namespace kvol::controller::expand {

inline constexpr std::string_view kFileSystemResizePendingMessage =
    "Waiting for user to (re-)start a pod to finish file system resize of volume on node.";

// A Bound claim, not being deleted, that asks for more storage than it has: the claims a
// resize is for.
bool ClaimWantsMore(const api::PersistentVolumeClaim& claim);

// Sets the resize condition `type` (Resizing or FileSystemResizePending) of `st`, removing the
// other one; an existing condition of that type is kept as it is. With an empty `type` only
// removes them.
void SetResizeCondition(api::PersistentVolumeClaimStatus& st, std::string_view type,
                        const api::Time& now, std::string message = "");

// The claim is Resizing towards `requested` (status.allocatedResources, and
// allocatedResourceStatuses ControllerResizeInProgress). False when the volume is not to be
// grown after all: the claim is gone, or as stored (newer than a cache's copy) it has its size
// or waits for its node to grow the filesystem to `requested`.
StatusOr<bool> MarkResizeInProgress(client::Client& c, const api::PersistentVolumeClaim& claim,
                                    const api::Quantity& requested, const api::Time& now);

// The volume's spec.capacity is `size`, unless it is that big already.
Status SetVolumeCapacity(client::Client& c, const api::PersistentVolume& pv,
                         const api::Quantity& size);

// The claim waits for the node to grow its filesystem (FileSystemResizePending,
// NodeResizePending), unless the node has finished already. True when this call set it (so
// that it is told once).
StatusOr<bool> MarkFileSystemResizePending(client::Client& c,
                                           const api::PersistentVolumeClaim& claim,
                                           const api::Time& now);

// The claim has `size`: no resize condition left.
Status MarkResizeFinished(client::Client& c, const api::PersistentVolumeClaim& claim,
                          const api::Quantity& size);

}  // namespace kvol::controller::expand
