// A container's command line, environment and mounts from its pod.
#include "node/runtime/config.h"

#include <filesystem>
#include <set>

#include "base/strings.h"
#include "volume/util/payload.h"
#include "volume/util/subpath.h"

namespace kvol::node::runtime {

std::string ExpandVars(std::string_view in, const std::map<std::string, std::string>& vars) {
  std::string out;
  for (size_t i = 0; i < in.size();) {
    if (in[i] != '$' || i + 1 >= in.size()) {
      out += in[i++];
      continue;
    }
    if (in[i + 1] == '$') {  // $$ is a literal $
      out += '$';
      i += 2;
      continue;
    }
    if (in[i + 1] == '(') {
      const size_t close = in.find(')', i + 2);
      if (close != std::string_view::npos) {
        const std::string name(in.substr(i + 2, close - i - 2));
        if (auto it = vars.find(name); it != vars.end()) {
          out += it->second;
        } else {
          out += in.substr(i, close - i + 1);
        }
        i = close + 1;
        continue;
      }
    }
    out += in[i++];
  }
  return out;
}

namespace {

// The value of a key of a ConfigMap or Secret (`object`, as read), as kubelet resolves an env
// var's configMapKeyRef or secretKeyRef: a missing object or key of an optional ref sets
// `skip` instead of failing.
template <class Object, class Ref>
StatusOr<std::string> KeyRefValue(const api::Pod& pod, const Ref& ref,
                                  const StatusOr<Object>& object, std::string_view kind,
                                  bool* skip) {
  const bool optional = ref.optional.value_or(false);
  if (!object.ok()) {
    if (object.status().code() == StatusCode::kNotFound && optional) {
      *skip = true;
      return std::string();
    }
    return object.status();
  }
  if (auto it = object->data.find(ref.key); it != object->data.end()) {
    if constexpr (std::is_same_v<Object, api::Secret>) {
      auto raw = Base64Decode(it->second);
      if (!raw)
        return InvalidArgumentError("secret " + ref.name + " key " + ref.key + ": not base64");
      return *raw;
    } else {
      return it->second;
    }
  }
  if (optional) {
    *skip = true;
    return std::string();
  }
  return InvalidArgumentError("couldn't find key " + ref.key + " in " + std::string(kind) + " " +
                              pod.metadata.namespace_ + "/" + ref.name);
}

// A subPathExpr expanded, or kubelet's "missing value for A, B" naming every variable it uses
// that is unset or empty ($$(A) is the literal $(A), not a use).
StatusOr<std::string> ExpandSubPathExpr(const std::string& expr,
                                        const std::map<std::string, std::string>& vars) {
  std::set<std::string> missing;
  for (size_t i = 0; i + 1 < expr.size(); ++i) {
    if (expr[i] != '$') continue;
    if (expr[i + 1] == '$') {
      ++i;  // an escaped $
      continue;
    }
    if (expr[i + 1] != '(') continue;
    const size_t close = expr.find(')', i + 2);
    if (close == std::string::npos) break;
    const std::string name = expr.substr(i + 2, close - i - 2);
    auto it = vars.find(name);
    if (it == vars.end() || it->second.empty()) missing.insert(name);
    i = close;
  }
  if (!missing.empty()) {
    std::string names;
    for (const auto& n : missing) names += (names.empty() ? "" : ", ") + n;
    return InvalidArgumentError("missing value for " + names);
  }
  return ExpandVars(expr, vars);
}

}  // namespace

StatusOr<std::vector<std::string>> ContainerEnv(const api::Pod& pod, const api::Container& c,
                                                volume::Host& host) {
  std::vector<std::pair<std::string, std::string>> env = {{"PATH", std::string(kDefaultPath)},
                                                          {"HOSTNAME", pod.metadata.name}};
  std::map<std::string, std::string> vars(env.begin(), env.end());
  for (const auto& e : c.env) {
    std::string value;
    bool skip = false;
    if (!e.value_from) {
      value = ExpandVars(e.value, vars);
    } else if (const auto& from = *e.value_from; from.field_ref) {
      KVOL_ASSIGN_OR_RETURN(value, volume::util::PodFieldValue(pod, from.field_ref->field_path));
    } else if (from.resource_field_ref) {
      api::ResourceFieldSelector ref = *from.resource_field_ref;
      if (ref.container_name.empty()) ref.container_name = c.name;
      KVOL_ASSIGN_OR_RETURN(value,
                            volume::util::ContainerResourceValue(pod, ref, host.NodeAllocatable()));
    } else if (from.config_map_key_ref) {
      const auto& ref = *from.config_map_key_ref;
      KVOL_ASSIGN_OR_RETURN(
          value, KeyRefValue(pod, ref, host.GetConfigMap(pod.metadata.namespace_, ref.name),
                             "ConfigMap", &skip));
    } else if (from.secret_key_ref) {
      const auto& ref = *from.secret_key_ref;
      KVOL_ASSIGN_OR_RETURN(
          value, KeyRefValue(pod, ref, host.GetSecret(pod.metadata.namespace_, ref.name), "Secret",
                             &skip));
    }
    if (skip) continue;
    vars[e.name] = value;
    auto same =
        std::find_if(env.begin(), env.end(), [&](const auto& kv) { return kv.first == e.name; });
    if (same != env.end()) {
      same->second = value;  // a later entry of the same name wins, in the earlier place
    } else {
      env.emplace_back(e.name, value);
    }
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<std::string> ContainerArgv(const api::Container& c, const std::vector<std::string>& env,
                                       const std::vector<std::string>& stand_in) {
  std::map<std::string, std::string> vars;
  for (const auto& e : env) {
    const size_t eq = e.find('=');
    vars[e.substr(0, eq)] = e.substr(eq + 1);
  }
  std::vector<std::string> argv;
  for (const auto& a : c.command) argv.push_back(ExpandVars(a, vars));
  for (const auto& a : c.args) argv.push_back(ExpandVars(a, vars));
  if (argv.empty()) argv = stand_in;
  return argv;
}

StatusOr<std::vector<BindMount>> ContainerMounts(
    const api::Container& c, const std::map<std::string, MountedVolume>& volumes,
    const std::vector<std::string>& env) {
  std::map<std::string, std::string> vars;
  for (const auto& e : env) {
    const size_t eq = e.find('=');
    vars[e.substr(0, eq)] = eq == std::string::npos ? "" : e.substr(eq + 1);
  }
  std::vector<BindMount> out;
  for (const auto& m : c.volume_mounts) {
    auto v = volumes.find(m.name);
    if (v == volumes.end() || v->second.block) {
      return NotFoundError("volume \"" + m.name + "\" of volumeMount at " + m.mount_path +
                           " is not mounted");
    }
    BindMount b;
    b.target = m.mount_path;
    b.read_only = m.read_only || v->second.read_only;
    b.propagation = m.mount_propagation.value_or("");
    // subPathExpr: $(VAR) from the environment, as kubelet expands it (a variable unset or
    // empty is an error); what it names is then checked as a subPath is.
    std::string sub_path = m.sub_path;
    if (!m.sub_path_expr.empty()) {
      KVOL_ASSIGN_OR_RETURN(sub_path, ExpandSubPathExpr(m.sub_path_expr, vars));
    }
    if (sub_path.empty()) {
      b.source = v->second.path;
    } else {
      auto resolved = volume::util::PrepareSubPath(v->second.path, sub_path);
      if (!resolved.ok()) {
        return resolved.status().Annotate("failed to prepare subPath for volumeMount \"" + m.name +
                                          "\" of container \"" + c.name + "\"");
      }
      b.source = *std::move(resolved);
      b.within = v->second.path;  // opened again step by step, refusing symlinks, at start
    }
    out.push_back(std::move(b));
  }
  for (const auto& d : c.volume_devices) {
    auto v = volumes.find(d.name);
    if (v == volumes.end() || !v->second.block) {
      return NotFoundError("block volume \"" + d.name + "\" of volumeDevice at " + d.device_path +
                           " is not mapped");
    }
    std::error_code ec;
    const auto device = std::filesystem::canonical(v->second.path, ec);
    if (ec) return NotFoundError("block volume \"" + d.name + "\": " + ec.message());
    out.push_back({.source = device.string(), .target = d.device_path, .device = true});
  }
  return out;
}

}  // namespace kvol::node::runtime
