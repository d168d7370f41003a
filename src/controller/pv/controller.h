// The PersistentVolume controller: binds claims to volumes, and moves volumes through their
// phases, as Kubernetes' persistentvolume-controller does.
//
// Two level-triggered loops share one view of the world:
// - SyncClaim (claim sync): an unbound claim gets the best matching volume (or waits for its
//   first consumer, or for a provisioner, with Kubernetes' events); a bound claim is checked
//   against its volume (ClaimLost, ClaimMisbound) and any unfinished binding is finished.
// - SyncVolume (volume sync): a free volume is Available; a volume whose claim is gone is
//   Released and reclaimed by its policy; a volume whose claim went to another volume is
//   unbound again.
// Binding writes, in order, the volume's claimRef, the volume's status, the claim's volumeName
// and the claim's status. Each step checks before it writes, so a sync that stopped anywhere
// (an error, a crash) is finished by the next one and never binds anything twice.
//
// The view is the informers' caches, updated also with the controller's own writes as they
// succeed, so that the next sync does not act on an older copy than it wrote.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api/core.h"
#include "api/storage.h"
#include "base/string_map.h"
#include "client/client.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "client/workqueue.h"
#include "volume/binding/matching.h"
#include "client/pod_claims.h"
#include "os/clock.h"
#include "volume/plugin.h"
#include "controller/pv/metrics.h"

namespace kvol::controller::pv {

using client::PodClaimIndex;
using volume::binding::VolumeIndex;
using volume::binding::VolumePtr;

using client::EventSink;

struct ControllerOptions {
  int workers = 4;  // per queue: claims and volumes
  // Claims one claim worker syncs at once at most (SyncClaims): their bindings are written
  // together.
  size_t claim_batch = 64;
  // Volumes one volume worker syncs at once at most (SyncVolumes): their phases are written
  // together.
  size_t volume_batch = 64;
  // The process's plugins, whose provisioners run in this process (found by the StorageClass
  // provisioner name they serve); claims of other classes wait for an external provisioner.
  // None when null.
  const volume::PluginManager* plugins = nullptr;
  // How long scrubbing a volume with the Recycle policy may take.
  std::chrono::milliseconds recycle_timeout{std::chrono::minutes(5)};
  // Every object is synced again this often even without a change: repairs what a failed
  // write or a missed event left behind.
  std::chrono::seconds resync{15};
  os::Clock* clock = &os::RealClock();
  // The process's informers, shared with its other controllers; its own when null.
  client::SharedInformers* informers = nullptr;
};

class Controller {
 public:
  Controller(client::Client& client, EventSink events, ControllerOptions options = {});
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Starts informers (volumes, claims, classes, pods) and workers; Unavailable if the caches
  // do not fill within `sync_timeout`.
  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();

  using ClaimPtr = std::shared_ptr<const api::PersistentVolumeClaim>;

  // One pass, as a worker runs it. Errors leave the object to be synced again.
  Status SyncClaim(const api::PersistentVolumeClaim& claim);
  // SyncClaim of each claim in turn (null ones are skipped), answered in order, except that
  // the bindings they decide on are written together at the end: every volume's, then every
  // claim's, so that in process a worker waits for two commits per batch, not two per claim.
  std::vector<Status> SyncClaims(const std::vector<ClaimPtr>& claims);
  Status SyncVolume(const api::PersistentVolume& volume);
  // SyncVolume of each volume in turn (null ones are skipped), answered in order, except that
  // the phases they set without an event (a free volume Available, a bound one Bound) are
  // written together at the end, in one request where the client can: a burst of new volumes
  // waits for one commit per batch, not one per volume.
  std::vector<Status> SyncVolumes(const std::vector<VolumePtr>& volumes);

  // Whether an informer's update, which the view took as news or not (`stored`), needs a sync.
  // Unlike Kubernetes, the echo of the controller's own write is not synced when it leaves the
  // object Bound: while claims bind, that is half of all syncs, each finding nothing to do.
  // Whatever changes the object later brings a new version, and with it a sync.
  static bool UpdateNeedsSync(bool stored, const api::PersistentVolume& volume);
  static bool UpdateNeedsSync(bool stored, const api::PersistentVolumeClaim& claim);

