// The root CA publisher, as kube-controller-manager runs it: every namespace that is not being
// deleted has a ConfigMap kube-root-ca.crt whose "ca.crt" is the CA bundle that verifies the API
// server, which pods read through their kube-api-access-* volume. One edited or deleted is put
// back.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "api/core.h"
#include "client/client.h"
#include "client/informer.h"
#include "client/worker.h"
#include "client/workqueue.h"
#include "os/clock.h"

namespace kvol::controller::rootca {

// The ConfigMap's kubernetes.io/description annotation.
inline constexpr std::string_view kDescriptionAnnotation = "kubernetes.io/description";
inline constexpr std::string_view kDescription =
    "The CA bundle that verifies the API server, for clients in pods; kept in every namespace by "
    "the root CA publisher.";

struct Options {
  std::string ca_bundle;  // PEM
  int workers = 1;
  os::Clock* clock = &os::RealClock();
  // The process's informers, shared with its other controllers; its own when null.
  client::SharedInformers* informers = nullptr;
};

class Publisher {
 public:
  Publisher(client::Client& client, Options options);
  ~Publisher();
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(60));
  void Stop();

  // One pass over namespace `ns`, as the server has it: creates its kube-root-ca.crt, or puts
  // back its data and description, unless the namespace is gone or being deleted.
  Status Sync(const std::string& ns);

 private:
  client::Client& client_;
  const Options options_;
  std::unique_ptr<client::WorkQueue> queue_;
  std::unique_ptr<client::InformerScope> informers_;
  client::Informer<api::ConfigMap>* config_maps_ = nullptr;
  client::Workers workers_;
};

}  // namespace kvol::controller::rootca
