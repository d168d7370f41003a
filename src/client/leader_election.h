// Leader election on a coordination.k8s.io/v1 Lease, with client-go's rules, so that several
// `kvol server` processes sharing one etcd run each controller once:
// - a candidate takes the Lease when it does not exist, is free (no holder), or its holder has
//   not renewed it for leaseDurationSeconds, as observed on the candidate's own monotonic clock
//   (no trust in other machines' wall clocks);
// - the leader renews every retry_period; if it cannot renew for renew_deadline it stops
//   leading (on_stopped_leading) and becomes a candidate again;
// - every write is a compare-and-swap on the Lease's resourceVersion, so two candidates never
//   both succeed;
// - Stop releases a held Lease (holder cleared) so a successor need not wait for it to expire.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "api/storage.h"
#include "client/client.h"
#include "os/clock.h"

namespace kvol::client {

struct LeaderElectionConfig {
  std::string lease_namespace = "kube-system";
  std::string lease_name;
  std::string identity;  // unique per candidate, e.g. hostname + "_" + a random suffix
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_deadline{10};
  std::chrono::seconds retry_period{2};
  bool release_on_stop = true;
  // Called on the elector's thread; they should return quickly.
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  std::function<void(const std::string& leader)> on_new_leader;  // someone else leads now
};

class LeaderElector {
 public:
  LeaderElector(Resource<api::Lease>& leases, LeaderElectionConfig config,
                os::Clock& clock = os::RealClock());
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  void Start();
  void Stop();

  bool IsLeader() const;
  std::string Leader() const;  // the holder last observed ("" if none)

  // One attempt to take or renew the Lease; true if this candidate holds it afterwards.
  // Start runs this every retry_period; tests may call it directly.
  bool TryAcquireOrRenew();

 private:
  void Run();
  void Release();
  void SetLeading(bool leading);

  Resource<api::Lease>& leases_;
  const LeaderElectionConfig cfg_;
  os::Clock& clock_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool leading_ = false;
  std::string leader_;
  // What was last seen of the Lease, and when (on the monotonic clock).
  std::optional<api::LeaseSpec> observed_;
  os::MonoTime observed_at_{};
  os::MonoTime last_renew_{};
  std::thread thread_;
};

}  // namespace kvol::client
