#include "api/pod_status.h"

#include <algorithm>

#include "api/well_known.h"

namespace kvol::api {

bool UpdatePodCondition(PodStatus& status, PodCondition condition, const Time& now) {
  auto& conds = status.conditions;
  auto it = std::find_if(conds.begin(), conds.end(),
                         [&](const PodCondition& c) { return c.type == condition.type; });
  condition.last_transition_time = now;
  if (it == conds.end()) {
    conds.push_back(std::move(condition));
    return true;
  }
  if (it->status == condition.status) condition.last_transition_time = it->last_transition_time;
  const bool same = it->status == condition.status && it->reason == condition.reason &&
                    it->message == condition.message &&
                    it->last_probe_time == condition.last_probe_time &&
                    it->last_transition_time == condition.last_transition_time;
  *it = std::move(condition);
  return !same;
}

bool HasClaimCondition(const PersistentVolumeClaimStatus& status, std::string_view type) {
  return std::any_of(status.conditions.begin(), status.conditions.end(),
                     [&](const auto& c) { return c.type == type && c.status == "True"; });
}

void MarkClaimResizeFinished(PersistentVolumeClaimStatus& status, const Quantity& size) {
  auto& c = status.conditions;
  c.erase(std::remove_if(c.begin(), c.end(),
                         [](const auto& x) {
                           return x.type == kClaimResizing || x.type == kClaimFileSystemResizePending;
                         }),
          c.end());
  status.capacity["storage"] = size;
  status.allocated_resource_statuses.erase("storage");
}

}  // namespace kvol::api
