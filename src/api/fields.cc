// Field selector parsing after Kubernetes' fields package.
#include "api/fields.h"

#include <algorithm>

namespace kvol::api::fields {
namespace {

// Splits on commas not preceded by a backslash escape.
std::vector<std::string> SplitTerms(std::string_view s) {
  std::vector<std::string> terms;
  std::string cur;
  bool escaped = false;
  for (char c : s) {
    if (escaped) {
      cur += c;
      escaped = false;
    } else if (c == '\\') {
      cur += c;
      escaped = true;
    } else if (c == ',') {
      terms.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  terms.push_back(std::move(cur));
  return terms;
}

StatusOr<std::string> Unescape(std::string_view v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    char c = v[i];
    if (c == '\\') {
      if (i + 1 >= v.size()) {
        return InvalidArgumentError("invalid field selector: invalid escape sequence: \\");
      }
      char n = v[++i];
      if (n != '\\' && n != ',' && n != '=') {
        return InvalidArgumentError(std::string("invalid field selector: invalid escape sequence: \\") + n);
      }
      out += n;
    } else if (c == ',' || c == '=') {
      return InvalidArgumentError("invalid field selector: unescaped character in value: " +
                                  std::to_string(static_cast<int>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

std::string Escape(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == ',' || c == '=') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

StatusOr<Selector> Parse(std::string_view s) {
  Selector sel;
  std::vector<std::string> parts = SplitTerms(s);
  std::sort(parts.begin(), parts.end());
  for (const auto& part : parts) {
    if (part.empty()) continue;
    // The first operator found scanning left to right, trying "!=", "==", "=" at each position.
    size_t at = std::string::npos, len = 0;
    bool equals = true;
    for (size_t i = 0; i < part.size() && at == std::string::npos; ++i) {
      if (part.compare(i, 2, "!=") == 0) {
        at = i, len = 2, equals = false;
      } else if (part.compare(i, 2, "==") == 0) {
        at = i, len = 2;
      } else if (part[i] == '=') {
        at = i, len = 1;
      }
    }
    if (at == std::string::npos) {
      return InvalidArgumentError("invalid selector: '" + std::string(s) + "'; can't understand '" +
                                  part + "'");
    }
    auto value = Unescape(std::string_view(part).substr(at + len));
    if (!value.ok()) return value.status();
    sel.terms_.push_back({part.substr(0, at), equals, std::move(*value)});
  }
  return sel;
}

bool Selector::Matches(const StringMap& fields) const {
  for (const auto& t : terms_) {
    auto it = fields.find(t.field);
    std::string_view have = it == fields.end() ? std::string_view() : it->second;
    if ((have == t.value) != t.equals) return false;
  }
  return true;
}

bool Selector::Matches(const StringMap& fields, std::string_view name, std::string_view ns) const {
  for (const auto& t : terms_) {
    std::string_view have;
    if (t.field == "metadata.name") {
      have = name;
    } else if (t.field == "metadata.namespace") {
      have = ns;
    } else if (auto it = fields.find(t.field); it != fields.end()) {
      have = it->second;
    }
    if ((have == t.value) != t.equals) return false;
  }
  return true;
}

std::string Selector::ToString() const {
  std::vector<std::string> parts;
  for (const auto& t : terms_) parts.push_back(t.field + (t.equals ? "=" : "!=") + Escape(t.value));
  std::sort(parts.begin(), parts.end());
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) s += ',';
    s += parts[i];
  }
  return s;
}

Status Selector::CheckSupported(const std::vector<std::string_view>& supported) const {
  for (const auto& t : terms_) {
    if (std::find(supported.begin(), supported.end(), t.field) == supported.end()) {
      return InvalidArgumentError("field label not supported: " + t.field);
    }
  }
  return OkStatus();
}

}  // namespace kvol::api::fields
