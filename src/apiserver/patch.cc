// Patch application. JSON patch and merge patch come from nlohmann::json (exceptions are caught
// here); strategic merge is kvol's, driven by a table of Kubernetes' list merge keys.
#include "apiserver/patch.h"

#include <algorithm>
#include <string>
#include <vector>

namespace kvol::apiserver {
namespace {

using api::Json;

struct ListStrategy {
  bool merge = false;       // merge (true) or replace (false) the list
  std::string key;          // merge key of a list of objects; empty for a list of primitives
};

bool Contains(const std::vector<std::string>& path, std::string_view name) {
  return std::find(path.begin(), path.end(), name) != path.end();
}

// Kubernetes' patchStrategy/patchMergeKey struct tags for the lists storage objects carry.
ListStrategy Lookup(const std::vector<std::string>& path) {
  if (path.empty()) return {};
  const std::string& f = path.back();
  const std::string parent = path.size() >= 2 ? path[path.size() - 2] : "";
  if (parent == "metadata") {
    if (f == "finalizers") return {true, ""};
    if (f == "ownerReferences") return {true, "uid"};
    return {};
  }
  if (f == "conditions") return {true, "type"};
  if (f == "containers" || f == "initContainers" || f == "ephemeralContainers" ||
      f == "imagePullSecrets" || f == "resourceClaims" || f == "schedulingGates") {
    return {true, "name"};
  }
  if (f == "volumes" && parent == "spec") return {true, "name"};
  if (f == "env") return {true, "name"};
  if (f == "volumeMounts") return {true, "mountPath"};
  if (f == "volumeDevices") return {true, "devicePath"};
  if (f == "resizePolicy") return {true, "resourceName"};
  if (f == "ports") {
    return Contains(path, "containers") || Contains(path, "initContainers")
               ? ListStrategy{true, "containerPort"}
               : ListStrategy{true, "port"};
  }
  if (f == "hostAliases" || f == "podIPs" || f == "hostIPs") return {true, "ip"};
  if (f == "topologySpreadConstraints") return {true, "topologyKey"};
  if (f == "addresses" && parent == "status") return {true, "type"};
  return {};
}

constexpr std::string_view kPatch = "$patch";
constexpr std::string_view kRetainKeys = "$retainKeys";
constexpr std::string_view kSetOrder = "$setElementOrder/";
constexpr std::string_view kDeleteFromPrimitive = "$deleteFromPrimitiveList/";

ApiOr<Json> MergeMap(const Json& original, const Json& patch, std::vector<std::string>& path);

ApiOr<Json> MergeList(const Json& original, const Json& patch, const ListStrategy& s,
                      std::vector<std::string>& path) {
  if (!s.merge) return patch;
  // An element {"$patch": "replace"} replaces the whole list with the other elements.
  for (const auto& e : patch) {
    if (e.is_object() && e.contains(kPatch) && e[kPatch] == "replace") {
      Json out = Json::array();
      for (const auto& x : patch) {
        if (!(x.is_object() && x.contains(kPatch))) out.push_back(x);
      }
      return out;
    }
  }
  Json out = original.is_array() ? original : Json::array();
  if (s.key.empty()) {
    // A set of primitives: add what is new.
    for (const auto& v : patch) {
      if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    }
    return out;
  }
  for (const auto& e : patch) {
    if (!e.is_object() || !e.contains(s.key)) {
      return BadRequest("map: " + api::DumpJson(e) + " does not contain declared merge key: " + s.key);
    }
    const Json& k = e[s.key];
    auto it = std::find_if(out.begin(), out.end(), [&](const Json& x) {
      return x.is_object() && x.contains(s.key) && x[s.key] == k;
    });
    if (e.contains(kPatch) && e[kPatch] == "delete") {
      if (it != out.end()) out.erase(it);
      continue;
    }
    if (it == out.end()) {
      Json clean = e;
      clean.erase(std::string(kPatch));
      out.push_back(std::move(clean));
    } else {
      auto merged = MergeMap(*it, e, path);
      if (!merged.ok()) return merged.error();
      *it = *std::move(merged);
    }
  }
  return out;
}

// Orders `list` as `order` says (by merge key, or by value for primitives); elements the order
// does not mention keep their relative order after the ones it does.
Json Reorder(const Json& list, const Json& order, const std::string& key) {
  if (!list.is_array() || !order.is_array()) return list;
  Json out = Json::array();
  std::vector<bool> used(list.size(), false);
  for (const auto& o : order) {
    for (size_t i = 0; i < list.size(); ++i) {
      if (used[i]) continue;
      const bool same = key.empty() ? list[i] == o
                                    : (o.is_object() && o.contains(key) && list[i].is_object() &&
                                       list[i].contains(key) && list[i][key] == o[key]);
      if (same) {
        out.push_back(list[i]);
        used[i] = true;
        break;
      }
    }
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (!used[i]) out.push_back(list[i]);
  }
  return out;
}

ApiOr<Json> MergeMap(const Json& original, const Json& patch, std::vector<std::string>& path) {
  if (!patch.is_object()) return patch;
  if (patch.contains(kPatch)) {
    const Json& d = patch[kPatch];
    if (d == "replace") {
      Json out = patch;
      out.erase(std::string(kPatch));
      return out;
    }
    if (d == "delete") return Json();
    if (d != "merge") {
      return BadRequest("Unknown patch type: " + api::DumpJson(d) + " in map: " + api::DumpJson(patch));
    }
  }
  Json out = original.is_object() ? original : Json::object();
  if (patch.contains(kRetainKeys)) {
    const Json& keep = patch[kRetainKeys];
    if (!keep.is_array()) return BadRequest("$retainKeys must be a list of field names");
    for (auto it = out.begin(); it != out.end();) {
      if (std::find(keep.begin(), keep.end(), Json(it.key())) == keep.end()) {
        it = out.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Deletions from primitive lists first, so a patch may delete and add in one go.
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& k = it.key();
    if (k.rfind(kDeleteFromPrimitive, 0) != 0) continue;
    std::string field = k.substr(kDeleteFromPrimitive.size());
    if (!it->is_array()) return BadRequest(k + " must be a list");
    if (out.contains(field) && out[field].is_array()) {
      Json kept = Json::array();
      for (const auto& v : out[field]) {
        if (std::find(it->begin(), it->end(), v) == it->end()) kept.push_back(v);
      }
      out[field] = std::move(kept);
    }
  }
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& k = it.key();
    if (k == kPatch || k == kRetainKeys || k.rfind(kDeleteFromPrimitive, 0) == 0 ||
        k.rfind(kSetOrder, 0) == 0) {
      continue;
    }
    if (it->is_null()) {
      out.erase(k);
      continue;
    }
    path.push_back(k);
    auto cur = out.find(k);
    if (it->is_object()) {
      auto merged = MergeMap(cur != out.end() ? *cur : Json(), *it, path);
      if (!merged.ok()) return merged.error();
      if (merged->is_null()) {
        out.erase(k);
      } else {
        out[k] = *std::move(merged);
      }
    } else if (it->is_array()) {
      auto merged = MergeList(cur != out.end() ? *cur : Json(), *it, Lookup(path), path);
      if (!merged.ok()) return merged.error();
      out[k] = *std::move(merged);
    } else {
      out[k] = *it;
    }
    path.pop_back();
  }
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& k = it.key();
    if (k.rfind(kSetOrder, 0) != 0) continue;
    std::string field = k.substr(kSetOrder.size());
    if (!out.contains(field)) continue;
    path.push_back(field);
    ListStrategy s = Lookup(path);
    path.pop_back();
    out[field] = Reorder(out[field], *it, s.key);
  }
  return out;
}

std::string_view MediaType(std::string_view content_type) {
  size_t semi = content_type.find(';');
  std::string_view t = content_type.substr(0, semi);
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  return t;
}

// One operation at a time, in place, so that each copy's size is known before it is made.
ApiOr<Json> ApplyJsonPatch(const Json& current, const Json& ops) {
  if (!ops.is_array()) return BadRequest("json patch must be a list of operations");
  if (ops.size() > kMaxJsonPatchOperations) {
    // Kubernetes' words.
    return RequestEntityTooLarge("The allowed maximum operations in a JSON patch is " +
                                 std::to_string(kMaxJsonPatchOperations) + ", got " +
                                 std::to_string(ops.size()));
  }
  auto rejected = [](std::string_view what) {
    return UnprocessableEntity(
        "the server rejected our request due to an error in our request: " + std::string(what));
  };
  Json out = current;
  int64_t copied = 0;
  try {
    for (const auto& op : ops) {
      if (op.is_object() && op.value("op", "") == "copy" && op.contains("from") &&
          op["from"].is_string()) {
        const Json::json_pointer from(op["from"].get<std::string>());
        if (out.contains(from)) {
          copied += static_cast<int64_t>(out.at(from).dump().size());
          if (copied > kMaxJsonPatchCopyBytes) {
            // The words of the JSON patch library Kubernetes uses.
            return rejected("Unable to complete the copy, the accumulated size increase of copy "
                            "is " + std::to_string(copied) + ", exceeding the limit " +
                            std::to_string(kMaxJsonPatchCopyBytes));
          }
        }
      }
      out.patch_inplace(Json::array({op}));
    }
  } catch (const Json::exception& e) {
    return rejected(e.what());
  }
  return out;
}

}  // namespace

ApiOr<Json> StrategicMerge(const Json& target, const Json& patch, std::string_view) {
  if (!patch.is_object()) return BadRequest("a strategic merge patch must be a JSON object");
  std::vector<std::string> path;
  return MergeMap(target, patch, path);
}

ApiOr<Json> ApplyPatch(const Json& current, std::string_view content_type, std::string_view patch,
                       std::string_view kind) {
  const std::string_view type = MediaType(content_type);
  if (type != kJsonPatch && type != kMergePatch && type != kStrategicMergePatch) {
    return UnsupportedMediaType(
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, "
        "application/strategic-merge-patch+json");
  }
  auto p = api::ParseJson(patch);
  if (!p.ok()) return BadRequest("error decoding patch: " + p.status().message());
  ApiOr<Json> out = BadRequest("");
  if (type == kJsonPatch) {
    out = ApplyJsonPatch(current, *p);
  } else if (type == kMergePatch) {
    Json merged = current;
    merged.merge_patch(*p);
    out = std::move(merged);
  } else {
    out = StrategicMerge(current, *p, kind);
  }
  if (out.ok() && out->dump().size() > kMaxPatchedObjectBytes) {
    return RequestEntityTooLarge("Request entity too large: limit is " +
                                 std::to_string(kMaxPatchedObjectBytes));
  }
  return out;
}

}  // namespace kvol::apiserver
