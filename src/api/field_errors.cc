// Formatting of field paths and field errors.
#include "api/field_errors.h"

#include <cstdio>
#include <cstring>

namespace kvol::api {

void Path::Append(std::string_view s) {
  if (long_.empty() && size_ + s.size() <= kInline) {
    std::memcpy(inline_ + size_, s.data(), s.size());
    size_ += s.size();
    return;
  }
  if (long_.empty()) long_.assign(inline_, size_);
  long_ += s;
}

Path Path::Child(std::string_view name) const {
  Path p(view());
  if (!p.empty()) p.Append(".");
  p.Append(name);
  return p;
}

Path Path::Index(size_t i) const {
  Path p(view());
  char digits[24];
  const int n = std::snprintf(digits, sizeof digits, "[%zu]", i);
  p.Append(std::string_view(digits, static_cast<size_t>(n)));
  return p;
}

Path Path::Key(std::string_view key) const {
  Path p(view());
  p.Append("[");
  p.Append(key);
  p.Append("]");
  return p;
}

std::string_view FieldErrorTypeString(FieldErrorType t) {
  switch (t) {
    case FieldErrorType::kNotFound: return "Not found";
    case FieldErrorType::kRequired: return "Required value";
    case FieldErrorType::kDuplicate: return "Duplicate value";
    case FieldErrorType::kInvalid: return "Invalid value";
    case FieldErrorType::kNotSupported: return "Unsupported value";
    case FieldErrorType::kForbidden: return "Forbidden";
    case FieldErrorType::kTooLong: return "Too long";
    case FieldErrorType::kTooMany: return "Too many";
    case FieldErrorType::kInternal: return "Internal error";
    case FieldErrorType::kTypeInvalid: return "Invalid value";
  }
  return "Invalid value";
}

std::string GoQuote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\a': out += "\\a"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\v': out += "\\v"; continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      continue;
    }
    // Multi-byte UTF-8: copy a well-formed sequence, escape a stray byte as Go does.
    size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len - 1;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  out += '"';
  return out;
}

BadValue BadValue::String(std::string_view s) { return {GoQuote(s), true}; }
BadValue BadValue::Int(int64_t v) { return {std::to_string(v), true}; }

std::string FieldError::Body() const {
  std::string s(FieldErrorTypeString(type));
  bool show_value = value.present && type != FieldErrorType::kRequired &&
                    type != FieldErrorType::kForbidden && type != FieldErrorType::kTooLong &&
                    type != FieldErrorType::kInternal;
  if (show_value) {
    s += ": ";
    s += value.text;
  }
  if (!detail.empty()) {
    s += ": ";
    s += detail;
  }
  return s;
}

std::string FieldError::ToString() const {
  std::string s = field;
  s += ": ";
  s += Body();
  return s;
}

FieldError Required(const Path& p, std::string detail) {
  return {FieldErrorType::kRequired, p.str(), {}, std::move(detail)};
}
FieldError Invalid(const Path& p, BadValue v, std::string detail) {
  return {FieldErrorType::kInvalid, p.str(), std::move(v), std::move(detail)};
}
FieldError Invalid(const Path& p, std::string_view v, std::string detail) {
  return Invalid(p, BadValue::String(v), std::move(detail));
}
FieldError Invalid(const Path& p, int64_t v, std::string detail) {
  return Invalid(p, BadValue::Int(v), std::move(detail));
}
FieldError NotSupported(const Path& p, std::string_view v,
                        const std::vector<std::string_view>& valid) {
  return NotSupported(p, BadValue::String(v), valid);
}
FieldError NotSupported(const Path& p, BadValue v, const std::vector<std::string_view>& valid) {
  std::string detail;
  if (!valid.empty()) {
    detail = "supported values: ";
    for (size_t i = 0; i < valid.size(); ++i) {
      if (i) detail += ", ";
      detail += GoQuote(valid[i]);
    }
  }
  return {FieldErrorType::kNotSupported, p.str(), std::move(v), std::move(detail)};
}
FieldError Duplicate(const Path& p, std::string_view v) {
  return {FieldErrorType::kDuplicate, p.str(), BadValue::String(v), {}};
}
FieldError Forbidden(const Path& p, std::string detail) {
  return {FieldErrorType::kForbidden, p.str(), {}, std::move(detail)};
}
FieldError NotFound(const Path& p, std::string_view v) {
  return {FieldErrorType::kNotFound, p.str(), BadValue::String(v), {}};
}
FieldError TooLong(const Path& p, size_t max_len) {
  return {FieldErrorType::kTooLong, p.str(), {},
          "may not be more than " + std::to_string(max_len) + " bytes"};
}
FieldError TooMany(const Path& p, size_t actual, size_t max) {
  return {FieldErrorType::kTooMany, p.str(), BadValue::Raw(std::to_string(actual)),
          "must have at most " + std::to_string(max) + " items"};
}

std::string AggregateMessage(const FieldErrors& errs) {
  if (errs.empty()) return {};
  if (errs.size() == 1) return errs[0].ToString();
  std::string s = "[";
  for (size_t i = 0; i < errs.size(); ++i) {
    if (i) s += ", ";
    s += errs[i].ToString();
  }
  s += "]";
  return s;
}

}  // namespace kvol::api
