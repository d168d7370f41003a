// The event recorder's background writer.
#include "client/event_recorder.h"

#include <algorithm>
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
  // Each writer's thread starts with its first event: a component that raises few events keeps
  // few threads.
  for (int i = 0; i < std::max(opts_.writers, 1); ++i) {
    writers_.push_back(std::make_unique<Writer>());
  }
}

EventRecorder::~EventRecorder() {
  for (auto& w : writers_) {
    std::lock_guard lock(w->mu);
    w->stopping = true;
    w->cv.notify_all();
  }
  for (auto& w : writers_) {
    if (w->thread.joinable()) w->thread.join();
  }
}

api::Time EventRecorder::Now() const { return api::Time::FromTimePoint(clock_.Now()); }

void EventRecorder::Record(api::ObjectReference ref, std::string_view type,
                           std::string_view reason, std::string message) {
  // One writer per object: its events are written in the order they came, and repeats are
  // counted by the writer that wrote the first.
  Writer& w = *writers_[std::hash<std::string>{}(RefKey(ref)) % writers_.size()];
  std::lock_guard lock(w.mu);
  if (w.stopping) return;
  if (w.queue.size() >= opts_.max_queued) {
    log::Warn("event dropped (queue full): " + ref.kind + " " + ref.name + " " +
              std::string(reason) + ": " + message);
    return;
  }
  w.queue.push_back(Pending{std::move(ref), std::string(type), std::string(reason),
                            std::move(message), Now()});
  if (!w.thread.joinable()) {
    w.thread = std::thread([this, &w] {
      SetThreadName("events");
      Run(w);
    });
  }
  w.cv.notify_all();
}

bool EventRecorder::Flush(std::chrono::milliseconds timeout) {
  const auto deadline =
      clock_.Monotonic() + std::chrono::duration_cast<os::MonoTime::duration>(timeout);
  for (auto& w : writers_) {
    std::unique_lock lock(w->mu);
    while (!w->queue.empty() || w->busy) {
      if (clock_.WaitUntil(w->cv, lock, deadline) == std::cv_status::timeout &&
          (!w->queue.empty() || w->busy)) {
        return false;
      }
    }
  }
  return true;
}

void EventRecorder::Run(Writer& w) {
  std::unique_lock lock(w.mu);
  while (true) {
    w.cv.wait(lock, [&] { return w.stopping || !w.queue.empty(); });
    // Whatever was recorded before the recorder is destroyed is still written.
    if (w.queue.empty()) return;
    Pending p = std::move(w.queue.front());
    w.queue.pop_front();
    w.busy = true;
    lock.unlock();
    Write(w, std::move(p));
    lock.lock();
    w.busy = false;
    w.cv.notify_all();
  }
}

void EventRecorder::Write(Writer& w, Pending p) {
  const std::string ref_key = RefKey(p.ref);
  const os::MonoTime mono = clock_.Monotonic();

  // Many different messages for one object and reason: fold them into one Event.
  const std::string aggregate_key = ref_key + "\x1e" + p.type + "\x1e" + p.reason;
  Similar& sim = w.similar[aggregate_key];
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
  if (w.similar.size() > opts_.cache_size) {
    for (auto it = w.similar.begin(); it != w.similar.end();) {
      it = it->first == aggregate_key ? std::next(it) : w.similar.erase(it);
    }
  }

  // The same event again: count it on the Event already written.
  auto seen = w.written.find(key);
  if (seen != w.written.end()) {
    Written& prior = *seen->second;
    w.lru.splice(w.lru.begin(), w.lru, seen->second);
    ++prior.count;
    api::Json patch = {{"count", prior.count},
                       {"lastTimestamp", p.when.ToString()},
                       {"message", p.message}};
    auto r = events_.Patch(prior.ns, prior.name, PatchType::kStrategicMerge, api::DumpJson(patch));
    if (r.ok()) return;
    if (!api::IsNotFound(r.error())) {
      log::Warn("cannot update event " + prior.ns + "/" + prior.name + ": " + r.error().message);
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
  e.first_timestamp = seen != w.written.end() ? seen->second->first : p.when;
  e.last_timestamp = p.when;
  e.count = seen != w.written.end() ? seen->second->count : 1;
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
  if (seen != w.written.end()) {
    seen->second->ns = meta.namespace_;
    seen->second->name = meta.name;
    return;
  }
  w.lru.push_front(Written{meta.namespace_, meta.name, 1, p.when, key});
  w.written[key] = w.lru.begin();
  while (w.lru.size() > opts_.cache_size) {
    w.written.erase(w.lru.back().key);
    w.lru.pop_back();
  }
}

}  // namespace kvol::client
