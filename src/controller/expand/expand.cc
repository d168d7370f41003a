#include "controller/expand/expand.h"

#include <algorithm>

#include "api/pod_status.h"
#include "base/log.h"
#include "base/thread.h"
#include "client/worker.h"

namespace kvol::controller::expand {

using client::ApiStatus;
using client::RunWorker;
namespace {

constexpr std::string_view kStorage = "storage";

const api::Quantity* Storage(const api::ResourceList& list) {
  auto it = list.find(std::string(kStorage));
  return it == list.end() ? nullptr : &it->second;
}

// Sets (or, with an empty `type`, only removes) the resize conditions of `st`: at most one of
// Resizing and FileSystemResizePending is there.
void SetResizeCondition(api::PersistentVolumeClaimStatus& st, std::string_view type,
                        const api::Time& now, std::string message = "") {
  auto& c = st.conditions;
  const bool had = api::HasClaimCondition(st, type);
  c.erase(std::remove_if(c.begin(), c.end(),
                         [&](const auto& x) {
                           const bool resize = x.type == api::kClaimResizing ||
                                               x.type == api::kClaimFileSystemResizePending;
                           return resize && x.type != type;
                         }),
          c.end());
  if (type.empty() || had) return;
  api::PersistentVolumeClaimCondition cond;
  cond.type = std::string(type);
  cond.status = "True";
  cond.last_transition_time = now;
  cond.message = std::move(message);
  c.push_back(std::move(cond));
}

// A Bound claim, not being deleted, that asks for more than it has: as Kubernetes' expand
// controller, only such claims are queued and synced.
bool WantsMore(const api::PersistentVolumeClaim& claim) {
  if (claim.status.phase != "Bound" || claim.spec.volume_name.empty() ||
      claim.metadata.deletion_timestamp) {
    return false;
  }
  const api::Quantity* requested = Storage(claim.spec.resources.requests);
  const api::Quantity* capacity = Storage(claim.status.capacity);
  return requested && !(capacity && !(*capacity < *requested));
}

}  // namespace

Controller::Controller(client::Client& client, client::EventSink events, Options options)
    : client_(client), events_(std::move(events)), options_(options) {}

Controller::~Controller() { Stop(); }

void Controller::Event(const api::PersistentVolumeClaim& claim, std::string_view type,
                       std::string_view reason, std::string message) {
  if (events_) events_(client::ReferenceTo(claim), type, reason, std::move(message));
}

Status Controller::SyncClaim(const api::PersistentVolumeClaim& claim) {
  if (!WantsMore(claim)) return OkStatus();
  const api::Quantity* requested = Storage(claim.spec.resources.requests);  // set: WantsMore
  auto pv = client_.resource<api::PersistentVolume>().Get("", claim.spec.volume_name);
  if (!pv.ok()) {
    return api::IsNotFound(pv.error()) ? OkStatus() : ApiStatus(pv.error());
  }
  if (!pv->spec.claim_ref || pv->spec.claim_ref->uid != claim.metadata.uid) return OkStatus();

  // The storage has grown already and the node's filesystem is what is left: the agent's job.
  const api::Quantity* pv_size = Storage(pv->spec.capacity);
  if (pv_size && !(*pv_size < *requested) &&
      api::HasClaimCondition(claim.status, api::kClaimFileSystemResizePending)) {
    return OkStatus();
  }
  return Expand(claim, *pv, *requested);
}

Status Controller::Expand(const api::PersistentVolumeClaim& claim, const api::PersistentVolume& pv,
                          const api::Quantity& requested) {
  const std::string claim_key = claim.metadata.namespace_ + "/" + claim.metadata.name;
  volume::Spec spec;
  spec.volume.name = pv.metadata.name;
  spec.pv = pv;
  volume::VolumePlugin* plugin = nullptr;
  if (options_.plugins) {
    auto found = options_.plugins->FindBySpec(spec);
    if (found.ok()) plugin = *found;
  }
  volume::ExpandableVolumePlugin* expander = plugin ? plugin->AsExpandable() : nullptr;
  if (!expander) {
    if (pv.spec.csi) {
      const std::string driver = pv.spec.csi->driver;
      auto it = claim.metadata.annotations.find(std::string(api::kAnnStorageResizer));
      if (it != claim.metadata.annotations.end() && it->second == driver) return OkStatus();
      auto written = client::Mutate<api::PersistentVolumeClaim>(
          client_.resource<api::PersistentVolumeClaim>(), claim.metadata.namespace_,
          claim.metadata.name, [&](api::PersistentVolumeClaim& c) {
            if (c.metadata.uid != claim.metadata.uid) return false;
            c.metadata.annotations[std::string(api::kAnnStorageResizer)] = driver;
            return true;
          });
      if (!written.ok() && !api::IsNotFound(written.error())) return ApiStatus(written.error());
      Event(claim, "Normal", "ExternalExpanding",
            "waiting for an external controller to expand this PVC");
      return OkStatus();
    }
    Event(claim, "Normal", "ExternalExpanding",
          "didn't find a plugin capable of expanding the volume; waiting for an external "
          "controller to process this PVC.");
    return OkStatus();
  }

  const api::Quantity* pv_size = Storage(pv.spec.capacity);
  const api::Time now = api::Time::FromTimePoint(options_.clock->Now());
  auto& claims = client_.resource<api::PersistentVolumeClaim>();
  if (!pv_size || *pv_size < requested) {
    // Marked first, so that a user sees the resize under way (and what it is to reach).
    auto marked = client::Mutate<api::PersistentVolumeClaim>(
        claims, claim.metadata.namespace_, claim.metadata.name,
        [&](api::PersistentVolumeClaim& c) {
          if (c.metadata.uid != claim.metadata.uid) return false;
          const bool had = api::HasClaimCondition(c.status, api::kClaimResizing);
          const api::Quantity* allocated = Storage(c.status.allocated_resources);
          if (had && allocated && *allocated == requested) return false;
          SetResizeCondition(c.status, api::kClaimResizing, now);
          c.status.allocated_resources[std::string(kStorage)] = requested;
          c.status.allocated_resource_statuses[std::string(kStorage)] =
              "ControllerResizeInProgress";
          return true;
        },
        /*status=*/true);
    if (!marked.ok()) {
      return api::IsNotFound(marked.error()) ? OkStatus() : ApiStatus(marked.error());
    }
    auto grown = expander->ExpandVolumeDevice(spec, requested.Value(),
                                              pv_size ? pv_size->Value() : 0);
    if (!grown.ok()) {
      Event(claim, "Warning", "VolumeResizeFailed",
            "error expanding volume \"" + claim_key + "\" of plugin \"" +
                std::string(plugin->Name()) + "\": " + grown.status().message());
      return grown.status();
    }
    auto resized = client::Mutate<api::PersistentVolume>(
        client_.resource<api::PersistentVolume>(), "", pv.metadata.name,
        [&](api::PersistentVolume& v) {
          if (v.metadata.uid != pv.metadata.uid) return false;
          const api::Quantity* have = Storage(v.spec.capacity);
          if (have && !(*have < requested)) return false;
          v.spec.capacity[std::string(kStorage)] = requested;
          return true;
        });
    if (!resized.ok()) return ApiStatus(resized.error());
  }

  // The storage is the new size: the node grows the filesystem, or the claim has it now.
  if (expander->RequiresFSResize(spec)) {
    auto pending = client::Mutate<api::PersistentVolumeClaim>(
        claims, claim.metadata.namespace_, claim.metadata.name,
        [&](api::PersistentVolumeClaim& c) {
          if (c.metadata.uid != claim.metadata.uid ||
              api::HasClaimCondition(c.status, api::kClaimFileSystemResizePending)) {
            return false;
          }
          SetResizeCondition(c.status, api::kClaimFileSystemResizePending, now,
                             std::string(kFileSystemResizePendingMessage));
          c.status.allocated_resource_statuses[std::string(kStorage)] = "NodeResizePending";
          return true;
        },
        /*status=*/true);
    if (!pending.ok() && !api::IsNotFound(pending.error())) return ApiStatus(pending.error());
    return OkStatus();
  }
  return Finish(claim, requested);
}

Status Controller::Finish(const api::PersistentVolumeClaim& claim, const api::Quantity& size) {
  auto done = client::Mutate<api::PersistentVolumeClaim>(
      client_.resource<api::PersistentVolumeClaim>(), claim.metadata.namespace_,
      claim.metadata.name,
      [&](api::PersistentVolumeClaim& c) {
        if (c.metadata.uid != claim.metadata.uid) return false;
        api::MarkClaimResizeFinished(c.status, size);
        return true;
      },
      /*status=*/true);
  if (!done.ok()) return api::IsNotFound(done.error()) ? OkStatus() : ApiStatus(done.error());
  Event(claim, "Normal", "VolumeResizeSuccessful",
        "ExpandVolume succeeded for volume " + claim.metadata.namespace_ + "/" +
            claim.metadata.name);
  return OkStatus();
}

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  queue_ = std::make_unique<client::WorkQueue>(*options_.clock);
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  auto changed = [this](const auto& c) {
    if (WantsMore(*c)) queue_->Add(client::KeyOf(*c));
  };
  claims_ = &informers_->Handle<api::PersistentVolumeClaim>(
      {.on_add = changed, .on_update = [changed](const auto&, const auto& c) { changed(c); }});
  claims_->Start();
  if (!claims_->WaitForSync(sync_timeout)) {
    Stop();
    return UnavailableError("expand controller: caches did not fill in time");
  }
  auto sync = [this](const std::string& key) {
    auto [ns, name] = client::SplitKey(key);
    auto c = claims_->Get(ns, name);
    return c ? SyncClaim(*c) : OkStatus();
  };
  for (int i = 0; i < options_.workers; ++i) {
    threads_.emplace_back([this, sync] {
      SetThreadName("volume-expand");
      RunWorker(*queue_, sync, "volume_expand");
    });
  }
  return OkStatus();
}

void Controller::Stop() {
  if (informers_) informers_->Stop();  // no handler runs after this
  if (queue_) queue_->ShutDown();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace kvol::controller::expand
