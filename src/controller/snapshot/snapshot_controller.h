// The snapshot controller's decisions, as external-snapshotter's common controller makes them:
// a VolumeSnapshot gets its class (the named one, or the default class of its claim's driver),
// then a VolumeSnapshotContent named snapcontent-<snapshot uid> for a claim (or binds to the
// pre-provisioned content it names), the finalizers that protect each of them and the source
// claim, and its status copied from the content as the CSI snapshotter fills it in. Deleting a
// snapshot deletes its content under the Delete policy (the snapshotter then deletes the storage
// snapshot) and keeps it under Retain. Events and status errors in external-snapshotter's
// words. Every sync is level-triggered and reads what it decides on from the API; the wiring
// (informers, queue, workers) is in snapshot_controller_base.h.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "api/core.h"
#include "api/snapshot.h"
#include "base/status.h"
#include "client/client.h"
#include "client/event_recorder.h"
#include "os/clock.h"

namespace kvol::controller::snapshot {

// On a content made for a volume only one node's agent can reach: which node that is, for its
// built-in CSI snapshotter (external-snapshotter's distributed snapshotting).
inline constexpr std::string_view kManagedByLabel = "snapshot.storage.kubernetes.io/managed-by";

// "snapcontent-<uid>": the content made for a dynamic snapshot.
std::string ContentNameFor(const api::VolumeSnapshot& vs);

class SnapshotController {
 public:
  // `events` may be empty (no events). `enqueue_snapshot` is told the key ("ns/name") of a
  // snapshot whose content changed in a way its status must follow.
  SnapshotController(client::Client& client, client::EventSink events, os::Clock& clock,
                     std::function<void(const std::string&)> enqueue_snapshot = {});

  // One pass over a snapshot. An error means: try again later (the reason is also an event or
  // the snapshot's status.error where Kubernetes puts it).
  Status SyncSnapshot(const api::VolumeSnapshot& vs);
  // One pass over a content: its finalizer while bound, and the snapshot it must update.
  Status SyncContent(const api::VolumeSnapshotContent& content);

 private:
  // The snapshot's class, after giving a dynamic snapshot without one its default; nullopt
  // (with an error already reported) when there is none to use.
  StatusOr<std::optional<api::VolumeSnapshot>> EnsureClass(const api::VolumeSnapshot& vs);
  Status SyncLive(const api::VolumeSnapshot& vs);
  Status SyncUnreadyPreProvisioned(const api::VolumeSnapshot& vs);
  Status SyncUnreadyDynamic(const api::VolumeSnapshot& vs);
  Status SyncReady(const api::VolumeSnapshot& vs);
  Status ProcessDeletion(const api::VolumeSnapshot& vs);

  Status CreateContent(const api::VolumeSnapshot& vs);
  // Copies the content's status into the snapshot's (bound name, readyToUse, creationTime,
  // restoreSize, error), with SnapshotCreated and SnapshotReady on the first transitions.
  Status UpdateStatus(const api::VolumeSnapshot& vs, const api::VolumeSnapshotContent& content);
  // ReportError (not ready), and FailedPrecondition so that the snapshot is tried again.
  Status Refuse(const api::VolumeSnapshot& vs, std::string_view reason, const std::string& message);
  // status.error and a Warning event, unless the snapshot already says so.
  Status ReportError(const api::VolumeSnapshot& vs, bool not_ready, std::string_view reason,
                     const std::string& message);

  // The content bound to the snapshot and pointing back at it; nullopt when there is none.
  StatusOr<std::optional<api::VolumeSnapshotContent>> BoundContent(const api::VolumeSnapshot& vs);
  Status AddSnapshotFinalizers(const api::VolumeSnapshot& vs);
  // Lets go of the source claim once no snapshot of it in its namespace is still being taken
  // (`deleting`: a snapshot on its way out no longer counts).
  Status ReleaseSourceClaim(const api::VolumeSnapshot& vs, bool deleting);
  Status ProtectSourceClaim(const api::VolumeSnapshot& vs, const api::PersistentVolumeClaim& pvc);
  Status MarkBeingDeleted(const api::VolumeSnapshotContent& content);
  // The node whose agent alone reaches `pv`, "" when any may (or none is known).
  std::string ManagingNode(const api::PersistentVolume& pv);

  void Event(const api::VolumeSnapshot& vs, std::string_view type, std::string_view reason,
             std::string message);
  void Event(const api::VolumeSnapshotContent& c, std::string_view type, std::string_view reason,
             std::string message);

  client::Client& client_;
  client::EventSink events_;
  os::Clock& clock_;
  std::function<void(const std::string&)> enqueue_snapshot_;
};

}  // namespace kvol::controller::snapshot
