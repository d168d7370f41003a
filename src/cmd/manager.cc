#include "cmd/manager.h"

#include "base/log.h"
#include "base/thread.h"
#include "controller/resourcequota/resource_quota_controller.h"

namespace kvol::cmd {

controller::attachdetach::ReconcilerOptions AttachDetachReconcilerOptions(
    const AttachDetachOptions& o) {
  return {.max_wait_for_unmount = o.max_wait_for_unmount,
          .force_detach_on_timeout = !o.disable_force_detach_on_timeout};
}

Manager::Manager(client::Client& client, ManagerOptions options)
    : client_(client),
      options_(std::move(options)),
      pv_events_(client.resource<api::Event>(), {.component = "persistentvolume-controller"}),
      expand_events_(client.resource<api::Event>(), {.component = "volume_expand"}),
      attachdetach_events_(client.resource<api::Event>(), {.component = "attachdetach-controller"}),
      scheduler_events_(client.resource<api::Event>(), {.component = "default-scheduler"}),
      replicaset_events_(client.resource<api::Event>(), {.component = "replicaset-controller"}),
      statefulset_events_(client.resource<api::Event>(), {.component = "statefulset-controller"}),
      snapshot_events_(client.resource<api::Event>(), {.component = "snapshot-controller"}),
      ephemeral_events_(client.resource<api::Event>(), {.component = "ephemeral_volume"}) {}

Manager::~Manager() { Stop(); }

void Manager::Start() {
  client::LeaderElectionConfig cfg;
  cfg.lease_name = "kvol-controller-manager";
  cfg.identity = options_.identity;
  cfg.on_started_leading = [this] { Lead(); };
  cfg.on_stopped_leading = [this] { Follow(); };
  elector_ = std::make_unique<client::LeaderElector>(client_.resource<api::Lease>(), cfg);
  elector_->Start();
}

void Manager::Lead() {
  std::thread previous;
  {
    std::lock_guard lock(mu_);
    previous = std::move(starter_);
  }
  if (previous.joinable()) previous.join();
  std::lock_guard lock(mu_);
  // Starting waits for caches to fill: off the elector's thread, which must keep renewing.
  starter_ = std::thread([this] {
    SetThreadName("ctrl-start");
    // One informer per kind for all of them: the process's, or the manager's own for this term
    // (destroyed after the controllers, which remove their handlers when they stop).
    std::unique_ptr<client::SharedInformers> own;
    client::SharedInformers* informers = options_.informers;
    if (informers == nullptr) {
      own = std::make_unique<client::SharedInformers>(client_);
      informers = own.get();
    }
    // A controller that does not start is logged and the term goes without controllers; those
    // started already stop as they go out of scope (each one's destructor stops it), newest
    // first.
    struct Started {
      std::vector<std::shared_ptr<void>> running;
      std::vector<std::string> names;
      ~Started() {
        while (!running.empty()) running.pop_back();
      }
    } started;
    auto start = [&started](std::string name, auto controller) {
      Status s = controller->Start();
      if (!s.ok()) {
        log::Error(name + " did not start: " + s.message());
        return false;
      }
      started.running.push_back(std::shared_ptr<void>(std::move(controller)));
      started.names.push_back(std::move(name));
      return true;
    };
    controller::pv::ControllerOptions po;
    po.workers = options_.workers;
    po.plugins = options_.plugins;
    po.informers = informers;
    if (!start("persistentvolume-controller",
               std::make_unique<controller::pv::Controller>(client_, SinkTo(pv_events_), po))) {
      return;
    }
    if (!start("pvc-protection, pv-protection",
               std::make_unique<controller::protection::Controller>(
                   client_, controller::protection::Options{.informers = informers}))) {
      return;
    }
    if (!start("namespace-controller",
               std::make_unique<controller::namespace_::Controller>(
                   client_, controller::namespace_::Options{.informers = informers}))) {
      return;
    }
    if (!start("serviceaccount-controller",
               std::make_unique<controller::serviceaccount::Controller>(
                   client_, controller::serviceaccount::Options{.informers = informers}))) {
      return;
    }
    if (options_.root_ca.empty()) {
      log::Warn("root-ca-cert-publisher: no CA bundle to publish; not run");
    } else if (!start("root-ca-cert-publisher",
                      std::make_unique<controller::rootca::Publisher>(
                          client_, controller::rootca::Options{.ca_bundle = options_.root_ca,
                                                               .informers = informers}))) {
      return;
    }
    if (!start("resourcequota-controller",
               std::make_unique<controller::resourcequota::Controller>(
                   client_, controller::resourcequota::Options{.informers = informers}))) {
      return;
    }
    if (!start("garbagecollector",
               std::make_unique<controller::garbagecollector::Collector>(
                   client_, controller::garbagecollector::Options{.informers = informers}))) {
      return;
    }
    if (!start("ephemeral-volume-controller",
               std::make_unique<controller::ephemeral::Controller>(
                   client_, controller::ephemeral::Options{.events = SinkTo(ephemeral_events_),
                                                           .informers = informers}))) {
      return;
    }
    controller::expand::Options eo;
    eo.plugins = options_.plugins;
    eo.informers = informers;
    if (!start("volume_expand", std::make_unique<controller::expand::Controller>(
                                    client_, SinkTo(expand_events_), eo))) {
      return;
    }
    controller::attachdetach::Options ado;
    ado.informers = informers;
    ado.plugins = options_.plugins;
    ado.reconciler = options_.attach_detach;
    if (!start("attachdetach-controller", std::make_unique<controller::attachdetach::Controller>(
                                              client_, SinkTo(attachdetach_events_), ado))) {
      return;
    }
    if (!start("deployment, statefulset",
               std::make_unique<controller::workload::Controller>(
                   client_, SinkTo(replicaset_events_), SinkTo(statefulset_events_),
                   controller::workload::Options{.informers = informers}))) {
      return;
    }
    if (!start("snapshot-controller",
               std::make_unique<controller::snapshot::Controller>(
                   client_, controller::snapshot::Options{.events = SinkTo(snapshot_events_),
                                                          .informers = informers}))) {
      return;
    }
    if (options_.scheduler &&
        !start("default-scheduler",
               std::make_unique<scheduler::Scheduler>(
                   client_, SinkTo(scheduler_events_),
                   scheduler::Options{.informers = informers}))) {
      return;
    }
    std::string names;
    for (const auto& n : started.names) names += (names.empty() ? "" : ", ") + n;
    std::lock_guard lock(mu_);
    own_informers_ = std::move(own);
    running_ = std::move(started.running);
    log::Info("controllers: " + names + " running");
  });
}

void Manager::Follow() {
  std::thread starter;
  {
    std::lock_guard lock(mu_);
    starter = std::move(starter_);
  }
  if (starter.joinable()) starter.join();
  std::unique_ptr<client::SharedInformers> informers;  // outlives the controllers
  std::vector<std::shared_ptr<void>> running;
  {
    std::lock_guard lock(mu_);
    informers = std::move(own_informers_);
    running = std::move(running_);
  }
  const bool was_running = !running.empty();
  while (!running.empty()) running.pop_back();  // newest first
  if (was_running) log::Info("controllers: stopped (another server leads)");
  if (informers) informers->Stop();
}

void Manager::Stop() {
  if (elector_) elector_->Stop();  // releases the Lease
  elector_.reset();
  Follow();
  pv_events_.Flush(std::chrono::seconds(2));
  expand_events_.Flush(std::chrono::seconds(2));
  attachdetach_events_.Flush(std::chrono::seconds(2));
  scheduler_events_.Flush(std::chrono::seconds(2));
  replicaset_events_.Flush(std::chrono::seconds(2));
  statefulset_events_.Flush(std::chrono::seconds(2));
  snapshot_events_.Flush(std::chrono::seconds(2));
  ephemeral_events_.Flush(std::chrono::seconds(2));
}

}  // namespace kvol::cmd
