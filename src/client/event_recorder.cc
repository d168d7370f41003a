// The event recorder's background writer.
#include "client/event_recorder.h"

#include <cstdio>

#include "base/log.h"
#include "base/thread.h"

namespace kvol::client {
namespace {

constexpr std::string_view kCombinedPrefix = "(combined from similar events): ";

std::string RefKey(const api::ObjectReference& r) {
  return r.kind + "\x1f" + r.namespace_ + "\x1f" + r.name + "\x1f" + r.uid + "\x1f" +
         r.api_version;
}

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

EventRecorder::EventRecorder(Resource<api::Event>& events, EventRecorderOptions opts,
                             os::Clock& clock)
    : events_(events), opts_(std::move(opts)), clock_(clock) {
  thread_ = std::thread([this] {
    SetThreadName("events");
    Run();
  });
}

EventRecorder::~EventRecorder() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  thread_.join();
}

api::Time EventRecorder::Now() const { return api::Time::FromTimePoint(clock_.Now()); }

void EventRecorder::Record(api::ObjectReference ref, std::string_view type,
                           std::string_view reason, std::string message) {
  std::lock_guard lock(mu_);
  if (stopping_) return;
  if (queue_.size() >= opts_.max_queued) {
    log::Warn("event dropped (queue full): " + ref.kind + " " + ref.name + " " +
              std::string(reason) + ": " + message);
    return;
  }
  queue_.push_back(Pending{std::move(ref), std::string(type), std::string(reason),
                           std::move(message), Now()});
  cv_.notify_all();
}

bool EventRecorder::Flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  const auto deadline =
      clock_.Monotonic() + std::chrono::duration_cast<os::MonoTime::duration>(timeout);
  while (!queue_.empty() || busy_) {
    if (clock_.WaitUntil(cv_, lock, deadline) == std::cv_status::timeout &&
        (!queue_.empty() || busy_)) {
      return false;
    }
  }
  return true;
}

void EventRecorder::Run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    // Whatever was recorded before the recorder is destroyed is still written.
    if (queue_.empty()) return;
    Pending p = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    Write(std::move(p));
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

void EventRecorder::Write(Pending p) {
  const std::string ref_key = RefKey(p.ref);
  const os::MonoTime mono = clock_.Monotonic();

  // Many different messages for one object and reason: fold them into one Event.
  const std::string aggregate_key = ref_key + "\x1e" + p.type + "\x1e" + p.reason;
  Similar& sim = similar_[aggregate_key];
  if (sim.messages.empty() || mono - sim.window_start > opts_.similar_window) {
    sim.messages.clear();
    sim.window_start = mono;
  }
  sim.messages[p.message]++;
  std::string key = aggregate_key + "\x1e" + p.message;
  if (static_cast<int>(sim.messages.size()) > opts_.similar_threshold) {
    p.message = std::string(kCombinedPrefix) + p.message;
    key = aggregate_key;
  }
  if (similar_.size() > opts_.cache_size) {
    for (auto it = similar_.begin(); it != similar_.end();) {
      it = it->first == aggregate_key ? std::next(it) : similar_.erase(it);
    }
  }

  // The same event again: count it on the Event already written.
  auto seen = written_.find(key);
  if (seen != written_.end()) {
    Written& w = *seen->second;
    lru_.splice(lru_.begin(), lru_, seen->second);
    ++w.count;
    api::Json patch = {{"count", w.count},
                       {"lastTimestamp", p.when.ToString()},
                       {"message", p.message}};
    auto r = events_.Patch(w.ns, w.name, PatchType::kStrategicMerge, api::DumpJson(patch));
    if (r.ok()) return;
    if (!api::IsNotFound(r.error())) {
      log::Warn("cannot update event " + w.ns + "/" + w.name + ": " + r.error().message);
      return;
    }
    // Deleted meanwhile (Events expire): write it anew.
  }

  api::Event e;
  e.metadata.namespace_ = p.ref.namespace_.empty() ? "default" : p.ref.namespace_;
  e.involved_object = p.ref;
  e.reason = p.reason;
  e.message = p.message;
  e.source.component = opts_.component;
  e.source.host = opts_.host;
  e.first_timestamp = seen != written_.end() ? seen->second->first : p.when;
  e.last_timestamp = p.when;
  e.count = seen != written_.end() ? seen->second->count : 1;
  e.type = p.type;
  e.reporting_component = opts_.component;
  e.reporting_instance = opts_.host;
  const uint64_t nanos = static_cast<uint64_t>(p.when.unix_seconds()) * 1'000'000'000ull +
                         static_cast<uint64_t>(p.when.nanos());
  ApiOr<std::shared_ptr<const api::Event>> created = ApiError{};
  for (uint64_t bump = 0; bump < 8; ++bump) {
    e.metadata.name = p.ref.name + "." + Hex(nanos + bump);
    created = events_.CreateShared(e);
    if (created.ok() || !api::IsAlreadyExists(created.error())) break;
  }
  if (!created.ok()) {
    log::Warn("cannot write event " + e.metadata.namespace_ + "/" + e.metadata.name + " (" +
              p.reason + "): " + created.error().message);
    return;
  }
  const api::ObjectMeta& meta = (*created)->metadata;
  if (seen != written_.end()) {
    seen->second->ns = meta.namespace_;
    seen->second->name = meta.name;
    return;
  }
  lru_.push_front(Written{meta.namespace_, meta.name, 1, p.when, key});
  written_[key] = lru_.begin();
  while (lru_.size() > opts_.cache_size) {
    written_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

}  // namespace kvol::client
