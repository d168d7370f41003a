#include "node/volume_health.h"

#include "base/log.h"
#include "base/thread.h"

namespace kvol::node {

VolumeHealthMonitor::VolumeHealthMonitor(volume::PluginManager& plugins, Volumes volumes,
                                         client::EventSink events, const os::Clock& clock,
                                         std::chrono::milliseconds period)
    : plugins_(plugins),
      volumes_(std::move(volumes)),
      events_(std::move(events)),
      clock_(clock),
      period_(period) {}

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

void VolumeHealthMonitor::CollectOnce() {
  std::map<std::string, volume::VolumeStats> now;
  for (const auto& v : volumes_()) {
    volume::VolumePlugin* plugin = plugins_.FindByName(v.plugin_name);
    volume::StatsVolumePlugin* stats = plugin ? plugin->AsStats() : nullptr;
    if (!stats) continue;
    auto got = stats->GetVolumeStats(v.dir_name, v.pod->metadata.uid, v.block);
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
    now[key] = *std::move(got);
  }
  std::lock_guard lock(mu_);
  latest_ = std::move(now);
}

std::map<std::string, volume::VolumeStats> VolumeHealthMonitor::Latest() const {
  std::lock_guard lock(mu_);
  return latest_;
}

}  // namespace kvol::node
