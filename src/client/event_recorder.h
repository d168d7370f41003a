// EventRecorder: writes core/v1 Events about objects, as client-go's recorder does, so that
// `kubectl describe` shows them:
// - an event identical to a recent one (same object, type, reason, message, source) is not
//   written again: the existing Event's count goes up and its lastTimestamp moves;
// - when more than 10 events with the same object, type and reason but different messages
//   arrive within 10 minutes, further ones are folded into one Event whose message starts
//   "(combined from similar events): ".
// Recording never blocks the caller: events are written by background writers, each object's
// by one of them in the order recorded (a bounded queue each; when it is full new events are
// dropped with a log line). Flush waits for the writes.
//
//   recorder.Event(pvc, "Warning", "ProvisioningFailed", "storageclass.storage.k8s.io \"x\" not found");
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api/core.h"
#include "client/client.h"
#include "os/clock.h"

namespace kvol::client {

struct EventRecorderOptions {
  std::string component;  // source.component and reportingComponent, e.g. "persistentvolume-controller"
  std::string host;       // source.host, for node agents
  size_t max_queued = 1000;  // per writer
  size_t cache_size = 4096;  // recent events remembered for counting repeats, per writer
  // Events written at once: each waits for the store to sync it, so one writer alone keeps
  // up with a few hundred a second.
  int writers = 4;
  int similar_threshold = 10;
  std::chrono::seconds similar_window{600};
};

// The ObjectReference an Event uses for `obj`.
template <class T>
api::ObjectReference ReferenceTo(const T& obj) {
  const auto& k = api::KindInfoOf<T>();
  api::ObjectReference r;
  r.kind = std::string(k.kind);
  r.api_version = k.ApiVersion();
  r.namespace_ = obj.metadata.namespace_;
  r.name = obj.metadata.name;
  r.uid = obj.metadata.uid;
  r.resource_version = obj.metadata.resource_version;
  return r;
}

class EventRecorder {
 public:
  EventRecorder(Resource<api::Event>& events, EventRecorderOptions opts,
                os::Clock& clock = os::RealClock());
  ~EventRecorder();
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // `type` is "Normal" or "Warning"; `reason` a short CamelCase word.
  template <class T>
  void Event(const T& obj, std::string_view type, std::string_view reason, std::string message) {
    Record(ReferenceTo(obj), type, reason, std::move(message));
  }
  void Record(api::ObjectReference ref, std::string_view type, std::string_view reason,
              std::string message);

  // Waits until everything recorded so far is written; false if `timeout` passes first.
  bool Flush(std::chrono::milliseconds timeout);

 private:
  struct Pending {
    api::ObjectReference ref;
    std::string type;
    std::string reason;
    std::string message;
    api::Time when;
  };
  struct Written {
    std::string ns;
    std::string name;  // the Event object's name
    int32_t count = 0;
    api::Time first;
    std::string key;
  };
  struct Similar {
    std::unordered_map<std::string, int> messages;  // distinct messages seen in the window
    os::MonoTime window_start;
  };

  // One background writer: its queue, and what it remembers of the events it wrote.
  struct Writer {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Pending> queue;
    bool busy = false;
    bool stopping = false;

    // Its thread only.
    std::list<Written> lru;  // most recent first
    std::unordered_map<std::string, std::list<Written>::iterator> written;
    std::unordered_map<std::string, Similar> similar;

    std::thread thread;
  };

  void Run(Writer& w);
  void Write(Writer& w, Pending p);
  api::Time Now() const;

  Resource<api::Event>& events_;
  const EventRecorderOptions opts_;
  os::Clock& clock_;
  std::vector<std::unique_ptr<Writer>> writers_;  // an object's events go to one of them
};

// Where a component's events go: an EventRecorder in a server, a list in tests.
using EventSink = std::function<void(const api::ObjectReference& about, std::string_view type,
                                     std::string_view reason, std::string message)>;

// An EventSink that records through `recorder`, which must outlive it.
inline EventSink SinkTo(EventRecorder& recorder) {
  return [&recorder](const api::ObjectReference& ref, std::string_view type, std::string_view reason,
                     std::string message) { recorder.Record(ref, type, reason, std::move(message)); };
}

}  // namespace kvol::client
