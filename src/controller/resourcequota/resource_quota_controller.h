// The resource quota controller, as Kubernetes runs it: every ResourceQuota's status.hard
// follows its spec.hard, and its status.used is counted again from the namespace's objects
// (api/quota.h says what each counts for) when a quota is new or its spec.hard changes, when
// an object of the kinds it watches (claims, pods, services, configMaps, secrets, replication
// controllers, quotas) goes or its usage changes in a namespace that has quotas, and every
// resync period. Quota admission in the API server charges what it admits in between (and
// new objects are not counted on their creation), so that a namespace cannot go past a quota
// while the count catches up.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "api/core.h"
#include "api/quota.h"
#include "client/client.h"
#include "client/informer.h"
#include "client/worker.h"
#include "client/workqueue.h"
#include "os/clock.h"

namespace kvol::controller::resourcequota {

struct Options {
  int workers = 1;
  // How often a namespace with quotas is counted again with nothing changing (Kubernetes'
  // --resource-quota-sync-period): what no watched event says, such as count/<resource> of
  // other kinds.
  std::chrono::milliseconds resync{std::chrono::minutes(5)};
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

  // One pass over namespace `ns`, as the server has it: each of its quotas gets status.hard
  // from spec.hard and status.used from its objects, written only when it changed.
  Status Sync(const std::string& ns);

 private:
  // Every object of namespace `ns` of the kinds `sources` names, as what it counts for.
  Status CollectItems(const std::string& ns,
                      const std::set<std::pair<std::string, std::string>>& sources,
                      std::vector<api::QuotaItem>* items);
  // Whether the quota informer has a quota in `ns`.
  bool HasQuotas(const std::string& ns);
  template <class T>
  void Watch();

  client::Client& client_;
  const Options options_;
  std::unique_ptr<client::WorkQueue> queue_;
  std::unique_ptr<client::InformerScope> informers_;
  // Waits for each watched informer's first list.
  std::vector<std::function<bool(std::chrono::milliseconds)>> synced_;
  std::mutex mu_;
  std::map<std::string, int> quotas_per_namespace_;  // from the quota informer
  client::Workers workers_;
};

}  // namespace kvol::controller::resourcequota
