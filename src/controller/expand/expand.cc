#include "controller/expand/expand.h"

#include "api/pod_status.h"
#include "base/log.h"
#include "base/thread.h"
#include "client/worker.h"
#include "controller/expand/resize_status.h"

namespace kvol::controller::expand {

using client::ApiStatus;
using client::RunWorker;
namespace {

constexpr std::string_view kStorage = "storage";

const api::Quantity* Storage(const api::ResourceList& list) {
  auto it = list.find(std::string(kStorage));
  return it == list.end() ? nullptr : &it->second;
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
  if (!ClaimWantsMore(claim)) return OkStatus();
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
  if (!pv_size || *pv_size < requested) {
    // Marked first, so that a user sees the resize under way (and what it is to reach).
    KVOL_ASSIGN_OR_RETURN(bool proceed, MarkResizeInProgress(client_, claim, requested, now));
    if (!proceed) return OkStatus();
    auto grown = expander->ExpandVolumeDevice(spec, requested.Value(),
                                              pv_size ? pv_size->Value() : 0);
    if (!grown.ok()) {
      Event(claim, "Warning", "VolumeResizeFailed",
            "error expanding volume \"" + claim_key + "\" of plugin \"" +
                std::string(plugin->Name()) + "\": " + grown.status().message());
      return grown.status();
    }
    KVOL_RETURN_IF_ERROR(SetVolumeCapacity(client_, pv, requested));
  }

  // The storage is the new size: the node grows the filesystem, or the claim has it now.
  if (expander->RequiresFSResize(spec)) {
    return MarkFileSystemResizePending(client_, claim, now).status();
  }
  KVOL_RETURN_IF_ERROR(MarkResizeFinished(client_, claim, requested));
  Event(claim, "Normal", "VolumeResizeSuccessful",
        "ExpandVolume succeeded for volume " + claim_key);
  return OkStatus();
}

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  queue_ = std::make_unique<client::WorkQueue>(*options_.clock, client::WorkQueueOptions{.name = "volume_expand"});
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  auto changed = [this](const auto& c) {
    if (ClaimWantsMore(*c)) queue_->Add(client::KeyOf(*c));
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
