// Kubernetes' name and label rules with their exact error texts.
#include "api/names.h"

#include <algorithm>

#include "base/strings.h"

namespace kvol::api {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool MatchesDNSLabel(std::string_view v) {
  if (v.empty() || !IsLowerAlnum(v.front()) || !IsLowerAlnum(v.back())) return false;
  return std::all_of(v.begin(), v.end(), [](char c) { return IsLowerAlnum(c) || c == '-'; });
}

// label(\.label)*
bool MatchesDNSSubdomain(std::string_view v) {
  size_t start = 0;
  while (true) {
    size_t dot = v.find('.', start);
    if (!MatchesDNSLabel(v.substr(start, dot == std::string_view::npos ? dot : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool MatchesQualifiedNamePart(std::string_view v) {
  if (v.empty() || !IsAlnum(v.front()) || !IsAlnum(v.back())) return false;
  return std::all_of(v.begin(), v.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

constexpr std::string_view kDNSLabelMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
constexpr std::string_view kDNSSubdomainMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
constexpr std::string_view kQualifiedNameMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
constexpr std::string_view kLabelValueMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
constexpr std::string_view kConfigMapKeyMsg =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')";

std::string MaxLenError(size_t n) {
  return "must be no more than " + std::to_string(n) + " characters";
}

}  // namespace

std::vector<std::string> IsDNS1123Label(std::string_view v) {
  std::vector<std::string> errs;
  if (v.size() > kDNS1123LabelMaxLength) errs.push_back(MaxLenError(kDNS1123LabelMaxLength));
  if (!MatchesDNSLabel(v)) {
    if (MatchesDNSSubdomain(v)) {
      errs.emplace_back("must not contain dots");
    } else {
      errs.emplace_back(kDNSLabelMsg);
    }
  }
  return errs;
}

std::vector<std::string> IsDNS1123Subdomain(std::string_view v) {
  std::vector<std::string> errs;
  if (v.size() > kDNS1123SubdomainMaxLength) {
    errs.push_back(MaxLenError(kDNS1123SubdomainMaxLength));
  }
  if (!MatchesDNSSubdomain(v)) errs.emplace_back(kDNSSubdomainMsg);
  return errs;
}

std::vector<std::string> IsQualifiedName(std::string_view v) {
  std::vector<std::string> errs;
  std::string_view name = v;
  size_t slash = v.find('/');
  if (slash != std::string_view::npos) {
    if (v.find('/', slash + 1) != std::string_view::npos) {
      errs.push_back("a qualified name " + std::string(kQualifiedNameMsg) +
                     " with an optional DNS subdomain prefix and '/' (e.g. "
                     "'example.com/MyName')");
      return errs;
    }
    std::string_view prefix = v.substr(0, slash);
    name = v.substr(slash + 1);
    if (prefix.empty()) {
      errs.emplace_back("prefix part must be non-empty");
    } else {
      for (auto& m : IsDNS1123Subdomain(prefix)) errs.push_back("prefix part " + m);
    }
  }
  if (name.empty()) {
    errs.emplace_back("name part must be non-empty");
  } else if (name.size() > kQualifiedNameMaxLength) {
    errs.push_back("name part " + MaxLenError(kQualifiedNameMaxLength));
  }
  if (!MatchesQualifiedNamePart(name)) errs.push_back("name part " + std::string(kQualifiedNameMsg));
  return errs;
}

std::vector<std::string> IsValidLabelValue(std::string_view v) {
  std::vector<std::string> errs;
  if (v.size() > kLabelValueMaxLength) errs.push_back(MaxLenError(kLabelValueMaxLength));
  if (!v.empty() && !MatchesQualifiedNamePart(v)) errs.emplace_back(kLabelValueMsg);
  return errs;
}

std::vector<std::string> IsConfigMapKey(std::string_view v) {
  std::vector<std::string> errs;
  if (v.size() > kDNS1123SubdomainMaxLength) {
    errs.push_back(MaxLenError(kDNS1123SubdomainMaxLength));
  }
  bool chars_ok = !v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
    return IsAlnum(c) || c == '-' || c == '_' || c == '.';
  });
  if (!chars_ok) errs.emplace_back(kConfigMapKeyMsg);
  if (v == ".") {
    errs.emplace_back("must not be '.'");
  } else if (v == "..") {
    errs.emplace_back("must not be '..'");
  } else if (v.substr(0, 2) == "..") {
    errs.emplace_back("must not start with '..'");
  }
  return errs;
}

std::vector<std::string> ValidateName(NameRule rule, std::string_view name, bool prefix) {
  std::string masked;
  if (prefix && name.size() >= 2 && name.back() == '-') {
    // generateName may end in '-'. Kubernetes' maskTrailingDash drops the dash and the
    // character before it and appends a letter.
    masked = std::string(name.substr(0, name.size() - 2)) + "a";
    name = masked;
  }
  return rule == NameRule::kDNS1123Label ? IsDNS1123Label(name) : IsDNS1123Subdomain(name);
}

FieldErrors ValidateLabelName(std::string_view key, const Path& path) {
  FieldErrors errs;
  for (auto& m : IsQualifiedName(key)) errs.push_back(Invalid(path, key, m));
  return errs;
}

FieldErrors ValidateLabels(const StringMap& labels, const Path& path) {
  FieldErrors errs;
  for (const auto& [k, v] : labels) {
    Append(errs, ValidateLabelName(k, path));
    for (auto& m : IsValidLabelValue(v)) errs.push_back(Invalid(path, v, m));
  }
  return errs;
}

FieldErrors ValidateAnnotations(const StringMap& annotations, const Path& path) {
  FieldErrors errs;
  size_t total = 0;
  for (const auto& [k, v] : annotations) {
    // Keys are checked in lower case, as Kubernetes does; most have no upper case to lower.
    std::string lowered;
    std::string_view key = k;
    if (std::any_of(k.begin(), k.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
      lowered = AsciiLower(k);
      key = lowered;
    }
    for (auto& m : IsQualifiedName(key)) errs.push_back(Invalid(path, k, m));
    total += k.size() + v.size();
  }
  if (total > kTotalAnnotationSizeLimit) errs.push_back(TooLong(path, kTotalAnnotationSizeLimit));
  return errs;
}

}  // namespace kvol::api
