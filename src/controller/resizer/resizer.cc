#include "controller/resizer/resizer.h"

#include "api/api_error.h"
#include "api/pod_status.h"
#include "api/well_known.h"
#include "base/log.h"
#include "base/thread.h"
#include "client/worker.h"
#include "controller/expand/resize_status.h"
#include "controller/resizer/expand_request.h"
#include "controller/util/csi_secrets.h"
#include "controller/util/volume_node.h"
#include "metrics/storage_operations.h"

namespace kvol::controller::resizer {
namespace {

namespace pb = ::csi::v1;
using client::ApiStatus;

class CsiExpander final : public VolumeExpander {
 public:
  explicit CsiExpander(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  StatusOr<Expanded> Expand(const volume::plugins::CsiDriver& driver,
                            const api::PersistentVolume& pv, int64_t required_bytes,
                            const std::map<std::string, std::string>& secrets) override {
    auto& c = *driver.client;
    KVOL_ASSIGN_OR_RETURN(bool controller,
                          c.ControllerSupports(pb::ControllerServiceCapability::RPC::EXPAND_VOLUME));
    if (!controller) {
      // As external-resizer's trivial resizer: the volume is grown on the node alone.
      KVOL_ASSIGN_OR_RETURN(bool node,
                            c.NodeSupports(pb::NodeServiceCapability::RPC::EXPAND_VOLUME));
      if (!node) {
        return FailedPreconditionError(
            "CSI driver neither supports controller resize nor node resize");
      }
      return Expanded{.capacity_bytes = required_bytes, .node_expansion_required = true};
    }
    KVOL_ASSIGN_OR_RETURN(
        bool multi,
        c.ControllerSupports(pb::ControllerServiceCapability::RPC::SINGLE_NODE_MULTI_WRITER));
    KVOL_ASSIGN_OR_RETURN(auto req, MakeExpandRequest(pv, required_bytes, secrets, multi));
    KVOL_ASSIGN_OR_RETURN(auto resp,
                          c.Call(&pb::Controller::Stub::ControllerExpandVolume, req, timeout_));
    return Expanded{.capacity_bytes = ExpandedSize(resp, required_bytes),
                    .node_expansion_required = resp.node_expansion_required()};
  }

 private:
  const std::chrono::milliseconds timeout_;
};

std::string ResizerOf(const api::PersistentVolumeClaim& claim) {
  auto it = claim.metadata.annotations.find(std::string(api::kAnnStorageResizer));
  return it == claim.metadata.annotations.end() ? std::string() : it->second;
}

}  // namespace

std::unique_ptr<VolumeExpander> NewCsiExpander(std::chrono::milliseconds call_timeout) {
  return std::make_unique<CsiExpander>(call_timeout);
}

Controller::Controller(client::Client& client, Options options)
    : client_(client), options_(std::move(options)), events_(options_.events) {
  if (options_.expander) {
    expander_ = options_.expander;
  } else {
    own_expander_ = NewCsiExpander(options_.call_timeout);
    expander_ = own_expander_.get();
  }
}

Controller::~Controller() { Stop(); }

void Controller::Event(const api::PersistentVolumeClaim& claim, std::string_view type,
                       std::string_view reason, std::string message) {
  if (events_) events_(client::ReferenceTo(claim), type, reason, std::move(message));
}

std::shared_ptr<const volume::plugins::CsiDriver> Controller::DriverFor(
    const api::PersistentVolumeClaim& claim) const {
  if (!expand::ClaimWantsMore(claim)) return nullptr;
  const std::string driver = ResizerOf(claim);
  return driver.empty() ? nullptr : options_.drivers->Find(driver);
}

Status Controller::SyncClaim(const api::PersistentVolumeClaim& claim) {
  auto driver = DriverFor(claim);
  if (!driver) return OkStatus();
  auto pv = client_.resource<api::PersistentVolume>().Get("", claim.spec.volume_name);
  if (!pv.ok()) return api::IsNotFound(pv.error()) ? OkStatus() : ApiStatus(pv.error());
  if (!pv->spec.csi || pv->spec.csi->driver != driver->name || !VolumeNeedsResize(claim, *pv) ||
      !VolumeServedBy(client_, *pv, options_.node_name, options_.central)) {
    return OkStatus();
  }
  return Resize(claim, *pv, *driver);
}

Status Controller::Resize(const api::PersistentVolumeClaim& claim, const api::PersistentVolume& pv,
                          const volume::plugins::CsiDriver& driver) {
  const api::Quantity& requested = claim.spec.resources.requests.at("storage");  // VolumeNeedsResize
  const api::Time now = api::Time::FromTimePoint(options_.clock->Now());
  KVOL_ASSIGN_OR_RETURN(bool proceed, expand::MarkResizeInProgress(client_, claim, requested, now));
  if (!proceed) return OkStatus();
  Event(claim, "Normal", "Resizing", "External resizer is resizing volume " + pv.metadata.name);
  auto grown = [&]() -> StatusOr<Expanded> {
    KVOL_ASSIGN_OR_RETURN(auto secrets, CsiSecretsOf(client_, pv.spec.csi->controller_expand_secret_ref));
    metrics::OperationTimer timer(metrics::CsiPluginName(driver.name), "expand_volume");
    auto expanded = expander_->Expand(driver, pv, requested.Value(), secrets);
    timer.Done(expanded.ok());
    return expanded;
  }();
  if (!grown.ok()) {
    Event(claim, "Warning", "VolumeResizeFailed",
          "resize volume \"" + pv.metadata.name + "\" by resizer \"" + driver.name +
              "\" failed: " + grown.status().message());
    return grown.status();
  }
  const api::Quantity size = grown->capacity_bytes == requested.Value()
                                 ? requested
                                 : api::Quantity::FromUnits(grown->capacity_bytes, api::Quantity::Format::kBinarySI);
  KVOL_RETURN_IF_ERROR(expand::SetVolumeCapacity(client_, pv, size));
  if (grown->node_expansion_required) {
    KVOL_ASSIGN_OR_RETURN(bool told, expand::MarkFileSystemResizePending(client_, claim, now));
    if (told) {
      Event(claim, "Normal", "FileSystemResizeRequired",
            "Require file system resize of volume on node");
    }
    return OkStatus();
  }
  KVOL_RETURN_IF_ERROR(expand::MarkResizeFinished(client_, claim, size));
  Event(claim, "Normal", "VolumeResizeSuccessful", "Resize volume succeeded");
  return OkStatus();
}

void Controller::EnqueueAll() {
  for (const auto& c : claims_->List()) {
    if (DriverFor(*c)) queue_->Add(client::KeyOf(*c));
  }
}

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  if (!events_) {
    recorder_ = std::make_unique<client::EventRecorder>(
        client_.resource<api::Event>(),
        client::EventRecorderOptions{.component = "csi-resizer_" + options_.node_name},
        *options_.clock);
    events_ = client::SinkTo(*recorder_);
  }
  queue_ = std::make_unique<client::WorkQueue>(
      *options_.clock, client::WorkQueueOptions{.name = "csi-resizer"});
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  auto changed = [this](const std::shared_ptr<const api::PersistentVolumeClaim>& c) {
    if (DriverFor(*c)) queue_->Add(client::KeyOf(*c));
  };
  claims_ = &informers_->Handle<api::PersistentVolumeClaim>(
      {.on_add = changed, .on_update = [changed](const auto&, const auto& c) { changed(c); }});
  claims_->Start();
  if (!claims_->WaitForSync(sync_timeout)) {
    Stop();
    return UnavailableError("csi-resizer: caches did not fill in time");
  }
  {
    std::lock_guard lock(self_->mu);
    self_->controller = this;
  }
  // A driver that registers serves at once the claims that waited for it.
  options_.drivers->OnAdd([self = self_](const std::string&) {
    std::lock_guard lock(self->mu);
    if (self->controller) self->controller->EnqueueAll();
  });
  auto sync = [this](const std::string& key) {
    auto [ns, name] = client::SplitKey(key);
    auto c = claims_->Get(ns, name);
    return c ? SyncClaim(*c) : OkStatus();
  };
  for (int i = 0; i < options_.workers; ++i) {
    threads_.emplace_back([this, sync] {
      SetThreadName("csi-resizer");
      client::RunWorker(*queue_, sync, "csi-resizer");
    });
  }
  return OkStatus();
}

void Controller::Stop() {
  {
    std::lock_guard lock(self_->mu);
    self_->controller = nullptr;
  }
  if (informers_) informers_->Stop();
  if (queue_) queue_->ShutDown();
  for (auto& t : threads_) t.join();
  threads_.clear();
  if (recorder_) recorder_->Flush(std::chrono::seconds(2));
}

}  // namespace kvol::controller::resizer