  // For tests, which fill the view and run syncs without informers or queues (see the view's
  // methods below).
  void StoreVolumeForTest(const api::PersistentVolume& v) { StoreVolume(v); }
  bool StoreVolumeForTest(std::shared_ptr<const api::PersistentVolume> v) {
    return StoreVolume(std::move(v));
  }
  void StoreClaimForTest(const api::PersistentVolumeClaim& c) { StoreClaim(c); }
  bool StoreClaimForTest(ClaimPtr c) { return StoreClaim(std::move(c)); }
  void StoreClassForTest(const api::StorageClass& cls) { StoreClass(cls); }
  void StorePodForTest(const api::Pod& pod) { StorePod(pod); }
  bool OnUpdateForTest(std::shared_ptr<const api::PersistentVolume> v) {
    return OnUpdate(std::move(v));
  }
  bool OnUpdateForTest(ClaimPtr c) { return OnUpdate(std::move(c)); }
  std::vector<std::string> TakeQueuedClaimsForTest() { return TakeQueuedClaims(); }
  std::vector<std::string> TakeQueuedVolumesForTest() { return TakeQueuedVolumes(); }
  void ForgetClaimForTest(const api::PersistentVolumeClaim& c) { ForgetClaim(c); }
  // What the answer of one of the controller's own writes does to the view.
  void RememberForTest(ClaimPtr c) { Remember(std::move(c)); }

 private:
  // The claim and volume workers, each syncing batches from its queue.
  void StartWorkers();
  // Until Stop: every object queued again each resync period.
  void ResyncLoop();
  // The controller's view, filled by the informers once started (tests: the ForTest methods).
  void StoreVolume(const api::PersistentVolume& volume);
  void StoreClaim(const api::PersistentVolumeClaim& claim);
  // The informers' objects, shared rather than copied (they never change). True when the view
  // took the object as news; false when it held that version already (the echo of the
  // controller's own write) or a newer one.
  bool StoreVolume(std::shared_ptr<const api::PersistentVolume> volume);
  bool StoreClaim(std::shared_ptr<const api::PersistentVolumeClaim> claim);
  // What the informers' update handlers do: store the object in the view and say whether to
  // sync it now. An update that needs a sync only because it is news, of an object this
  // controller is writing, waits for the write's answer (see InFlight below).
  bool OnUpdate(std::shared_ptr<const api::PersistentVolume> volume);
  bool OnUpdate(ClaimPtr claim);
  void StoreClass(const api::StorageClass& cls);
  void StorePod(const api::Pod& pod);
  // What the informers' delete handlers do: the object leaves the view, and a tombstone (its
  // uid) keeps a late answer to one of the controller's own writes of it from putting it back
  // (Remember). Tombstones last one to two resync periods.
  void ForgetVolume(const api::PersistentVolume& volume);
  void ForgetClaim(const api::PersistentVolumeClaim& claim);
  // Drops claims the claim informer no longer has and no write of this controller is in
  // flight for, should any be left: the controller never creates claims, so such an entry can
  // only be one a late write answer put back. Run by the resync before it queues everything.
  void PruneClaims();

  // Keys queued for a claim sync by the volume sync (e.g. a volume pre-bound to a claim).
  std::vector<std::string> TakeQueuedClaims();
  // Volumes queued for a volume sync by the end of a write (when no queue runs: tests).
  std::vector<std::string> TakeQueuedVolumes();

  // A binding a batch of claim syncs decided on, written at the end of the batch.
  struct PendingBind {
    VolumePtr volume;
    ClaimPtr claim;
    bool reserved = false;  // the volume is reserved for the claim until written
    size_t slot = 0;        // the claim's place in the batch
  };
  // Where a claim sync in a batch leaves its binding.
  struct Deferral {
    std::vector<PendingBind>* binds;
    ClaimPtr claim;
    size_t slot;
  };

