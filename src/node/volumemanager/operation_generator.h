// The operation generator, as kubelet's: the volume operations themselves. Each one runs on the
// operation executor (one in flight per key, with backoff after a failure), calls the volume
// plugin, marks what it did in the actual state of the world, and gives the pod kubelet's event
// when it fails. The reconciler decides which to start.
#pragma once

#include <functional>
#include <set>
#include <string>

#include "base/status.h"
#include "client/event_recorder.h"
#include "node/volumemanager/actual_state_of_world.h"
#include "node/volumemanager/reconciler.h"
#include "volume/plugin.h"
#include "volume/util/operation_executor.h"

namespace kvol::node::volumemanager {

using volume::util::ExecutorOptions;
using volume::util::OperationExecutor;

// Where an attachment is recorded: <plugin dir>/attachments/<volume name>.
std::string AttachmentRecord(volume::Host& host, std::string_view plugin,
                             std::string_view volume_name);

struct GeneratorHooks {
  // Writes the claim's new capacity once its filesystem has grown on this node (the agent's
  // claim status writer). Its error fails the expansion, which is then retried.
  std::function<Status(const DesiredVolume::FsResize&)> finish_resize;
  // Called once a pod volume is torn down: the pod's directory may go.
  std::function<void(const std::string& pod_uid)> on_torn_down;
};

class OperationGenerator final : public Operations {
 public:
  // `host`: the agent's, which the plugins in `plugins` are bound to.
  OperationGenerator(ActualStateOfWorld& actual, OperationExecutor& executor, volume::Host& host,
                     volume::PluginManager& plugins, client::EventSink events,
                     GeneratorHooks hooks);

  bool IsPending(const std::string& key) const override;
  void ForgetBackoffExcept(const std::set<std::string>& keep) override;
  void Attach(const DesiredPod& pod, const DesiredVolume& v) override;
  void VerifyAttached(const DesiredPod& pod, const DesiredVolume& v,
                      const std::string& device_path) override;
  void MountDevice(const DesiredPod& pod, const DesiredVolume& v,
                   const std::string& device_path) override;
  void SetUp(const std::string& key, const DesiredPod& pod, const DesiredVolume& v) override;
  void NodeExpand(const DesiredPod& pod, const DesiredVolume& v,
                  volume::NodeExpandOptions o) override;
  void TearDown(const std::string& key, const ActualVolume& v) override;
  void UnmountDevice(const std::string& name, const ActualDevice& d) override;
  void Detach(const std::string& name, const ActualAttachment& a) override;
  void ForgetAttachment(const std::string& name, const ActualAttachment& a) override;

 private:
  void PodEvent(const api::Pod& pod, std::string_view type, std::string_view reason,
                std::string message) const;

  ActualStateOfWorld& actual_;
  OperationExecutor& executor_;
  volume::Host& host_;
  volume::PluginManager& plugins_;
  const client::EventSink events_;
  const GeneratorHooks hooks_;
};

}  // namespace kvol::node::volumemanager
