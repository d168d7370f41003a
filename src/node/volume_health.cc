#include "node/volume_health.h"

#include "api/volume_sources.h"
#include "base/log.h"
#include "base/thread.h"

namespace kvol::node {

VolumeHealthMonitor::VolumeHealthMonitor(volume::PluginManager& plugins, Volumes volumes,
                                         client::EventSink events, const os::Clock& clock,
                                         std::chrono::milliseconds period, PathStats path_stats)
    : plugins_(plugins),
      volumes_(std::move(volumes)),
      events_(std::move(events)),
      clock_(clock),
      period_(period),
      path_stats_(std::move(path_stats)) {}

VolumeHealthMonitor::~VolumeHealthMonitor() { Stop(); }

void VolumeHealthMonitor::Start() {
  thread_ = std::thread([this] {
    SetThreadName("volume-health");
    Loop();
  });
}

void VolumeHealthMonitor::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void VolumeHealthMonitor::Loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const os::MonoTime next = clock_.Monotonic() + period_;
    while (!stopping_ && clock_.Monotonic() < next) clock_.WaitUntil(cv_, lock, next);
    if (stopping_) return;
    lock.unlock();
    CollectOnce();
    lock.lock();
  }
}

namespace {

// The claim a pod's volume comes from, or "".
std::string ClaimOf(const api::Pod& pod, const std::string& volume) {
  for (const auto& v : pod.spec.volumes) {
    if (v.name == volume) return api::ClaimNameOf(pod, v).value_or("");
  }
  return "";
}

}  // namespace

void VolumeHealthMonitor::CollectOnce() {
  std::map<std::string, volume::VolumeStats> now;
  std::map<std::pair<std::string, std::string>, volume::VolumeStats> by_claim;
  for (const auto& v : volumes_()) {
    volume::VolumePlugin* plugin = plugins_.FindByName(v.plugin_name);
    volume::StatsVolumePlugin* stats = plugin ? plugin->AsStats() : nullptr;
    StatusOr<volume::VolumeStats> got = UnimplementedError("no stats");
    if (stats) got = stats->GetVolumeStats(v.dir_name, v.pod->metadata.uid, v.block);
    if (!got.ok() && got.status().code() == StatusCode::kUnimplemented && path_stats_ && !v.block &&
        !v.path.empty()) {
      got = path_stats_(v.path);
    }
    if (!got.ok()) {
      if (got.status().code() != StatusCode::kUnimplemented) {
        log::Warn("volume stats of " + v.dir_name + " (pod " + v.pod->metadata.uid +
                  "): " + got.status().message());
      }
      continue;
    }
    const std::string key = v.pod->metadata.uid + "/" + v.outer_name;
    std::optional<volume::VolumeStats> before;
    {
      std::lock_guard lock(mu_);
      if (auto it = latest_.find(key); it != latest_.end()) before = it->second;
    }
    const bool abnormal = got->abnormal.value_or(false);
    const bool was = before && before->abnormal.value_or(false) && before->message == got->message;
    if (abnormal && !was && events_) {
      events_(client::ReferenceTo(*v.pod), "Warning", "VolumeConditionAbnormal",
              "Volume " + v.outer_name + ": " + got->message);
    }
    if (const std::string claim = ClaimOf(*v.pod, v.outer_name); !claim.empty()) {
      by_claim[{v.pod->metadata.namespace_, claim}] = *got;
    }
    now[key] = *std::move(got);
  }
  std::lock_guard lock(mu_);
  latest_ = std::move(now);
  by_claim_ = std::move(by_claim);
}

std::map<std::pair<std::string, std::string>, volume::VolumeStats>
VolumeHealthMonitor::LatestByClaim() const {
  std::lock_guard lock(mu_);
  return by_claim_;
}

std::map<std::string, volume::VolumeStats> VolumeHealthMonitor::Latest() const {
  std::lock_guard lock(mu_);
  return latest_;
}

}  // namespace kvol::node
