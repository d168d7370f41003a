// The service accounts controller, as Kubernetes runs it: every namespace that is not being
// deleted has a ServiceAccount named "default"; one deleted comes back.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "api/core.h"
#include "api/generic.h"
#include "client/client.h"
#include "client/informer.h"
#include "client/worker.h"
#include "client/workqueue.h"
#include "os/clock.h"

namespace kvol::controller::serviceaccount {

inline constexpr std::string_view kDefaultServiceAccount = "default";

struct Options {
  int workers = 1;
  os::Clock* clock = &os::RealClock();
  // The process's informers, shared with its other controllers; its own when null.
  client::SharedInformers* informers = nullptr;
};

class Controller {
 public:
  Controller(client::Client& client, Options options = {});
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();

  // One pass over namespace `ns`, as the server has it: creates its "default" ServiceAccount
  // if it is missing and the namespace is not being deleted.
  Status Sync(const std::string& ns);

 private:
  client::Client& client_;
  const Options options_;
  std::unique_ptr<client::WorkQueue> queue_;
  std::unique_ptr<client::InformerScope> informers_;
  client::Informer<api::ServiceAccount>* accounts_ = nullptr;
  client::Workers workers_;
};

}  // namespace kvol::controller::serviceaccount
