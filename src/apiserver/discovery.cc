// Discovery documents generated from the kind table.
#include "apiserver/discovery.h"

#include <set>

#include "api/scheme.h"
#include "apiserver/strategy.h"
#include "base/strings.h"

namespace kvol::apiserver {

using api::Json;

namespace {

template <class T>
bool HasStatusSubresource() {
  return kStatusSubresource<T>;
}

constexpr const char* kAuthenticationGroup = "authentication.k8s.io";

Json Verbs() {
  return Json::array({"create", "delete", "deletecollection", "get", "list", "patch", "update",
                      "watch"});
}

}  // namespace

Json ApiVersions(const std::string& server_address) {
  return {{"kind", "APIVersions"},
          {"versions", Json::array({"v1"})},
          {"serverAddressByClientCIDRs",
           Json::array({{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", server_address}}})}};
}

Json ApiGroupList() {
  std::set<std::pair<std::string, std::string>> gvs;
  api::ForEachKind([&](auto t) {
    const auto& k = api::KindInfoOf<typename decltype(t)::type>();
    if (!k.group.empty()) gvs.emplace(k.group, k.version);
  });
  gvs.emplace(kAuthenticationGroup, "v1");
  Json groups = Json::array();
  for (const auto& [g, v] : gvs) {
    Json gv = {{"groupVersion", g + "/" + v}, {"version", v}};
    groups.push_back({{"name", g}, {"versions", Json::array({gv})}, {"preferredVersion", gv}});
  }
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", std::move(groups)}};
}

std::optional<Json> ApiGroup(std::string_view group) {
  Json list = ApiGroupList();
  for (auto& g : list["groups"]) {
    if (g["name"] == group) {
      g["kind"] = "APIGroup";
      g["apiVersion"] = "v1";
      return g;
    }
  }
  return std::nullopt;
}

std::optional<Json> ApiResourceList(std::string_view group, std::string_view version) {
  Json resources = Json::array();
  api::ForEachKind([&](auto t) {
    using T = typename decltype(t)::type;
    const auto& k = api::KindInfoOf<T>();
    if (k.group != group || k.version != version) return;
    Json r = {{"name", k.resource},   {"singularName", k.singular}, {"namespaced", k.namespaced},
              {"kind", k.kind},       {"verbs", Verbs()}};
    if (!k.short_names.empty()) {
      Json sn = Json::array();
      for (auto s : k.short_names) sn.push_back(s);
      r["shortNames"] = std::move(sn);
    }
    if (k.in_category_all) r["categories"] = Json::array({"all"});
    resources.push_back(std::move(r));
    if (HasStatusSubresource<T>()) {
      resources.push_back({{"name", std::string(k.resource) + "/status"},
                           {"singularName", ""},
                           {"namespaced", k.namespaced},
                           {"kind", k.kind},
                           {"verbs", Json::array({"get", "patch", "update"})}});
    }
    if constexpr (std::is_same_v<T, api::ServiceAccount>) {
      resources.push_back({{"name", "serviceaccounts/token"},
                           {"singularName", ""},
                           {"namespaced", true},
                           {"group", kAuthenticationGroup},
                           {"version", "v1"},
                           {"kind", "TokenRequest"},
                           {"verbs", Json::array({"create"})}});
    }
    if constexpr (std::is_same_v<T, api::Pod>) {
      resources.push_back({{"name", "pods/binding"},
                           {"singularName", ""},
                           {"namespaced", true},
                           {"kind", "Binding"},
                           {"verbs", Json::array({"create"})}});
    }
  });
  if (group == kAuthenticationGroup && version == "v1") {
    // Made, not stored: a POST answers with the review.
    for (auto [name, kind] : {std::pair{"selfsubjectreviews", "SelfSubjectReview"},
                              std::pair{"tokenreviews", "TokenReview"}}) {
      resources.push_back({{"name", name},
                           {"singularName", AsciiLower(kind)},
                           {"namespaced", false},
                           {"kind", kind},
                           {"verbs", Json::array({"create"})}});
    }
  }
  if (resources.empty()) return std::nullopt;
  std::string gv = group.empty() ? std::string(version) : std::string(group) + "/" + std::string(version);
  return Json{{"kind", "APIResourceList"},
              {"apiVersion", "v1"},
              {"groupVersion", gv},
              {"resources", std::move(resources)}};
}

Json VersionInfo() {
  return {{"major", kKubernetesMajor},
          {"minor", kKubernetesMinor},
          {"gitVersion", kKvolVersion},
          {"gitCommit", ""},
          {"gitTreeState", "clean"},
          {"buildDate", "2026-01-01T00:00:00Z"},
          {"goVersion", "kvol (C++20)"},
          {"compiler", "gc"},
          {"platform", "linux/amd64"}};
}

}  // namespace kvol::apiserver
