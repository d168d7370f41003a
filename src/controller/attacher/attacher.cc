// The built-in attacher: finalizer, ControllerPublish/Unpublish, status.
#include "controller/attacher/attacher.h"

#include <algorithm>

#include "base/log.h"
#include "base/strings.h"
#include "base/thread.h"
#include "client/worker.h"
#include "controller/util/csi_secrets.h"
#include "csi/names.h"
#include "volume/plugins/csi/csi_util.h"

namespace kvol::controller::attacher {

using client::ApiStatus;
namespace pb = ::csi::v1;

using api::HasFinalizer;

Controller::Controller(client::Client& client, Options options)
    : client_(client), options_(std::move(options)) {}

Controller::~Controller() { Stop(); }

Status Controller::SyncAttachment(const api::VolumeAttachment& va) {
  if (va.spec.node_name != options_.node_name) return OkStatus();
  auto driver = options_.drivers->Find(va.spec.attacher);
  if (!driver) return OkStatus();  // not a driver of this node: an external attacher's
  if (va.metadata.deletion_timestamp) return Detach(va, *driver);
  if (va.status && va.status->attached) return OkStatus();
  return Attach(va, *driver);
}

Status Controller::Attach(const api::VolumeAttachment& va,
                          const volume::plugins::CsiDriver& driver) {
  const std::string finalizer = csi::AttacherFinalizer(driver.name);
  if (!HasFinalizer(va.metadata, finalizer)) {
    api::VolumeAttachment next = va;
    next.metadata.finalizers.push_back(finalizer);
    auto written = client_.resource<api::VolumeAttachment>().Update(next);
    if (!written.ok()) return ApiStatus(written.error());
    return AbortedError("finalizer added; attaching on the next pass");  // from the new version
  }
  std::map<std::string, std::string> metadata;
  auto publish = [&]() -> Status {
    KVOL_ASSIGN_OR_RETURN(bool supported,
                          driver.client->ControllerSupports(
                              pb::ControllerServiceCapability::RPC::PUBLISH_UNPUBLISH_VOLUME));
    if (!supported) return OkStatus();
    KVOL_ASSIGN_OR_RETURN(api::PersistentVolumeSpec pv, VolumeOf(va));
    if (!pv.csi) return InvalidArgumentError("the volume has no csi source");
    KVOL_ASSIGN_OR_RETURN(std::string node_id, NodeIdOf(driver.name, va.spec.node_name));
    KVOL_ASSIGN_OR_RETURN(bool multi_writer,
                          driver.client->ControllerSupports(
                              pb::ControllerServiceCapability::RPC::SINGLE_NODE_MULTI_WRITER));
    pb::ControllerPublishVolumeRequest req;
    req.set_volume_id(pv.csi->volume_handle);
    req.set_node_id(node_id);
    *req.mutable_volume_capability() = volume::plugins::VolumeCapabilityOf(pv, multi_writer);
    req.set_readonly(pv.csi->read_only);
    for (const auto& [k, v] : pv.csi->volume_attributes) (*req.mutable_volume_context())[k] = v;
    KVOL_ASSIGN_OR_RETURN(auto secrets,
                          controller::CsiSecretsOf(client_, pv.csi->controller_publish_secret_ref));
    for (const auto& [k, v] : secrets) (*req.mutable_secrets())[k] = v;
    KVOL_ASSIGN_OR_RETURN(auto resp,
                          driver.client->Call(&pb::Controller::Stub::ControllerPublishVolume, req,
                                              options_.call_timeout));
    metadata.insert(resp.publish_context().begin(), resp.publish_context().end());
    return OkStatus();
  };
  if (Status s = publish(); !s.ok()) {
    (void)WriteError(va, true, s);
    return s;
  }
  api::VolumeAttachment next = va;
  next.status =
      api::VolumeAttachmentStatus{.attached = true, .attachment_metadata = std::move(metadata)};
  auto written = client_.resource<api::VolumeAttachment>().UpdateStatus(next);
  if (!written.ok()) return ApiStatus(written.error());
  log::Info("attacher: " + va.metadata.name + " attached (" + driver.name + " on node " +
            va.spec.node_name + ")");
  return OkStatus();
}

Status Controller::Detach(const api::VolumeAttachment& va,
                          const volume::plugins::CsiDriver& driver) {
  const std::string finalizer = csi::AttacherFinalizer(driver.name);
  if (!HasFinalizer(va.metadata, finalizer)) return OkStatus();
  auto unpublish = [&]() -> Status {
    KVOL_ASSIGN_OR_RETURN(bool supported,
                          driver.client->ControllerSupports(
                              pb::ControllerServiceCapability::RPC::PUBLISH_UNPUBLISH_VOLUME));
    if (!supported) return OkStatus();
    KVOL_ASSIGN_OR_RETURN(api::PersistentVolumeSpec pv, VolumeOf(va));
    if (!pv.csi) return OkStatus();
    KVOL_ASSIGN_OR_RETURN(std::string node_id, NodeIdOf(driver.name, va.spec.node_name));
    pb::ControllerUnpublishVolumeRequest req;
    req.set_volume_id(pv.csi->volume_handle);
    req.set_node_id(node_id);
    KVOL_ASSIGN_OR_RETURN(auto secrets,
                          controller::CsiSecretsOf(client_, pv.csi->controller_publish_secret_ref));
    for (const auto& [k, v] : secrets) (*req.mutable_secrets())[k] = v;
    return driver.client
        ->Call(&pb::Controller::Stub::ControllerUnpublishVolume, req, options_.call_timeout)
        .status();
  };
  if (Status s = unpublish(); !s.ok()) {
    (void)WriteError(va, false, s);
    return s;
  }
  auto written =
      client::Mutate<api::VolumeAttachment>(client_.resource<api::VolumeAttachment>(), "",
                                            va.metadata.name, [&](api::VolumeAttachment& v) {
                                              auto& f = v.metadata.finalizers;
                                              auto it = std::find(f.begin(), f.end(), finalizer);
                                              if (it == f.end()) return false;
                                              f.erase(it);
                                              return true;
                                            });
  if (!written.ok() && !api::IsNotFound(written.error())) return ApiStatus(written.error());
  log::Info("attacher: " + va.metadata.name + " detached (" + driver.name + " from node " +
            va.spec.node_name + ")");
  return OkStatus();
}

StatusOr<std::string> Controller::NodeIdOf(const std::string& driver, const std::string& node) {
  auto csinode = client_.resource<api::CSINode>().Get("", node);
  if (!csinode.ok()) {
    return Status(ApiStatus(csinode.error()).code(),
                  "cannot find the CSINode of node " + node + ": " + csinode.error().message);
  }
  for (const auto& d : csinode->spec.drivers) {
    if (d.name == driver) return d.node_id;
  }
  return NotFoundError("CSINode " + node + " does not contain driver " + driver);
}

StatusOr<api::PersistentVolumeSpec> Controller::VolumeOf(const api::VolumeAttachment& va) {
  if (va.spec.source.inline_volume_spec) return *va.spec.source.inline_volume_spec;
  if (!va.spec.source.persistent_volume_name) {
    return InvalidArgumentError("the VolumeAttachment names no volume");
  }
  auto pv =
      client_.resource<api::PersistentVolume>().Get("", *va.spec.source.persistent_volume_name);
  if (!pv.ok()) {
    return Status(ApiStatus(pv.error()).code(), "cannot read PersistentVolume " +
                                                    *va.spec.source.persistent_volume_name + ": " +
                                                    pv.error().message);
  }
  return pv->spec;
}

Status Controller::WriteError(const api::VolumeAttachment& va, bool attach, const Status& s) {
  auto written = client::Mutate<api::VolumeAttachment>(
      client_.resource<api::VolumeAttachment>(), "", va.metadata.name,
      [&](api::VolumeAttachment& v) {
        if (!v.status) v.status = api::VolumeAttachmentStatus{};
        api::VolumeError e{.time = api::Time::FromTimePoint(options_.clock->Now()),
                           .message = s.message()};
        (attach ? v.status->attach_error : v.status->detach_error) = e;
        return true;
      },
      /*status=*/true);
  return written.ok() ? OkStatus() : ApiStatus(written.error());
}

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  queue_ = std::make_unique<client::WorkQueue>(
      *options_.clock, client::WorkQueueOptions{.name = "csi-attacher"});
  attachments_ = std::make_unique<client::Informer<api::VolumeAttachment>>(
      client_.resource<api::VolumeAttachment>(), client::InformerOptions{.clock = options_.clock});
  auto changed = [this](const auto& va) {
    if (va->spec.node_name == options_.node_name) queue_->Add(client::KeyOf(*va));
  };
  attachments_->AddHandlers(
      {.on_add = changed, .on_update = [changed](const auto&, const auto& va) { changed(va); }});
  attachments_->Start();
  if (!attachments_->WaitForSync(sync_timeout)) {
    Stop();
    return UnavailableError("attacher: the VolumeAttachment cache did not fill in time");
  }
  auto sync = [this](const std::string& key) {
    auto [ns, name] = client::SplitKey(key);
    auto va = attachments_->Get(ns, name);
    return va ? SyncAttachment(*va) : OkStatus();
  };
  for (int i = 0; i < options_.workers; ++i) {
    threads_.emplace_back([this, sync] {
      SetThreadName("csi-attacher");
      client::RunWorker(*queue_, sync, "csi-attacher");
    });
  }
  threads_.emplace_back([this] {
    SetThreadName("csi-attach-sync");
    Kick& k = *kick_;
    std::unique_lock lock(k.mu);
    while (!k.stopping) {
      k.cv.wait_for(lock, options_.resync, [&k] { return k.stopping || k.kicked; });
      if (k.stopping) break;
      k.kicked = false;
      lock.unlock();
      for (const auto& va : attachments_->List()) {
        if (va->spec.node_name == options_.node_name && options_.drivers->Find(va->spec.attacher))
          queue_->Add(client::KeyOf(*va));
      }
      lock.lock();
    }
  });
  // A driver that registers now is served at once. (The table may outlive this controller:
  // the callback holds only the shared flag.)
  options_.drivers->OnAdd([kick = kick_](const std::string&) {
    {
      std::lock_guard lock(kick->mu);
      kick->kicked = true;
    }
    kick->cv.notify_all();
  });
  return OkStatus();
}

void Controller::Stop() {
  {
    std::lock_guard lock(kick_->mu);
    kick_->stopping = true;
  }
  kick_->cv.notify_all();
  if (attachments_) attachments_->Stop();
  if (queue_) queue_->ShutDown();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace kvol::controller::attacher
