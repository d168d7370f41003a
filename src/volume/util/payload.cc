// Payloads of configMap, secret and downwardAPI volumes.
#include "volume/util/payload.h"

#include "base/strings.h"

namespace kvol::volume::util {
namespace {

// Bytes of one valid UTF-8 sequence starting at s[i] that Go would print as is (not a control
// character), or 0.
size_t PrintableRune(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  if (len == 1) return c >= 0x20 && c != 0x7f ? 1 : 0;
  if (FirstInvalidUtf8(s.substr(i, len)) != std::string_view::npos) return 0;
  // C1 controls (U+0080..U+009F) are escaped by Go.
  if (len == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) return 0;
  return len;
}

StatusOr<Payload> KeyedPayload(const api::StringMap& values,
                               const std::vector<api::KeyToPath>& items, int32_t default_mode,
                               bool optional, std::string_view missing_key) {
  Payload out;
  if (items.empty()) {
    for (const auto& [k, v] : values) out[k] = FileProjection{v, default_mode};
    return out;
  }
  for (const auto& item : items) {
    auto it = values.find(item.key);
    if (it == values.end()) {
      if (optional) continue;
      return InvalidArgumentError(std::string(missing_key) + item.key);
    }
    out[item.path] = FileProjection{it->second, item.mode.value_or(default_mode)};
  }
  return out;
}

}  // namespace

std::string GoQuote(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\a':
        out += "\\a";
        ++i;
        continue;
      case '\b':
        out += "\\b";
        ++i;
        continue;
      case '\f':
        out += "\\f";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      case '\v':
        out += "\\v";
        ++i;
        continue;
      default:
        break;
    }
    if (size_t n = PrintableRune(s, i); n > 0) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    if (c == 0xC2 && i + 1 < s.size()) {
      // A C1 control character: \u0080 .. \u009f.
      const auto d = static_cast<unsigned char>(s[i + 1]);
      out += "\\u00";
      out += kHex[d >> 4];
      out += kHex[d & 0xF];
      i += 2;
      continue;
    }
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
    ++i;
  }
  out += "\"";
  return out;
}

std::string FormatMap(const api::StringMap& m) {
  std::string out;
  for (const auto& [k, v] : m) {
    if (!out.empty()) out += "\n";
    out += k + "=" + GoQuote(v);
  }
  return out;
}

StatusOr<Payload> ConfigMapPayload(const api::ConfigMap* cm,
                                   const std::vector<api::KeyToPath>& items, int32_t default_mode,
                                   bool optional) {
  if (!cm) return Payload{};
  api::StringMap values = cm->data;
  for (const auto& [k, v] : cm->binary_data) {
    auto raw = Base64Decode(v);
    if (!raw) return InvalidArgumentError("configmap binaryData key " + k + " is not valid base64");
    values[k] = *std::move(raw);
  }
  return KeyedPayload(values, items, default_mode, optional,
                      "configmap references non-existent config key: ");
}

StatusOr<Payload> SecretPayload(const api::Secret* secret, const std::vector<api::KeyToPath>& items,
                                int32_t default_mode, bool optional) {
  if (!secret) return Payload{};
  api::StringMap values;
  for (const auto& [k, v] : secret->data) {
    auto raw = Base64Decode(v);
    if (!raw) return InvalidArgumentError("secret data key " + k + " is not valid base64");
    values[k] = *std::move(raw);
  }
  return KeyedPayload(values, items, default_mode, optional,
                      "references non-existent secret key: ");
}

