// Small pieces of the client interface.
#include "client/client.h"

namespace kvol::client {

const char* EventTypeName(EventType t) {
  switch (t) {
    case EventType::kAdded: return "ADDED";
    case EventType::kModified: return "MODIFIED";
    case EventType::kDeleted: return "DELETED";
    case EventType::kBookmark: return "BOOKMARK";
  }
  return "UNKNOWN";
}

std::string_view PatchContentType(PatchType t) {
  switch (t) {
    case PatchType::kJson: return "application/json-patch+json";
    case PatchType::kMerge: return "application/merge-patch+json";
    case PatchType::kStrategicMerge: return "application/strategic-merge-patch+json";
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

}  // namespace kvol::client
