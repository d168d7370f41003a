// Where a controller's events go: an EventRecorder in a server, a list in tests.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "api/meta.h"
#include "client/event_recorder.h"

namespace kvol::controller {

using EventSink = std::function<void(const api::ObjectReference& about, std::string_view type,
                                     std::string_view reason, std::string message)>;

// An EventSink that records through `recorder`, which must outlive it.
inline EventSink SinkTo(client::EventRecorder& recorder) {
  return [&recorder](const api::ObjectReference& ref, std::string_view type, std::string_view reason,
                     std::string message) { recorder.Record(ref, type, reason, std::move(message)); };
}

}  // namespace kvol::controller
