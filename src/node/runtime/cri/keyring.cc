// Keyring: registry credentials from docker config secrets, matched to images.
#include "node/runtime/cri/keyring.h"

#include <fnmatch.h>

#include <nlohmann/json.hpp>

#include "base/strings.h"

namespace kvol::node::cri {
namespace {

using json = nlohmann::json;

constexpr std::string_view kDockerHub = "docker.io";
constexpr std::string_view kDockerHubIndex = "index.docker.io";

// "host[:port]" and "/path" of a key or repository written without a scheme.
struct Location {
  std::string host, port, path;
};

Location Split(std::string_view s) {
  Location l;
  const size_t slash = s.find('/');
  std::string_view hostport = s.substr(0, slash);
  if (slash != std::string_view::npos) l.path = std::string(s.substr(slash));
  const size_t colon = hostport.rfind(':');
  l.host = std::string(hostport.substr(0, colon));
  if (colon != std::string_view::npos) l.port = std::string(hostport.substr(colon + 1));
  return l;
}

// A config key as kubelet keeps it: no scheme, no leading /v1 or /v2, no lone "/".
std::string NormalizeKey(std::string_view key) {
  for (std::string_view scheme : {"https://", "http://"}) {
    if (key.rfind(scheme, 0) == 0) key.remove_prefix(scheme.size());
  }
  const size_t slash = key.find('/');
  std::string out(key.substr(0, slash));
  if (slash == std::string_view::npos) return out;
  std::string_view path = key.substr(slash);
  for (std::string_view version : {"/v1", "/v2"}) {
    if (path.rfind(version, 0) == 0) path.remove_prefix(version.size());
  }
  if (!path.empty() && path != "/") out += path;
  return out;
}

std::vector<std::string> Labels(const std::string& host) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t dot; (dot = host.find('.', start)) != std::string::npos; start = dot + 1) {
    out.push_back(host.substr(start, dot - start));
  }
  out.push_back(host.substr(start));
  return out;
}

bool Matches(const std::string& key, const std::string& repository) {
  const Location k = Split(key), r = Split(repository);
  if (k.port != r.port) return false;
  const std::vector<std::string> kl = Labels(k.host), rl = Labels(r.host);
  if (kl.size() != rl.size()) return false;
  for (size_t i = 0; i < kl.size(); ++i) {
    if (fnmatch(kl[i].c_str(), rl[i].c_str(), 0) != 0) return false;
  }
  return r.path.rfind(k.path, 0) == 0;
}

StatusOr<std::string> Decode(const std::string& value, const std::string& what) {
  auto raw = Base64Decode(value);
  if (!raw) return InvalidArgumentError(what + ": not base64");
  return *raw;
}

}  // namespace

std::string ImageRepository(std::string_view image) {
  // Without its digest, then its tag (a colon after the last slash).
  if (const size_t at = image.find('@'); at != std::string_view::npos) image = image.substr(0, at);
  const size_t last_slash = image.rfind('/');
  if (const size_t colon = image.rfind(':');
      colon != std::string_view::npos &&
      (last_slash == std::string_view::npos || colon > last_slash)) {
    image = image.substr(0, colon);
  }
  const size_t slash = image.find('/');
  if (slash == std::string_view::npos)
    return std::string(kDockerHub) + "/library/" + std::string(image);
  const std::string_view first = image.substr(0, slash);
  const bool registry = first.find_first_of(".:") != std::string_view::npos || first == "localhost";
  if (!registry) return std::string(kDockerHub) + "/" + std::string(image);
  if (first == kDockerHubIndex) return std::string(kDockerHub) + std::string(image.substr(slash));
  return std::string(image);
}

Status Keyring::Add(const api::Secret& secret) {
  const std::string what = "imagePullSecrets " + secret.metadata.name;
  std::string_view key_name;
  if (secret.type == "kubernetes.io/dockerconfigjson") {
    key_name = ".dockerconfigjson";
  } else if (secret.type == "kubernetes.io/dockercfg") {
    key_name = ".dockercfg";
  } else {
    return OkStatus();
  }
  auto data = secret.data.find(std::string(key_name));
  if (data == secret.data.end() || data->second.empty()) return OkStatus();
  KVOL_ASSIGN_OR_RETURN(std::string text, Decode(data->second, what + " " + std::string(key_name)));
  json config = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) {
    return InvalidArgumentError(what + ": " + std::string(key_name) + " is not a JSON object");
  }
  if (key_name == ".dockerconfigjson") config = config.value("auths", json::object());
  if (!config.is_object()) return InvalidArgumentError(what + ": auths is not a JSON object");
  for (const auto& [registry, entry] : config.items()) {
    if (!entry.is_object()) continue;
    pb::AuthConfig auth;
    auth.set_username(entry.value("username", ""));
    auth.set_password(entry.value("password", ""));
    if (const std::string encoded = entry.value("auth", ""); !encoded.empty()) {
      KVOL_ASSIGN_OR_RETURN(std::string pair, Decode(encoded, what + ": auth of " + registry));
      const size_t colon = pair.find(':');
      if (colon == std::string::npos) {
        return InvalidArgumentError(
            what + ": unable to parse auth field, must be formatted as base64(username:password)");
      }
      auth.set_username(pair.substr(0, colon));
      auth.set_password(pair.substr(colon + 1));
    }
    const std::string key = NormalizeKey(registry);
    auth.set_server_address(key);
    entries_[key].push_back(std::move(auth));
  }
  return OkStatus();
}

std::vector<pb::AuthConfig> Keyring::Lookup(std::string_view image) const {
  const std::string repository = ImageRepository(image);
  std::vector<pb::AuthConfig> out;
  for (const auto& [key, auths] : entries_) {
    if (Matches(key, repository)) out.insert(out.end(), auths.begin(), auths.end());
  }
  if (out.empty() && repository.rfind(std::string(kDockerHub) + "/", 0) == 0) {
    if (auto hub = entries_.find(kDockerHubIndex); hub != entries_.end()) return hub->second;
  }
  return out;
}

}  // namespace kvol::node::cri
