#include "controller/expand/resize_status.h"

#include <algorithm>

#include "api/api_error.h"
#include "api/pod_status.h"
#include "api/well_known.h"
#include "client/worker.h"

namespace kvol::controller::expand {
namespace {

constexpr std::string_view kStorage = "storage";

// Mutate's answer as a Status: a claim or volume that is gone needs nothing more.
template <class T>
Status Written(const client::ApiOr<T>& r) {
  if (r.ok() || api::IsNotFound(r.error())) return OkStatus();
  return client::ApiStatus(r.error());
}

}  // namespace

bool ClaimWantsMore(const api::PersistentVolumeClaim& claim) {
  if (claim.status.phase != "Bound" || claim.spec.volume_name.empty() ||
      claim.metadata.deletion_timestamp) {
    return false;
  }
  auto requested = claim.spec.resources.requests.find(std::string(kStorage));
  if (requested == claim.spec.resources.requests.end()) return false;
  auto capacity = claim.status.capacity.find(std::string(kStorage));
  return capacity == claim.status.capacity.end() || capacity->second < requested->second;
}

void SetResizeCondition(api::PersistentVolumeClaimStatus& st, std::string_view type,
                        const api::Time& now, std::string message) {
  auto& c = st.conditions;
  const bool had = api::HasClaimCondition(st, type);
  c.erase(std::remove_if(c.begin(), c.end(),
                         [&](const auto& x) {
                           const bool resize = x.type == api::kClaimResizing ||
                                               x.type == api::kClaimFileSystemResizePending;
                           return resize && x.type != type;
                         }),
          c.end());
  if (type.empty() || had) return;
  api::PersistentVolumeClaimCondition cond;
  cond.type = std::string(type);
  cond.status = "True";
  cond.last_transition_time = now;
  cond.message = std::move(message);
  c.push_back(std::move(cond));
}

StatusOr<bool> MarkResizeInProgress(client::Client& c, const api::PersistentVolumeClaim& claim,
                                    const api::Quantity& requested, const api::Time& now) {
  bool proceed = false;
  auto marked = client::Mutate<api::PersistentVolumeClaim>(
      c.resource<api::PersistentVolumeClaim>(), claim.metadata.namespace_, claim.metadata.name,
      [&](api::PersistentVolumeClaim& x) {
        proceed = false;
        if (x.metadata.uid != claim.metadata.uid || !ClaimWantsMore(x)) return false;
        auto allocated = x.status.allocated_resources.find(std::string(kStorage));
        const bool allocated_now =
            allocated != x.status.allocated_resources.end() && allocated->second == requested;
        if (allocated_now &&
            api::HasClaimCondition(x.status, api::kClaimFileSystemResizePending)) {
          return false;  // the node's turn already
        }
        proceed = true;
        if (allocated_now && api::HasClaimCondition(x.status, api::kClaimResizing)) return false;
        SetResizeCondition(x.status, api::kClaimResizing, now);
        x.status.allocated_resources[std::string(kStorage)] = requested;
        x.status.allocated_resource_statuses[std::string(kStorage)] =
            "ControllerResizeInProgress";
        return true;
      },
      /*status=*/true);
  if (!marked.ok()) {
    if (api::IsNotFound(marked.error())) return false;
    return client::ApiStatus(marked.error());
  }
  return proceed;
}

Status SetVolumeCapacity(client::Client& c, const api::PersistentVolume& pv,
                         const api::Quantity& size) {
  return Written(client::Mutate<api::PersistentVolume>(
      c.resource<api::PersistentVolume>(), "", pv.metadata.name, [&](api::PersistentVolume& v) {
        if (v.metadata.uid != pv.metadata.uid) return false;
        auto have = v.spec.capacity.find(std::string(kStorage));
        if (have != v.spec.capacity.end() && !(have->second < size)) return false;
        v.spec.capacity[std::string(kStorage)] = size;
        return true;
      }));
}

StatusOr<bool> MarkFileSystemResizePending(client::Client& c,
                                           const api::PersistentVolumeClaim& claim,
                                           const api::Time& now) {
  bool set = false;
  KVOL_RETURN_IF_ERROR(Written(client::Mutate<api::PersistentVolumeClaim>(
      c.resource<api::PersistentVolumeClaim>(), claim.metadata.namespace_, claim.metadata.name,
      [&](api::PersistentVolumeClaim& x) {
        set = false;
        if (x.metadata.uid != claim.metadata.uid || !ClaimWantsMore(x) ||
            api::HasClaimCondition(x.status, api::kClaimFileSystemResizePending)) {
          return false;
        }
        SetResizeCondition(x.status, api::kClaimFileSystemResizePending, now,
                           std::string(kFileSystemResizePendingMessage));
        x.status.allocated_resource_statuses[std::string(kStorage)] = "NodeResizePending";
        set = true;
        return true;
      },
      /*status=*/true)));
  return set;
}

Status MarkResizeFinished(client::Client& c, const api::PersistentVolumeClaim& claim,
                          const api::Quantity& size) {
  return Written(client::Mutate<api::PersistentVolumeClaim>(
      c.resource<api::PersistentVolumeClaim>(), claim.metadata.namespace_, claim.metadata.name,
      [&](api::PersistentVolumeClaim& x) {
        if (x.metadata.uid != claim.metadata.uid) return false;
        api::MarkClaimResizeFinished(x.status, size);
        return true;
      },
      /*status=*/true));
}

}  // namespace kvol::controller::expand