  // Claim sync. With `defer`, a binding is left for the batch to write.
  Status SyncClaimWith(const api::PersistentVolumeClaim& claim, Deferral* defer);
  Status SyncUnboundClaim(const api::PersistentVolumeClaim& claim, Deferral* defer);
  Status SyncBoundClaim(const api::PersistentVolumeClaim& claim, Deferral* defer);
  // Writes the binding of `claim` to `volume` now (WriteBindings for one claim).
  Status Bind(VolumePtr volume, const api::PersistentVolumeClaim& claim);
  // Bind now (then unreserve the volume if `reserved`), or leave it to the batch.
  Status BindOrDefer(const VolumePtr& volume, const api::PersistentVolumeClaim& claim,
                     bool reserved, Deferral* defer);
  // The bindings of a batch, as Bind writes each; a failure is its claim's result.
  void WriteBindings(std::vector<PendingBind>& binds, std::vector<Status>& results);
  // True when Bind has nothing to write to the volume, or to the claim.
  static bool VolumeBindingDone(const api::PersistentVolume& volume,
                                const api::PersistentVolumeClaim& claim);
  static bool ClaimBindingDone(const api::PersistentVolumeClaim& claim,
                               const api::PersistentVolume& volume);
  // Edits of the objects being bound, unwritten; true if they changed something.
  static bool SetClaimRef(api::PersistentVolume& next, const api::PersistentVolumeClaim& claim);
  static bool SetVolumeName(api::PersistentVolumeClaim& next, const api::PersistentVolume& volume);
  static bool SetVolumePhase(api::PersistentVolume& next, std::string_view phase,
                             std::string message);
  // `volume`: the volume the claim is bound to, for its access modes and capacity.
  static StatusOr<bool> SetClaimStatus(api::PersistentVolumeClaim& next, std::string_view phase,
                                       const api::PersistentVolume* volume);
  StatusOr<api::PersistentVolumeClaim> UpdateClaimStatus(const api::PersistentVolumeClaim& claim,
                                                         std::string_view phase,
                                                         const api::PersistentVolume* volume);
  StatusOr<api::PersistentVolumeClaim> UpdateClaimStatusWithEvent(
      const api::PersistentVolumeClaim& claim, std::string_view phase, std::string_view type,
      std::string_view reason, std::string message);
  // Whether the claim's class binds on first consumer (WaitForFirstConsumer): the controller
  // then takes only a volume pre-bound to the claim, and provisions only once the scheduler
  // has selected a node.
  bool ShouldDelayBinding(const api::PersistentVolumeClaim& claim) const;
  // Gives a claim without a class the default class, as Kubernetes does retroactively; true
  // when the claim was updated (its next sync carries on).
  StatusOr<bool> AssignDefaultClass(const api::PersistentVolumeClaim& claim);
  Status WaitForFirstConsumerEvent(const api::PersistentVolumeClaim& claim);
  Status ProvisionClaim(const api::PersistentVolumeClaim& claim);
  // The ExternalProvisioning event: the claim waits for a provisioner outside this process.
  void WaitingForExternalProvisioner(const api::PersistentVolumeClaim& claim,
                                     std::string_view provisioner);
  Status ProvisionInProcess(const api::PersistentVolumeClaim& claim, const api::StorageClass& cls,
                            volume::Provisioner& provisioner);
  volume::Provisioner* FindProvisioner(std::string_view name) const;
  Status DeleteVolume(const api::PersistentVolume& volume);
  // The volume with the controller's deletion finalizer added or removed as its reclaim policy
  // asks (only volumes a provisioner here made carry it); nullopt when it is right already.
  std::optional<api::PersistentVolume> WithDeletionFinalizerFixed(
      const api::PersistentVolume& volume) const;
  Status RecycleVolume(const api::PersistentVolume& volume);

  // Volume sync.
  // Where a volume sync in a batch leaves the phase it sets (SyncVolumes).
  struct PhaseBatch {
    std::vector<api::PersistentVolume> volumes;
    std::vector<size_t> slots;  // each volume's place in the batch
    size_t slot = 0;            // the place of the volume being synced
  };
  Status SyncVolumeWith(const api::PersistentVolume& volume, PhaseBatch* batch);
  // UpdateVolumePhase now, or, with `batch`, left for the batch to write.
  Status UpdateVolumePhaseOrDefer(const api::PersistentVolume& volume, std::string_view phase,
                                  PhaseBatch* batch);
  // Writes `phase` as the volume's status, unless it has that phase already.
  Status UpdateVolumePhase(const api::PersistentVolume& volume, std::string_view phase,
                           std::string message = {});
  Status UpdateVolumePhaseWithEvent(const api::PersistentVolume& volume, std::string_view phase,
                                    std::string_view type, std::string_view reason,
                                    std::string message);
  Status UnbindVolume(const api::PersistentVolume& volume);
  // Released (unless Released or Failed already), then reclaimed by its policy.
  Status ReleaseAndReclaim(const api::PersistentVolume& volume);
  Status ReclaimVolume(const api::PersistentVolume& volume);
  // The claim a volume's claimRef names, looked up in the cache and then on the server (a
  // claim made elsewhere may not have reached the cache yet); nullptr if there is none.
  StatusOr<ClaimPtr> FindClaimOfVolume(const api::PersistentVolume& volume);

