// Small pieces of the client interface.
#include "client/client.h"

#include <map>
#include <tuple>

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

// UpdateSharedMany of objects of one kind, their status written by a second request where the
// transport cannot write both at once (a failure between leaves the object written alone).
template <class T>
std::vector<ApiOr<api::AnySharedObject>> UpdateMany(Resource<T>& r, std::vector<T> objs, bool main,
                                                    bool status) {
  std::vector<ApiOr<api::AnySharedObject>> out;
  out.reserve(objs.size());
  if constexpr (requires(T & t) { t.status; }) {
    if (main && status && !r.writes_with_status()) {
      std::vector<T> next;
      next.reserve(objs.size());
      std::vector<size_t> which;
      auto first = r.UpdateSharedMany(objs, true, false);
      for (size_t i = 0; i < first.size(); ++i) {
        out.push_back(api::ToAny(first[i]));
        if (!first[i].ok()) continue;
        T with_status = **first[i];
        with_status.status = std::move(objs[i].status);
        next.push_back(std::move(with_status));
        which.push_back(i);
      }
      auto second = r.UpdateSharedMany(std::move(next), false, true);
      for (size_t j = 0; j < second.size(); ++j) {
        out[which[j]] = api::ToAny(std::move(second[j]));
      }
      return out;
    }
  }
  for (auto& w : r.UpdateSharedMany(std::move(objs), main, status)) {
    out.push_back(api::ToAny(std::move(w)));
  }
  return out;
}

}  // namespace

std::vector<ApiOr<api::AnySharedObject>> Client::UpdateTogether(
    std::vector<api::ObjectUpdate> updates) {
  const size_t n = updates.size();
  std::vector<std::optional<ApiOr<api::AnySharedObject>>> out(n);
  auto refuse = [&](size_t i, int code, const char* reason, const std::string& why) {
    out[i] = ApiError{
        code, reason, "\"" + api::MetaOf(updates[i].object).name + "\" not updated: " + why, {}, {},
        {},   {}};
  };
  for (size_t i = 0; i < n; ++i) {
    if (updates[i].after >= static_cast<int>(i)) {
      refuse(i, 400, "BadRequest", "an update can follow only an earlier one");
    }
  }
  // In rounds: the updates whose predecessor is answered, grouped by kind and parts, each
  // group in as few requests as the transport can (Resource::UpdateSharedMany).
  for (bool pending = true; pending;) {
    pending = false;
    std::map<std::tuple<size_t, bool, bool>, std::vector<size_t>> groups;
    for (size_t i = 0; i < n; ++i) {
      if (out[i]) continue;
      const int a = updates[i].after;
      if (a >= 0 && !out[a]) {
        pending = true;
        continue;
      }
      if (a >= 0 && !out[a]->ok()) {
        refuse(i, 409, "Conflict", "the update it follows failed: " + out[a]->error().message);
        continue;
      }
      groups[{updates[i].object.index(), updates[i].main, updates[i].status}].push_back(i);
    }
    for (const auto& [key, group] : groups) {
      const auto [index, main, status] = key;
      std::visit(
          [&](auto& first) {
            using T = std::decay_t<decltype(first)>;
            std::vector<T> objs;
            objs.reserve(group.size());
            for (size_t i : group) objs.push_back(std::move(std::get<T>(updates[i].object)));
            auto written = UpdateMany(resource<T>(), std::move(objs), main, status);
            for (size_t j = 0; j < group.size(); ++j) out[group[j]] = std::move(written[j]);
          },
          updates[group.front()].object);
    }
  }
  std::vector<ApiOr<api::AnySharedObject>> answers;
  answers.reserve(n);
  for (auto& a : out) answers.push_back(*std::move(a));
  return answers;
}

}  // namespace kvol::client
