// The namespace controller, as Kubernetes runs it: a namespace being deleted (Terminating) is
// emptied of everything in it, its conditions saying what remains; then the controller takes
// its "kubernetes" finalizer out of spec.finalizers and deletes it. What the objects' own
// finalizers hold (a claim a pod still uses, a pod its node agent is stopping) is waited for,
// polling at about half the time it should take.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/core.h"
#include "client/client.h"
#include "client/informer.h"
#include "client/worker.h"
#include "client/workqueue.h"
#include "os/clock.h"

namespace kvol::controller::namespace_ {

struct Options {
  int workers = 2;
  os::Clock* clock = &os::RealClock();
  // The process's informers, shared with its other controllers; its own when null.
  client::SharedInformers* informers = nullptr;
  // How long to wait before looking again at a namespace whose content is still going, at
  // most (Kubernetes waits half its estimate; a node agent usually takes less).
  std::chrono::milliseconds max_requeue = std::chrono::seconds(2);
};

class Controller {
 public:
  Controller(client::Client& client, Options options = {});
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();

  // What a pass over a namespace found: nothing more to do, or content that remains (look
  // again after `requeue`).
  struct Result {
    std::optional<std::chrono::milliseconds> requeue;
  };
  // One pass over the namespace named `name`, as read from the server.
  StatusOr<Result> Sync(const std::string& name);

 private:
  // Writes the namespace's phase and conditions when they changed; `ns` becomes the namespace
  // as written.
  Status UpdateConditions(api::Namespace& ns, std::vector<api::NamespaceCondition> conditions);

  client::Client& client_;
  const Options options_;
  std::unique_ptr<client::WorkQueue> queue_;
  std::unique_ptr<client::InformerScope> informers_;
  client::Workers workers_;
};

}  // namespace kvol::controller::namespace_
