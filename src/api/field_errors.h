// Field paths and field errors, printed exactly as Kubernetes prints them
// ("spec.capacity[storage]: Invalid value: \"-1Gi\": must be greater than zero").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvol::api {

// A path into an object: "spec", "spec.volumes[0].name", "spec.capacity[storage]".
// Validation makes a path for every field it checks and prints one only for a field that is
// wrong, so a path is held inline (no allocation) unless it is unusually long.
class Path {
 public:
  Path() = default;
  explicit Path(std::string_view root) { Append(root); }

  Path Child(std::string_view name) const;         // a.b
  Path Index(size_t i) const;                      // a[3]
  Path Key(std::string_view key) const;            // a[key]
  std::string str() const { return std::string(view()); }
  std::string_view view() const {
    return long_.empty() ? std::string_view(inline_, size_) : std::string_view(long_);
  }
  bool empty() const { return view().empty(); }

 private:
  void Append(std::string_view s);

  static constexpr size_t kInline = 96;
  char inline_[kInline];
  size_t size_ = 0;   // of inline_, while long_ is empty
  std::string long_;  // the path, once it outgrew inline_
};

enum class FieldErrorType {
  kNotFound,      // "Not found"
  kRequired,      // "Required value"
  kDuplicate,     // "Duplicate value"
  kInvalid,       // "Invalid value"
  kNotSupported,  // "Unsupported value"
  kForbidden,     // "Forbidden"
  kTooLong,       // "Too long"
  kTooMany,       // "Too many"
  kInternal,      // "Internal error"
  kTypeInvalid,   // "Invalid value" (wrong JSON type)
};

std::string_view FieldErrorTypeString(FieldErrorType t);

// A rendered bad value: strings are Go-%q quoted, numbers and booleans plain.
struct BadValue {
  std::string text;
  bool present = false;

  static BadValue None() { return {}; }
  static BadValue String(std::string_view s);
  static BadValue Int(int64_t v);
  static BadValue Raw(std::string text) { return {std::move(text), true}; }
  bool operator==(const BadValue&) const = default;
};

struct FieldError {
  FieldErrorType type = FieldErrorType::kInvalid;
  std::string field;
  BadValue value;
  std::string detail;

  // "<type>: <value>: <detail>", the part after the field path (Kubernetes' ErrorBody).
  std::string Body() const;
  // "<field>: <body>".
  std::string ToString() const;
  bool operator==(const FieldError&) const = default;
};

using FieldErrors = std::vector<FieldError>;

// Constructors named as in Kubernetes' field package.
FieldError Required(const Path& p, std::string detail = {});
FieldError Invalid(const Path& p, BadValue v, std::string detail);
FieldError Invalid(const Path& p, std::string_view v, std::string detail);
FieldError Invalid(const Path& p, int64_t v, std::string detail);
FieldError NotSupported(const Path& p, std::string_view v, const std::vector<std::string_view>& valid);
FieldError NotSupported(const Path& p, BadValue v, const std::vector<std::string_view>& valid);
FieldError Duplicate(const Path& p, std::string_view v);
FieldError Forbidden(const Path& p, std::string detail);
FieldError NotFound(const Path& p, std::string_view v);
FieldError TooLong(const Path& p, size_t max_len);
FieldError TooMany(const Path& p, size_t actual, size_t max);

// Go's strconv.Quote: "a\"b\n" -> "\"a\\\"b\\n\"".
std::string GoQuote(std::string_view s);

// Kubernetes' aggregate of a list: one error prints alone, several as "[a, b]".
std::string AggregateMessage(const FieldErrors& errs);

inline void Append(FieldErrors& to, FieldErrors&& from) {
  for (auto& e : from) to.push_back(std::move(e));
}

}  // namespace kvol::api
