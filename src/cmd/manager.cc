#include "cmd/manager.h"

#include "base/log.h"
#include "base/thread.h"

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
      snapshot_events_(client.resource<api::Event>(), {.component = "snapshot-controller"}) {}

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
    // started already stop as they go out of scope (each one's destructor stops it).
    auto started = [](std::string_view name, Status s) {
      if (!s.ok()) log::Error(std::string(name) + " did not start: " + s.message());
      return s.ok();
    };
    controller::pv::ControllerOptions po;
    po.workers = options_.workers;
    po.plugins = options_.plugins;
    po.informers = informers;
    auto ctrl = std::make_unique<controller::pv::Controller>(client_, SinkTo(pv_events_), po);
    if (!started("persistentvolume-controller", ctrl->Start())) return;
    auto prot = std::make_unique<controller::protection::Controller>(
        client_, controller::protection::Options{.informers = informers});
    if (!started("protection controllers", prot->Start())) return;
    controller::expand::Options eo;
    eo.plugins = options_.plugins;
    eo.informers = informers;
    auto exp =
        std::make_unique<controller::expand::Controller>(client_, SinkTo(expand_events_), eo);
    if (!started("expand controller", exp->Start())) return;
    controller::attachdetach::Options ado;
    ado.informers = informers;
    ado.plugins = options_.plugins;
    ado.reconciler = options_.attach_detach;
    auto ad = std::make_unique<controller::attachdetach::Controller>(
        client_, SinkTo(attachdetach_events_), ado);
    if (!started("attachdetach-controller", ad->Start())) return;
    auto work = std::make_unique<controller::workload::Controller>(
        client_, SinkTo(replicaset_events_), SinkTo(statefulset_events_),
        controller::workload::Options{.informers = informers});
    if (!started("workload controllers", work->Start())) return;
    auto snap = std::make_unique<controller::snapshot::Controller>(
        client_, controller::snapshot::Options{.events = SinkTo(snapshot_events_),
                                               .informers = informers});
    if (!started("snapshot-controller", snap->Start())) return;
    std::unique_ptr<scheduler::Scheduler> sched;
    if (options_.scheduler) {
      sched = std::make_unique<scheduler::Scheduler>(client_, SinkTo(scheduler_events_),
                                                     scheduler::Options{.informers = informers});
      if (!started("scheduler", sched->Start())) return;
    }
    std::lock_guard lock(mu_);
    own_informers_ = std::move(own);
    pv_ = std::move(ctrl);
    protection_ = std::move(prot);
    expand_ = std::move(exp);
    attach_detach_ = std::move(ad);
    scheduler_ = std::move(sched);
    workload_ = std::move(work);
    snapshot_ = std::move(snap);
    log::Info(
        std::string("controllers: persistentvolume-controller, pvc-protection, pv-protection, "
                    "volume_expand, attachdetach-controller, deployment, statefulset, "
                    "snapshot-controller") +
        (scheduler_ ? ", default-scheduler" : "") + " running");
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
  std::unique_ptr<controller::pv::Controller> pv;
  std::unique_ptr<controller::protection::Controller> prot;
  std::unique_ptr<controller::expand::Controller> exp;
  std::unique_ptr<controller::attachdetach::Controller> ad;
  std::unique_ptr<scheduler::Scheduler> sched;
  std::unique_ptr<controller::workload::Controller> work;
  std::unique_ptr<controller::snapshot::Controller> snap;
  {
    std::lock_guard lock(mu_);
    informers = std::move(own_informers_);
    pv = std::move(pv_);
    prot = std::move(protection_);
    exp = std::move(expand_);
    ad = std::move(attach_detach_);
    sched = std::move(scheduler_);
    work = std::move(workload_);
    snap = std::move(snapshot_);
  }
  if (snap) snap->Stop();
  if (sched) sched->Stop();
  if (work) work->Stop();
  if (ad) ad->Stop();
  if (exp) exp->Stop();
  if (prot) prot->Stop();
  if (pv) {
    pv->Stop();
    log::Info("controllers: stopped (another server leads)");
  }
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
}

}  // namespace kvol::cmd
