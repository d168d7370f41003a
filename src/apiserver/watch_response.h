// One client's watch as an HTTP response: each event as a line of Kubernetes' watch JSON (or a
// Table row), bookmarks when asked for, and the end at the watch's timeout or when the events
// stop. The server pulls it without a thread (StreamSource) when its events come from the
// watch cache; a stream that cannot say when it has news is served by Serve on the handler's
// thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "apiserver/http_server.h"
#include "apiserver/resource.h"
#include "os/clock.h"

namespace kvol::apiserver {

struct WatchResponseOptions {
  bool table = false;                       // rows of a meta.k8s.io/v1 Table
  std::string include_object = "Metadata";  // for a Table: None, Metadata or Object
  bool allow_bookmarks = false;
  std::chrono::milliseconds bookmark_interval = std::chrono::minutes(1);
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
};

class WatchResponse final : public StreamSource {
 public:
  // `on_close` runs once, when the response is over.
  WatchResponse(std::unique_ptr<EventStream> stream, Resource& res, const os::Clock& clock,
                WatchResponseOptions opts, std::function<void()> on_close = nullptr);
  ~WatchResponse() override;

  EventStream& stream() { return *stream_; }

  void Start(std::function<void()> wake) override;
  bool Pull(std::string* out, std::chrono::milliseconds* again) override;
  void Close() override;

  // Writes the response on this thread, waiting for events, until it is over or the writer
  // stops (for streams that do not notify). The stream was started with StartStream.
  void Serve(ResponseWriter& w);

 private:
  // Appends what `evs` says to `out`; false once the response is over.
  bool Take(StatusOr<std::vector<WatchEvent>> evs, std::string* out);
  // Appends a bookmark when one is due.
  void MaybeBookmark(std::string* out);

  std::unique_ptr<EventStream> stream_;
  Resource& res_;
  const os::Clock& clock_;
  const WatchResponseOptions opts_;
  std::function<void()> on_close_;
  std::once_flag closed_;
  const os::MonoTime deadline_;
  bool first_table_ = true;
  store::Revision last_rev_ = 0;
  store::Revision bookmarked_ = 0;
  os::MonoTime last_bookmark_;
};

}  // namespace kvol::apiserver
