// Discovery documents (/api, /apis, /api/v1, /apis/<group>/<version>) that tell kubectl which
// resources exist, their short names, scope and verbs; and the server's /version.
#pragma once

#include <optional>
#include <string>

#include "api/codec.h"

namespace kvol::apiserver {

// The Kubernetes version kvol's API matches, reported by /version.
inline constexpr std::string_view kKubernetesMajor = "1";
inline constexpr std::string_view kKubernetesMinor = "32";
inline constexpr std::string_view kKvolVersion = "v1.32.0-kvol.0.1.0";

api::Json ApiVersions(const std::string& server_address);
api::Json ApiGroupList();
std::optional<api::Json> ApiGroup(std::string_view group);
std::optional<api::Json> ApiResourceList(std::string_view group, std::string_view version);
api::Json VersionInfo();

}  // namespace kvol::apiserver
