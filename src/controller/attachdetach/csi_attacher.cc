#include "controller/attachdetach/csi_attacher.h"

#include "api/api_error.h"
#include "client/worker.h"
#include "csi/names.h"
#include "volume/plugins/csi/csi_util.h"

namespace kvol::controller::attachdetach {
namespace {

// VolumeAttachments by "<persistent volume>/<node>".
constexpr char kByVolumeAndNode[] = "kvol.io/volume-node";

const api::CSIPersistentVolumeSource* CsiOf(const volume::Spec& spec) {
  return spec.pv && spec.pv->spec.csi ? &*spec.pv->spec.csi : nullptr;
}

}  // namespace

CsiAttacher::CsiAttacher(
    client::Client& client, client::Informer<api::VolumeAttachment>& attachments,
    std::function<std::shared_ptr<const api::CSIDriver>(const std::string& name)> driver,
    CsiAttacherOptions options)
    : client_(client), attachments_(attachments), driver_(std::move(driver)), options_(options) {
  attachments_.AddIndex(kByVolumeAndNode, [](const api::VolumeAttachment& va) {
    std::vector<std::string> out;
    if (va.spec.source.persistent_volume_name) {
      out.push_back(*va.spec.source.persistent_volume_name + "/" + va.spec.node_name);
    }
    return out;
  });
}

void CsiAttacher::Changed() {
  {
    std::lock_guard lock(mu_);
    ++generation_;
  }
  cv_.notify_all();
}

void CsiAttacher::Cancel() {
  {
    std::lock_guard lock(mu_);
    cancelled_ = true;
  }
  cv_.notify_all();
}

bool CsiAttacher::NeedsAttach(const volume::Spec& spec) {
  const auto* csi = CsiOf(spec);
  if (!csi) return false;  // inline CSI volumes are never attached
  auto d = driver_(csi->driver);
  return volume::plugins::AttachRequired(d.get());
}

StatusOr<std::string> CsiAttacher::WaitFor(
    const std::function<std::optional<StatusOr<std::string>>()>& done,
    const std::string& timeout_message) {
  const os::MonoTime deadline =
      options_.clock->Monotonic() +
      std::chrono::duration_cast<os::MonoTime::duration>(options_.timeout);
  std::unique_lock lock(mu_);
  while (true) {
    if (cancelled_) return UnavailableError("the attach/detach controller is stopping");
    const uint64_t seen = generation_;
    lock.unlock();
    if (auto answer = done()) return *answer;
    lock.lock();
    if (options_.clock->Monotonic() >= deadline) return DeadlineExceededError(timeout_message);
    if (generation_ == seen && !cancelled_) options_.clock->WaitUntil(cv_, lock, deadline);
  }
}

StatusOr<std::string> CsiAttacher::Attach(const volume::Spec& spec, const std::string& node) {
  const auto* csi = CsiOf(spec);
  if (!csi) return InvalidArgumentError("volume " + spec.Name() + " is not a CSI volume");
  const std::string name = csi::AttachmentName(csi->volume_handle, csi->driver, node);
  if (!attachments_.Get("", name)) {
    api::VolumeAttachment va;
    va.metadata.name = name;
    va.spec.attacher = csi->driver;
    va.spec.node_name = node;
    va.spec.source.persistent_volume_name = spec.Name();
    auto created = client_.resource<api::VolumeAttachment>().Create(va);
    if (!created.ok() && !api::IsAlreadyExists(created.error())) {
      return client::ApiStatus(created.error());
    }
  }
  return WaitFor(
      [&]() -> std::optional<StatusOr<std::string>> {
        auto va = attachments_.Get("", name);
        if (!va) return std::nullopt;  // not in the cache yet
        if (va->metadata.deletion_timestamp) {
          return UnavailableError("volume attachment " + name + " is being deleted");
        }
        if (va->status && va->status->attached) return std::string();
        if (va->status && va->status->attach_error) {
          return InternalError(va->status->attach_error->message);
        }
        return std::nullopt;
      },
      "attachment timeout for volume " + csi->volume_handle);
}

Status CsiAttacher::Detach(const std::string& volume_name, const std::string& node) {
  const std::string key = volume_name + "/" + node;
  for (const auto& va : attachments_.ByIndex(kByVolumeAndNode, key)) {
    if (va->metadata.deletion_timestamp) continue;
    auto deleted = client_.resource<api::VolumeAttachment>().Delete("", va->metadata.name);
    if (!deleted.ok() && !api::IsNotFound(deleted.error())) {
      return client::ApiStatus(deleted.error());
    }
  }
  return WaitFor(
             [&]() -> std::optional<StatusOr<std::string>> {
               auto left = attachments_.ByIndex(kByVolumeAndNode, key);
               if (left.empty()) return std::string();
               for (const auto& va : left) {
                 if (va->status && va->status->detach_error) {
                   return InternalError(va->status->detach_error->message);
                 }
               }
               return std::nullopt;
             },
             "detachment timeout for volume " + volume_name)
      .status();
}

}  // namespace kvol::controller::attachdetach
