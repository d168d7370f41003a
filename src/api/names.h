// Name, label and annotation rules (DNS-1123 labels and subdomains, qualified names, label
// values), returning Kubernetes' exact messages. Hand-written matchers: no std::regex, so long
// input costs linear time and no stack.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/field_errors.h"
#include "api/meta.h"

namespace kvol::api {

inline constexpr size_t kDNS1123LabelMaxLength = 63;
inline constexpr size_t kDNS1123SubdomainMaxLength = 253;
inline constexpr size_t kLabelValueMaxLength = 63;
inline constexpr size_t kQualifiedNameMaxLength = 63;
inline constexpr size_t kTotalAnnotationSizeLimit = 256 * 1024;

// Each returns the list of problems; empty means valid.
std::vector<std::string> IsDNS1123Label(std::string_view v);
std::vector<std::string> IsDNS1123Subdomain(std::string_view v);
std::vector<std::string> IsQualifiedName(std::string_view v);  // label keys, provisioner names
std::vector<std::string> IsValidLabelValue(std::string_view v);
std::vector<std::string> IsConfigMapKey(std::string_view v);

// How a kind's metadata.name is checked.
enum class NameRule { kDNS1123Subdomain, kDNS1123Label };

// Problems with a name; `prefix` for generateName (a trailing '-' is allowed there).
std::vector<std::string> ValidateName(NameRule rule, std::string_view name, bool prefix);

FieldErrors ValidateLabels(const StringMap& labels, const Path& path);
FieldErrors ValidateAnnotations(const StringMap& annotations, const Path& path);
// A label key: Invalid(path, key, msg) for each problem.
FieldErrors ValidateLabelName(std::string_view key, const Path& path);

}  // namespace kvol::api
