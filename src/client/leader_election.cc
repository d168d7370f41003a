// Leader election.
#include "client/leader_election.h"

#include "base/log.h"
#include "base/thread.h"

namespace kvol::client {

LeaderElector::LeaderElector(Resource<api::Lease>& leases, LeaderElectionConfig config,
                             os::Clock& clock)
    : leases_(leases), cfg_(std::move(config)), clock_(clock) {}

LeaderElector::~LeaderElector() { Stop(); }

void LeaderElector::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] {
    SetThreadName("leader-elect");
    Run();
  });
}

void LeaderElector::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

bool LeaderElector::IsLeader() const {
  std::lock_guard lock(mu_);
  return leading_;
}

std::string LeaderElector::Leader() const {
  std::lock_guard lock(mu_);
  return leader_;
}

bool LeaderElector::TryAcquireOrRenew() {
  const auto wall = std::chrono::duration_cast<std::chrono::microseconds>(
                        clock_.Now().time_since_epoch())
                        .count();
  const api::MicroTime now(api::Time::FromUnixSeconds(
      wall / 1'000'000, static_cast<int32_t>(wall % 1'000'000) * 1000));
  const int32_t duration = static_cast<int32_t>(cfg_.lease_duration.count());

  auto current = leases_.Get(cfg_.lease_namespace, cfg_.lease_name);
  if (!current.ok()) {
    if (!api::IsNotFound(current.error())) {
      log::Warn("leader election: cannot read lease " + cfg_.lease_namespace + "/" +
                cfg_.lease_name + ": " + current.error().message);
      return false;
    }
    api::Lease lease;
    lease.metadata.namespace_ = cfg_.lease_namespace;
    lease.metadata.name = cfg_.lease_name;
    lease.spec.holder_identity = cfg_.identity;
    lease.spec.lease_duration_seconds = duration;
    lease.spec.acquire_time = now;
    lease.spec.renew_time = now;
    lease.spec.lease_transitions = 0;
    auto created = leases_.Create(lease);
    if (!created.ok()) return false;  // another candidate created it first
    std::lock_guard lock(mu_);
    observed_ = created->spec;
    observed_at_ = clock_.Monotonic();
    leader_ = cfg_.identity;
    return true;
  }

  const api::LeaseSpec& spec = current->spec;
  const std::string holder = spec.holder_identity.value_or("");
  {
    std::lock_guard lock(mu_);
    if (!observed_ || !(*observed_ == spec)) {
      observed_ = spec;
      observed_at_ = clock_.Monotonic();
    }
    leader_ = holder;
    if (!holder.empty() && holder != cfg_.identity) {
      const auto held_for = std::chrono::seconds(spec.lease_duration_seconds.value_or(duration));
      if (observed_at_ + held_for > clock_.Monotonic()) return false;  // someone else's, live
    }
  }

  api::Lease next = *current;
  next.spec.holder_identity = cfg_.identity;
  next.spec.lease_duration_seconds = duration;
  next.spec.renew_time = now;
  if (holder != cfg_.identity) {
    next.spec.acquire_time = now;
    next.spec.lease_transitions = spec.lease_transitions.value_or(0) + 1;
  }
  auto updated = leases_.Update(next);  // carries the resourceVersion read: compare-and-swap
  if (!updated.ok()) return false;
  std::lock_guard lock(mu_);
  observed_ = updated->spec;
  observed_at_ = clock_.Monotonic();
  leader_ = cfg_.identity;
  return true;
}

void LeaderElector::SetLeading(bool leading) {
  {
    std::lock_guard lock(mu_);
    if (leading_ == leading) return;
    leading_ = leading;
  }
  log::Info(std::string("leader election: ") + cfg_.identity +
            (leading ? " now leads " : " stopped leading ") + cfg_.lease_namespace + "/" +
            cfg_.lease_name);
  if (leading && cfg_.on_started_leading) cfg_.on_started_leading();
  if (!leading && cfg_.on_stopped_leading) cfg_.on_stopped_leading();
}

void LeaderElector::Release() {
  auto current = leases_.Get(cfg_.lease_namespace, cfg_.lease_name);
  if (!current.ok() || current->spec.holder_identity.value_or("") != cfg_.identity) return;
  api::Lease next = *current;
  next.spec.holder_identity.reset();
  next.spec.lease_duration_seconds = 1;
  auto r = leases_.Update(next);
  if (!r.ok()) log::Warn("leader election: cannot release lease: " + r.error().message);
}

void LeaderElector::Run() {
  std::string last_leader;
  std::unique_lock lock(mu_);
  last_renew_ = clock_.Monotonic();
  while (!stopping_) {
    lock.unlock();
    const bool held = TryAcquireOrRenew();
    const os::MonoTime now = clock_.Monotonic();
    if (held) {
      {
        std::lock_guard l(mu_);
        last_renew_ = now;
      }
      SetLeading(true);
    } else if (IsLeader()) {
      bool expired;
      {
        std::lock_guard l(mu_);
        expired = now - last_renew_ >= cfg_.renew_deadline;
      }
      if (expired) SetLeading(false);
    }
    const std::string leader = Leader();
    if (!held && leader != last_leader && !leader.empty() && leader != cfg_.identity &&
        cfg_.on_new_leader) {
      cfg_.on_new_leader(leader);
    }
    last_leader = leader;
    lock.lock();
    const auto deadline =
        clock_.Monotonic() + std::chrono::duration_cast<os::MonoTime::duration>(cfg_.retry_period);
    while (!stopping_ && clock_.WaitUntil(cv_, lock, deadline) != std::cv_status::timeout) {
    }
  }
  lock.unlock();
  if (IsLeader()) {
    if (cfg_.release_on_stop) Release();
    SetLeading(false);
  }
}

}  // namespace kvol::client