  // Update (or UpdateStatus) and remember the result in the view.
  template <class T>
  StatusOr<T> Write(T next, bool status);
  // Writes `next`: the object (`main`), its status, or both; the result is remembered in the
  // view, which shares it.
  template <class T>
  StatusOr<std::shared_ptr<const T>> WriteParts(T next, bool main, bool status);
  // WriteParts of several objects of one kind (`parts`: main and status for each), in as few
  // requests as the client can; answered in order.
  template <class T>
  std::vector<StatusOr<std::shared_ptr<const T>>> WriteMany(
      std::vector<T> objs, const std::vector<std::pair<bool, bool>>& parts);
  // The answers of Client::UpdateTogether in [begin, end), each an object of kind T.
  template <class T, class It>
  static std::vector<api::ApiOr<std::shared_ptr<const T>>> Typed(It begin, It end);
  // The answers of writes of `keys` (begun with BeginWrites), remembered in the view, and
  // the writes ended.
  template <class T>
  std::vector<StatusOr<std::shared_ptr<const T>>> Remembered(
      const std::vector<std::string>& keys, std::vector<api::ApiOr<std::shared_ptr<const T>>> written);
  // The answer of one of the controller's own writes, into the view unless its object was
  // deleted meanwhile (tombstoned).
  void Remember(std::shared_ptr<const api::PersistentVolume> v);
  void Remember(ClaimPtr c);
  // Tombstones: uid by view key, this period's and the last one's.
  struct Tombstones {
    FlatStringMap<std::string> current, previous;
    bool Has(const std::string& key, const std::string& uid) const;
  };
  bool Tombstoned(const Tombstones& t, const std::string& key, const std::string& uid);
  void Bury(Tombstones& t, std::string key, std::string uid);
  void AgeTombstones();

  // The controller's writes in flight, by view key (a volume's name, a claim's
  // namespace/name). In process the event of a write (its echo) often reaches the informer
  // before the write's answer reaches the writer, so the view takes it as news. An update that
  // needs a sync only because it is news waits while its object is being written
  // (DeferWhileWriting); when the writes end (EndWrites), it is synced only if a write failed
  // or the view holds a newer version than the one written.
  struct InFlight {
    int writes = 0;
    bool updated = false;  // an informer update waited for the writes
  };
  template <class T>
  FlatStringMap<InFlight>& InFlightOf();
  template <class T>
  void BeginWrites(const std::vector<std::string>& keys);
  // `written[i]`: the resourceVersion written for keys[i], 0 if the write failed.
  template <class T>
  void EndWrites(const std::vector<std::string>& keys, const std::vector<int64_t>& written);
  template <class T>
  bool DeferWhileWriting(const T& obj);
  void QueueVolume(const std::string& name);
  // Adds `key` to `queue`, or, when no queue runs (tests), to `held` for TakeHeld.
  void QueueOn(client::WorkQueue* queue, std::vector<std::string>& held, const std::string& key);
  std::vector<std::string> TakeHeld(std::vector<std::string>& held);

  ClaimPtr GetClaim(const std::string& key) const;
  std::shared_ptr<const api::StorageClass> GetClass(const std::string& name) const;
  std::vector<std::string> UnscheduledPodsUsing(const api::PersistentVolumeClaim& claim) const;
  void QueueClaim(const std::string& key);

  template <class T>
  void Event(const T& obj, std::string_view type, std::string_view reason, std::string message);

  client::Client& client_;
  EventSink events_;
  ControllerOptions options_;

  VolumeIndex volumes_;
  mutable std::mutex mu_;
  FlatStringMap<ClaimPtr> claims_;
  std::unordered_map<std::string, std::shared_ptr<const api::StorageClass>> classes_;
  PodClaimIndex pods_;
  std::vector<std::string> queued_claims_;   // when no queue runs (tests)
  std::vector<std::string> queued_volumes_;  // the same
  std::mutex tombstones_mu_;
  Tombstones volume_tombstones_, claim_tombstones_;
  std::mutex in_flight_mu_;
  FlatStringMap<InFlight> volumes_in_flight_, claims_in_flight_;

  // Running.
  std::unique_ptr<client::WorkQueue> claim_queue_, volume_queue_;
  std::unique_ptr<client::InformerScope> informers_;
  std::shared_ptr<metrics::Collector> collector_;  // pv_collector_*, while the caches run
  client::Informer<api::PersistentVolume>* volume_informer_ = nullptr;
  client::Informer<api::PersistentVolumeClaim>* claim_informer_ = nullptr;
  std::vector<std::thread> threads_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  std::atomic<bool> stopping_{false};
};

}  // namespace kvol::controller::pv