StatusOr<std::string> PodFieldValue(const api::Pod& pod, std::string_view path) {
  const auto& md = pod.metadata;
  auto subscript = [&](std::string_view prefix,
                       const api::StringMap& m) -> std::optional<std::string> {
    // metadata.labels['key'] / metadata.annotations['key']
    if (path.size() < prefix.size() + 4 || path.substr(0, prefix.size()) != prefix ||
        path.substr(prefix.size(), 2) != "['" || path.substr(path.size() - 2) != "']") {
      return std::nullopt;
    }
    std::string key(path.substr(prefix.size() + 2, path.size() - prefix.size() - 4));
    auto it = m.find(key);
    return it == m.end() ? std::string() : it->second;
  };
  if (path == "metadata.name") return md.name;
  if (path == "metadata.namespace") return md.namespace_;
  if (path == "metadata.uid") return md.uid;
  if (path == "metadata.labels") return FormatMap(md.labels);
  if (path == "metadata.annotations") return FormatMap(md.annotations);
  if (auto v = subscript("metadata.labels", md.labels)) return *v;
  if (auto v = subscript("metadata.annotations", md.annotations)) return *v;
  if (path == "spec.nodeName") return pod.spec.node_name;
  if (path == "spec.serviceAccountName") return pod.spec.service_account_name;
  if (path == "status.podIP") return pod.status.pod_ip;
  if (path == "status.hostIP") return pod.status.host_ip;
  return InvalidArgumentError("unsupported fieldPath: " + std::string(path));
}

StatusOr<std::string> ContainerResourceValue(const api::Pod& pod,
                                             const api::ResourceFieldSelector& ref,
                                             const api::ResourceList& node_allocatable) {
  const api::Container* container = nullptr;
  for (const auto& c : pod.spec.containers) {
    if (c.name == ref.container_name) container = &c;
  }
  for (const auto& c : pod.spec.init_containers) {
    if (!container && c.name == ref.container_name) container = &c;
  }
  if (!container) {
    return InvalidArgumentError("container " + ref.container_name + " not found in pod " +
                                pod.metadata.name);
  }
  const std::string& res = ref.resource;
  const size_t dot = res.find('.');
  if (dot == std::string::npos)
    return InvalidArgumentError("unsupported container resource: " + res);
  const std::string kind = res.substr(0, dot), name = res.substr(dot + 1);
  if ((kind != "limits" && kind != "requests") ||
      (name != "cpu" && name != "memory" && name != "ephemeral-storage")) {
    return InvalidArgumentError("unsupported container resource: " + res);
  }
  const api::ResourceList& list =
      kind == "limits" ? container->resources.limits : container->resources.requests;
  api::Quantity value;
  if (auto it = list.find(name); it != list.end()) {
    value = it->second;
  } else if (kind == "limits") {
    // An unset limit reads as the node's allocatable amount.
    if (auto a = node_allocatable.find(name); a != node_allocatable.end()) value = a->second;
  } else if (auto l = container->resources.limits.find(name);
             l != container->resources.limits.end()) {
    // An unset request defaults to the limit.
    value = l->second;
  }
  api::Quantity divisor = ref.divisor.value_or(api::Quantity::MustParse("1"));
  if (divisor.IsZero()) divisor = api::Quantity::MustParse("1");
  if (name == "cpu") {
    const int64_t m = value.MilliValue(), d = divisor.MilliValue();
    return std::to_string(d == 0 ? 0 : (m + d - 1) / d);
  }
  const int64_t v = value.Value(), d = divisor.Value();
  return std::to_string(d == 0 ? 0 : (v + d - 1) / d);
}

StatusOr<Payload> DownwardApiPayload(const std::vector<api::DownwardAPIVolumeFile>& items,
                                     const api::Pod& pod, int32_t default_mode,
                                     const api::ResourceList& node_allocatable) {
  Payload out;
  for (const auto& item : items) {
    FileProjection f;
    f.mode = item.mode.value_or(default_mode);
    if (item.field_ref) {
      KVOL_ASSIGN_OR_RETURN(f.data, PodFieldValue(pod, item.field_ref->field_path));
    } else if (item.resource_field_ref) {
      KVOL_ASSIGN_OR_RETURN(
          f.data, ContainerResourceValue(pod, *item.resource_field_ref, node_allocatable));
    } else {
      return InvalidArgumentError("downwardAPI item " + item.path +
                                  " has neither fieldRef nor resourceFieldRef");
    }
    out[item.path] = std::move(f);
  }
  return out;
}

}  // namespace kvol::volume::util
