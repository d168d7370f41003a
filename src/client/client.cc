// Small pieces of the client interface.
#include "client/client.h"

namespace kvol::client {

const char* EventTypeName(EventType t) {
  switch (t) {
    case EventType::kAdded:
      return "ADDED";
    case EventType::kModified:
      return "MODIFIED";
    case EventType::kDeleted:
      return "DELETED";
    case EventType::kBookmark:
      return "BOOKMARK";
  }
  return "UNKNOWN";
}

std::string_view PatchContentType(PatchType t) {
  switch (t) {
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
  }
  return "application/merge-patch+json";
}

ApiError WatchClosed(std::string message) {
  ApiError e;
  e.code = 0;
  e.reason = "WatchClosed";
  e.message = std::move(message);
  return e;
}

namespace {

// UpdateShared of one object of kind T, its status written by a second request where the
// transport cannot write both at once.
template <class T>
ApiOr<api::AnySharedObject> UpdateOne(Resource<T>& r, T obj, bool main, bool status) {
  if constexpr (requires { obj.status; }) {
    if (main && status && !r.writes_with_status()) {
      auto first = r.UpdateShared(obj, true, false);
      if (!first.ok()) return first.error();
      T next = **first;
      next.status = std::move(obj.status);
      obj = std::move(next);
      main = false;
    }
  }
  auto written = r.UpdateShared(std::move(obj), main, status);
  if (!written.ok()) return written.error();
  return api::AnySharedObject(*std::move(written));
}

}  // namespace

std::vector<ApiOr<api::AnySharedObject>> Client::UpdateTogether(
    std::vector<api::ObjectUpdate> updates) {
  std::vector<ApiOr<api::AnySharedObject>> out;
  out.reserve(updates.size());
  for (size_t i = 0; i < updates.size(); ++i) {
    api::ObjectUpdate& u = updates[i];
    const int a = u.after;
    if (a >= static_cast<int>(i) || (a >= 0 && !out[a].ok())) {
      const std::string why = a >= static_cast<int>(i)
                                  ? "an update can follow only an earlier one"
                                  : "the update it follows failed: " + out[a].error().message;
      out.push_back(ApiError{a >= static_cast<int>(i) ? 400 : 409,
                             a >= static_cast<int>(i) ? "BadRequest" : "Conflict",
                             "\"" + api::MetaOf(u.object).name + "\" not updated: " + why,
                             {},
                             {},
                             {},
                             {}});
      continue;
    }
    out.push_back(std::visit(
        [&](auto& obj) {
          using T = std::decay_t<decltype(obj)>;
          return UpdateOne(resource<T>(), std::move(obj), u.main, u.status);
        },
        u.object));
  }
  return out;
}

}  // namespace kvol::client
