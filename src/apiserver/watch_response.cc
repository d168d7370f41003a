// A watch's response.
#include "apiserver/watch_response.h"

#include <algorithm>

#include "apiserver/tables.h"

namespace kvol::apiserver {

using namespace std::chrono_literals;

namespace {

const char* EventTypeName(WatchEvent::Type t) {
  switch (t) {
    case WatchEvent::Type::kAdded:
      return "ADDED";
    case WatchEvent::Type::kModified:
      return "MODIFIED";
    case WatchEvent::Type::kDeleted:
      return "DELETED";
    case WatchEvent::Type::kBookmark:
      return "BOOKMARK";
  }
  return "ERROR";
}

}  // namespace

WatchResponse::WatchResponse(std::unique_ptr<EventStream> stream, Resource& res,
                             const os::Clock& clock, WatchResponseOptions opts,
                             std::function<void()> on_close)
    : stream_(std::move(stream)),
      res_(res),
      clock_(clock),
      opts_(std::move(opts)),
      on_close_(std::move(on_close)),
      deadline_(clock.Monotonic() + opts_.timeout),
      last_bookmark_(clock.Monotonic()) {}

WatchResponse::~WatchResponse() { Close(); }

void WatchResponse::Start(std::function<void()> wake) { stream_->SetNotify(std::move(wake)); }

void WatchResponse::Close() {
  std::call_once(closed_, [this] {
    stream_->Close();
    if (on_close_) on_close_();
  });
}

bool WatchResponse::Pull(std::string* out, std::chrono::milliseconds* again) {
  const bool more = Take(stream_->Next(0ms), out);
  if (!more) return false;
  const auto now = clock_.Monotonic();
  auto next = deadline_;
  if (opts_.allow_bookmarks) next = std::min(next, last_bookmark_ + opts_.bookmark_interval);
  *again = std::max(std::chrono::ceil<std::chrono::milliseconds>(next - now), 1ms);
  return true;
}

void WatchResponse::Serve(ResponseWriter& w) {
  while (!w.Stopping()) {
    std::string chunk;
    const bool more = Take(stream_->Next(500ms), &chunk);
    if (!chunk.empty() && !w.WriteChunk(chunk)) break;
    if (!more) break;
  }
  Close();
  w.EndStream();
}

bool WatchResponse::Take(StatusOr<std::vector<WatchEvent>> evs, std::string* out) {
  if (!evs.ok()) {
    if (evs.status().code() == StatusCode::kOutOfRange) {
      *out += "{\"type\":\"ERROR\",\"object\":" + Gone(evs.status().message()).ToJson() + "}\n";
    }
    return false;
  }
  const auto& k = res_.info();
  for (const auto& e : *evs) {
    last_rev_ = e.object.rev;
    std::string object;
    if (opts_.table) {
      auto j = res_.Decode(e.object);
      if (!j.ok()) continue;
      object = api::DumpJson(MakeTable(k.kind, {*j}, std::to_string(e.object.rev), "",
                                       opts_.include_object, clock_.Now(), first_table_));
      first_table_ = false;
    } else {
      object = e.object.Json();
    }
    *out += "{\"type\":\"";
    *out += EventTypeName(e.type);
    *out += "\",\"object\":";
    *out += object;
    *out += "}\n";
  }
  MaybeBookmark(out);
  return clock_.Monotonic() < deadline_;
}

// Bookmarks let a client resume from a recent revision after a quiet period: the revision the
// watch has come to, which moves with the store even when nothing matches.
void WatchResponse::MaybeBookmark(std::string* out) {
  const store::Revision progress = std::max(last_rev_, stream_->Progress());
  if (!opts_.allow_bookmarks || progress <= bookmarked_ ||
      clock_.Monotonic() - last_bookmark_ < opts_.bookmark_interval) {
    return;
  }
  const auto& k = res_.info();
  last_bookmark_ = clock_.Monotonic();
  bookmarked_ = progress;
  *out += "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"" + std::string(k.kind) +
          "\",\"apiVersion\":\"" + k.ApiVersion() + "\",\"metadata\":{\"resourceVersion\":\"" +
          std::to_string(progress) + "\"}}}\n";
}

}  // namespace kvol::apiserver
