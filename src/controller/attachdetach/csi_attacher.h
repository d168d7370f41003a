// The attach/detach controller's attacher for CSI volumes, as kubelet's csi plugin attaches
// them for kube-controller-manager: a VolumeAttachment per volume and node (named
// csi-<sha256(handle+driver+node)>), which the driver's attacher (kvol's built-in one on the
// node, or an external-attacher) serves. Attach creates it and waits for status.attached;
// Detach deletes it and waits until it is gone. A driver whose CSIDriver says attachRequired:
// false is not attached at all.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

#include "api/storage.h"
#include "client/client.h"
#include "client/informer.h"
#include "controller/attachdetach/attacher.h"
#include "os/clock.h"

namespace kvol::controller::attachdetach {

inline constexpr std::string_view kCsiPluginName = "kubernetes.io/csi";

struct CsiAttacherOptions {
  const os::Clock* clock = &os::RealClock();
  // How long Attach waits for status.attached and Detach for the attachment to go.
  std::chrono::milliseconds timeout{std::chrono::minutes(2)};
};

class CsiAttacher final : public Attacher {
 public:
  // `attachments` is the controller's informer of VolumeAttachments, whose changes it passes
  // on through Changed(); `driver(name)` is the CSIDriver object, nullptr when there is none.
  CsiAttacher(client::Client& client, client::Informer<api::VolumeAttachment>& attachments,
              std::function<std::shared_ptr<const api::CSIDriver>(const std::string& name)> driver,
              CsiAttacherOptions options = {});

  // A VolumeAttachment changed: waiting operations look again. Never blocks.
  void Changed();
  // Waiting operations give up (Unavailable), and those that start from now on too.
  void Cancel();

  std::string_view PluginName() const override { return kCsiPluginName; }
  bool NeedsAttach(const volume::Spec& spec) override;
  StatusOr<std::string> Attach(const volume::Spec& spec, const std::string& node) override;
  Status Detach(const std::string& volume_name, const std::string& node) override;

 private:
  // Waits until `done` answers something other than nullopt, or until the timeout.
  StatusOr<std::string> WaitFor(const std::function<std::optional<StatusOr<std::string>>()>& done,
                                const std::string& timeout_message);

  client::Client& client_;
  client::Informer<api::VolumeAttachment>& attachments_;
  const std::function<std::shared_ptr<const api::CSIDriver>(const std::string&)> driver_;
  const CsiAttacherOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;  // guarded by mu_: bumped by Changed
  bool cancelled_ = false;   // guarded by mu_
};

}  // namespace kvol::controller::attachdetach
