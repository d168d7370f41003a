// The JSON codec for kvol's API structs: decoding reports wrong types as field errors and keeps
// every field it does not model in `unknown_fields`; encoding writes Kubernetes' JSON, leaving out
// empty optional fields (Go's omitempty) and putting the unknown fields back unchanged.
//
// An API struct lists its fields once:
//
//   struct HostPathVolumeSource {
//     std::string path;
//     std::optional<std::string> type;
//     KVOL_FIELDS(HostPathVolumeSource) {
//       v("path", s.path);
//       v("type", s.type);
//     }
//   };
//
// Field types: std::string, bool, int32_t, int64_t, Quantity, Time, MicroTime, Json (kept raw),
// std::optional<T> (present even when empty, like a Go pointer) and Boxed<T> (the same, on the
// heap), std::vector<T>,
// std::map<std::string, T>, and nested API structs. Plain values are omitted when empty;
// `v("attached", s.attached, Emit::kAlways)` writes them regardless.
#pragma once

#include <concepts>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/boxed.h"

#include "api/field_errors.h"
#include "api/quantity.h"
#include "api/time.h"
#include "base/status.h"

namespace kvol::api {

using Json = nlohmann::json;

enum class Emit { kOmitEmpty, kAlways };

#define KVOL_FIELDS(Type)                      \
  ::kvol::api::Json unknown_fields;            \
  bool operator==(const Type&) const = default; \
  template <class S, class V>                  \
  static void Fields(S& s, V& v)

template <class T>
concept ApiStruct = requires(T& t) {
  { t.unknown_fields } -> std::convertible_to<const Json&>;
};

// Collects decode errors with the path of the value being decoded.
class DecodeContext {
 public:
  explicit DecodeContext(FieldErrors* errors) : errors_(errors) {}

  void PushField(std::string_view name) { path_.push_back({Seg::kField, name, 0}); }
  void PushIndex(size_t i) { path_.push_back({Seg::kIndex, {}, i}); }
  void PushKey(std::string_view key) { path_.push_back({Seg::kKey, key, 0}); }
  void Pop() { path_.pop_back(); }

  // Records "<path>: Invalid value: <json>: <detail>".
  void Fail(const Json& value, std::string detail);
  void Fail(FieldError e);
  Path CurrentPath() const;

 private:
  struct Seg {
    enum Kind { kField, kIndex, kKey } kind;
    std::string_view name;
    size_t index;
  };
  std::vector<Seg> path_;
  FieldErrors* errors_;
};

// Parsing JSON text with kvol's limits: nesting deeper than kMaxJsonDepth is refused (decoding
// copies values recursively), and errors say where: line and column, 1-based.
inline constexpr int kMaxJsonDepth = 256;
struct JsonParseError {
  int line = 0;
  int column = 0;
  std::string message;
};
bool ParseJson(std::string_view text, Json* out, JsonParseError* err);
// InvalidArgument "line L, column C: <reason>" on error.
StatusOr<Json> ParseJson(std::string_view text);
// The deepest nesting of arrays and objects in `text`, ignoring brackets inside strings, and
// the offset just past the first complete top-level value (npos if it never closes).
size_t ScanJson(std::string_view text, size_t pos, int* max_depth);

// "must be <want>, not <what got is>", the detail of a decode type error.
std::string ExpectedType(const char* want, const Json& got);

// JSON text of a value; invalid UTF-8 in strings becomes U+FFFD instead of an exception.
std::string DumpJson(const Json& v);

// Renders a JSON value for an error message, shortened if long.
std::string JsonValueForError(const Json& v);
// A JSON number as Go's encoding/json writes it ("1.5", "1000", "1e+21").
std::string FormatJsonNumber(const Json& v);

// ---- decoding (j is never null here: null means "absent" and is skipped by the caller) ----
void Decode(const Json& j, std::string& out, DecodeContext& c);
void Decode(const Json& j, bool& out, DecodeContext& c);
void Decode(const Json& j, int32_t& out, DecodeContext& c);
void Decode(const Json& j, int64_t& out, DecodeContext& c);
void Decode(const Json& j, Quantity& out, DecodeContext& c);
void Decode(const Json& j, Time& out, DecodeContext& c);
void Decode(const Json& j, MicroTime& out, DecodeContext& c);
void Decode(const Json& j, Json& out, DecodeContext& c);
template <class T>
void Decode(const Json& j, std::optional<T>& out, DecodeContext& c);
template <class T>
void Decode(const Json& j, Boxed<T>& out, DecodeContext& c);
template <class T>
void Decode(const Json& j, std::vector<T>& out, DecodeContext& c);
template <class T>
void Decode(const Json& j, std::map<std::string, T>& out, DecodeContext& c);
template <ApiStruct T>
void Decode(const Json& j, T& out, DecodeContext& c);

// ---- encoding ----
void Encode(const std::string& v, Json& out);
void Encode(bool v, Json& out);
void Encode(int32_t v, Json& out);
void Encode(int64_t v, Json& out);
void Encode(const Quantity& v, Json& out);
void Encode(const Time& v, Json& out);
void Encode(const MicroTime& v, Json& out);
void Encode(const Json& v, Json& out);
template <class T>
void Encode(const std::optional<T>& v, Json& out);
template <class T>
void Encode(const Boxed<T>& v, Json& out);
template <class T>
void Encode(const std::vector<T>& v, Json& out);
template <class T>
void Encode(const std::map<std::string, T>& v, Json& out);
template <ApiStruct T>
void Encode(const T& v, Json& out);

// ---- encoding straight to JSON text ----
// The same document as DumpJson(EncodeStruct(v)), written without building a Json tree, so
// about three times faster. Object keys come in the order the struct lists its fields (as
// Kubernetes writes them), then unknown fields in sorted order; maps are sorted by key.
void EncodeText(const std::string& v, std::string& out);
void EncodeText(bool v, std::string& out);
void EncodeText(int32_t v, std::string& out);
void EncodeText(int64_t v, std::string& out);
void EncodeText(const Quantity& v, std::string& out);
void EncodeText(const Time& v, std::string& out);
void EncodeText(const MicroTime& v, std::string& out);
void EncodeText(const Json& v, std::string& out);
template <class T>
void EncodeText(const std::optional<T>& v, std::string& out);
template <class T>
void EncodeText(const Boxed<T>& v, std::string& out);
template <class T>
void EncodeText(const std::vector<T>& v, std::string& out);
template <class T>
void EncodeText(const std::map<std::string, T>& v, std::string& out);
template <ApiStruct T>
void EncodeText(const T& v, std::string& out);
// A JSON string literal, escaped as DumpJson escapes it (invalid UTF-8 becomes U+FFFD).
void AppendJsonString(std::string_view s, std::string& out);

// ---- decoding straight from JSON text ----
// DecodeJsonText(text, out) decodes an API struct from JSON text without building a Json tree
// (several times faster than ParseJson + DecodeStruct) and gives exactly what they give when
// that succeeds without errors. It returns false, leaving `out` alone, for anything it does
// not take on: every error, duplicate keys, non-integer numbers where integers go, and so on;
// the caller then decodes the slow way, which also words the error.
namespace text_decode {
class Reader {
 public:
  explicit Reader(std::string_view text) : t_(text) {}
  // Each consumes what it reads after any whitespace before it, and returns false (leaving
  // the position anywhere) if the input is not what it reads.
  bool Consume(char c);
  bool Null();                          // the literal null
  bool String(std::string* out);        // a string, unescaped
  // An object key and the ':' after it; keys with escapes are left to the slow path.
  bool Key(std::string_view* key);
  bool Bool(bool* out);
  bool Integer(int64_t* out);           // an integer with no fraction or exponent
  bool Raw(Json* out);                  // any value, as a Json tree
  bool Enter() { return ++depth_ <= kMaxJsonDepth; }
  void Leave() { --depth_; }
  bool AtEnd();                         // only whitespace is left

 private:
  void SkipSpace();
  bool SkipValue();                     // past one value, checking its nesting
  std::string_view t_;
  size_t pos_ = 0;
  int depth_ = 0;
};

bool Read(Reader& r, std::string& out);
bool Read(Reader& r, bool& out);
bool Read(Reader& r, int32_t& out);
bool Read(Reader& r, int64_t& out);
bool Read(Reader& r, Quantity& out);
bool Read(Reader& r, Time& out);
bool Read(Reader& r, MicroTime& out);
bool Read(Reader& r, Json& out);
template <class T>
bool Read(Reader& r, std::optional<T>& out);
template <class T>
bool Read(Reader& r, Boxed<T>& out);
template <class T>
bool Read(Reader& r, std::vector<T>& out);
template <class T>
bool Read(Reader& r, std::map<std::string, T>& out);
template <ApiStruct T>
bool Read(Reader& r, T& out);
}  // namespace text_decode

template <ApiStruct T>
bool DecodeJsonText(std::string_view text, T& out);

// Whether a plain (non-struct) value is left out under omitempty.
inline bool IsOmitted(const std::string& v) { return v.empty(); }
inline bool IsOmitted(bool v) { return !v; }
inline bool IsOmitted(int32_t v) { return v == 0; }
inline bool IsOmitted(int64_t v) { return v == 0; }
inline bool IsOmitted(const Quantity&) { return false; }
inline bool IsOmitted(const Time&) { return false; }
inline bool IsOmitted(const MicroTime&) { return false; }
inline bool IsOmitted(const Json& v) { return v.is_null(); }
template <class T>
bool IsOmitted(const std::optional<T>& v) {
  return !v.has_value();
}
template <class T>
bool IsOmitted(const Boxed<T>& v) {
  return !v.has_value();
}
template <class T>
bool IsOmitted(const std::vector<T>& v) {
  return v.empty();
}
template <class T>
bool IsOmitted(const std::map<std::string, T>& v) {
  return v.empty();
}

namespace codec_internal {

struct FieldDecoder {
  const Json& obj;
  DecodeContext& ctx;
  size_t seen = 0;

  template <class T>
  void operator()(std::string_view key, T& field, Emit = Emit::kOmitEmpty) {
    auto it = obj.find(key);
    if (it == obj.end()) return;
    ++seen;
    if (it->is_null()) return;
    ctx.PushField(key);
    Decode(*it, field, ctx);
    ctx.Pop();
  }
};

struct FieldNameMatcher {
  std::string_view key;
  bool found = false;

  template <class T>
  void operator()(std::string_view k, T&, Emit = Emit::kOmitEmpty) {
    found = found || k == key;
  }
};

struct FieldEncoder {
  Json& obj;

  template <class T>
  void operator()(std::string_view key, const T& v, Emit emit = Emit::kOmitEmpty) {
    if constexpr (ApiStruct<T>) {
      Json tmp;
      Encode(v, tmp);
      if (emit == Emit::kAlways || !tmp.empty()) obj[std::string(key)] = std::move(tmp);
    } else {
      if (emit == Emit::kOmitEmpty && IsOmitted(v)) return;
      Encode(v, obj[std::string(key)]);
    }
  }
};

// Writes "key":value pairs into a JSON object being written to `out`. Keys are recorded when
// the struct has unknown fields, which must not repeat a key already written.
struct TextFieldEncoder {
  std::string& out;
  bool first = true;
  std::vector<std::string_view>* written = nullptr;

  void Key(std::string_view key) {
    if (!first) out += ',';
    first = false;
    AppendJsonString(key, out);
    out += ':';
  }

  template <class T>
  void operator()(std::string_view key, const T& v, Emit emit = Emit::kOmitEmpty) {
    if constexpr (ApiStruct<T>) {
      const size_t mark = out.size();
      const bool was_first = first;
      Key(key);
      const size_t start = out.size();
      EncodeText(v, out);
      if (emit != Emit::kAlways && out.size() == start + 2) {  // "{}": omitted
        out.resize(mark);
        first = was_first;
        return;
      }
    } else {
      if (emit == Emit::kOmitEmpty && IsOmitted(v)) return;
      Key(key);
      EncodeText(v, out);
    }
    if (written) written->push_back(key);
  }
};

}  // namespace codec_internal

template <class T>
void Decode(const Json& j, std::optional<T>& out, DecodeContext& c) {
  out.emplace();
  Decode(j, *out, c);
}

template <class T>
void Decode(const Json& j, Boxed<T>& out, DecodeContext& c) {
  out.emplace();
  Decode(j, *out, c);
}

template <class T>
void Decode(const Json& j, std::vector<T>& out, DecodeContext& c) {
  if (!j.is_array()) {
    c.Fail(j, ExpectedType("a list", j));
    return;
  }
  out.clear();
  out.resize(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    if (j[i].is_null()) continue;
    c.PushIndex(i);
    Decode(j[i], out[i], c);
    c.Pop();
  }
}

template <class T>
void Decode(const Json& j, std::map<std::string, T>& out, DecodeContext& c) {
  if (!j.is_object()) {
    c.Fail(j, ExpectedType("an object", j));
    return;
  }
  out.clear();
  for (auto it = j.begin(); it != j.end(); ++it) {
    T& slot = out[it.key()];
    if (it.value().is_null()) continue;
    c.PushKey(it.key());
    Decode(it.value(), slot, c);
    c.Pop();
  }
}

template <ApiStruct T>
void Decode(const Json& j, T& out, DecodeContext& c) {
  if (!j.is_object()) {
    c.Fail(j, ExpectedType("an object", j));
    return;
  }
  codec_internal::FieldDecoder d{j, c};
  T::Fields(out, d);
  if (d.seen == j.size()) return;
  out.unknown_fields = Json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    codec_internal::FieldNameMatcher m{it.key()};
    T::Fields(out, m);
    if (!m.found) out.unknown_fields[it.key()] = it.value();
  }
}

template <class T>
void Encode(const std::optional<T>& v, Json& out) {
  if (v.has_value()) {
    Encode(*v, out);
  } else {
    out = nullptr;
  }
}

template <class T>
void Encode(const Boxed<T>& v, Json& out) {
  if (v.has_value()) {
    Encode(*v, out);
  } else {
    out = nullptr;
  }
}

template <class T>
void Encode(const std::vector<T>& v, Json& out) {
  out = Json::array();
  for (const auto& e : v) {
    Json item;
    Encode(e, item);
    if constexpr (ApiStruct<T>) {
      if (item.is_null()) item = Json::object();
    }
    out.push_back(std::move(item));
  }
}

template <class T>
void Encode(const std::map<std::string, T>& v, Json& out) {
  out = Json::object();
  for (const auto& [k, e] : v) Encode(e, out[k]);
}

template <ApiStruct T>
void Encode(const T& v, Json& out) {
  out = Json::object();
  codec_internal::FieldEncoder e{out};
  T::Fields(v, e);
  if (v.unknown_fields.is_object()) {
    for (auto it = v.unknown_fields.begin(); it != v.unknown_fields.end(); ++it) {
      out.emplace(it.key(), it.value());  // never replaces a modelled field
    }
  }
}

template <class T>
void EncodeText(const std::optional<T>& v, std::string& out) {
  if (v.has_value()) {
    EncodeText(*v, out);
  } else {
    out += "null";
  }
}

template <class T>
void EncodeText(const Boxed<T>& v, std::string& out) {
  if (v.has_value()) {
    EncodeText(*v, out);
  } else {
    out += "null";
  }
}

template <class T>
void EncodeText(const std::vector<T>& v, std::string& out) {
  out += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    EncodeText(v[i], out);
  }
  out += ']';
}

template <class T>
void EncodeText(const std::map<std::string, T>& v, std::string& out) {
  out += '{';
  bool first = true;
  for (const auto& [k, e] : v) {
    if (!first) out += ',';
    first = false;
    AppendJsonString(k, out);
    out += ':';
    EncodeText(e, out);
  }
  out += '}';
}

template <ApiStruct T>
void EncodeText(const T& v, std::string& out) {
  out += '{';
  const bool unknown = v.unknown_fields.is_object() && !v.unknown_fields.empty();
  std::vector<std::string_view> written;
  codec_internal::TextFieldEncoder e{out, true, unknown ? &written : nullptr};
  T::Fields(v, e);
  if (unknown) {
    for (auto it = v.unknown_fields.begin(); it != v.unknown_fields.end(); ++it) {
      bool known = false;
      for (auto w : written) known = known || w == it.key();
      if (known) continue;  // never replaces a modelled field
      e.Key(it.key());
      EncodeText(it.value(), out);
    }
  }
  out += '}';
}

namespace text_decode {

// Reads the value of one struct field, if `key` names it.
struct FieldReader {
  Reader& r;
  std::string_view key;
  bool matched = false;
  bool ok = false;

  template <class T>
  void operator()(std::string_view name, T& field, Emit = Emit::kOmitEmpty) {
    if (matched || name != key) return;
    matched = true;
    ok = Read(r, field);
  }
};

template <class T>
bool Read(Reader& r, std::optional<T>& out) {
  out.emplace();
  return Read(r, *out);
}

template <class T>
bool Read(Reader& r, Boxed<T>& out) {
  out.emplace();
  return Read(r, *out);
}

template <class T>
bool Read(Reader& r, std::vector<T>& out) {
  if (!r.Consume('[') || !r.Enter()) return false;
  out.clear();
  if (!r.Consume(']')) {
    do {
      T& item = out.emplace_back();
      if (!r.Null() && !Read(r, item)) return false;
    } while (r.Consume(','));
    if (!r.Consume(']')) return false;
  }
  r.Leave();
  return true;
}

template <class T>
bool Read(Reader& r, std::map<std::string, T>& out) {
  if (!r.Consume('{') || !r.Enter()) return false;
  out.clear();
  if (!r.Consume('}')) {
    do {
      std::string_view key;
      if (!r.Key(&key)) return false;
      auto [it, added] = out.try_emplace(std::string(key));
      if (!added) return false;  // a repeated key: the slow path knows which one wins
      if (!r.Null() && !Read(r, it->second)) return false;
    } while (r.Consume(','));
    if (!r.Consume('}')) return false;
  }
  r.Leave();
  return true;
}

template <ApiStruct T>
bool Read(Reader& r, T& out) {
  if (!r.Consume('{') || !r.Enter()) return false;
  if (!r.Consume('}')) {
    // Keys so far, to refuse repeats: on the stack for the objects kvol reads (a few keys each,
    // and one such read per struct of every object decoded), in a vector beyond that.
    constexpr size_t kInlineKeys = 16;
    std::string_view inline_seen[kInlineKeys];
    size_t inline_count = 0;
    std::vector<std::string_view> more_seen;
    do {
      std::string_view key;
      if (!r.Key(&key)) return false;
      for (size_t i = 0; i < inline_count; ++i) {
        if (inline_seen[i] == key) return false;
      }
      for (auto k : more_seen) {
        if (k == key) return false;
      }
      if (inline_count < kInlineKeys) {
        inline_seen[inline_count++] = key;
      } else {
        more_seen.push_back(key);
      }
      if (r.Null()) {     // null is absent for a field, and kept as null if unknown
        codec_internal::FieldNameMatcher m{key};
        T::Fields(out, m);
        if (!m.found) {
          if (!out.unknown_fields.is_object()) out.unknown_fields = Json::object();
          out.unknown_fields[std::string(key)] = nullptr;
        }
        continue;
      }
      FieldReader f{r, key};
      T::Fields(out, f);
      if (f.matched) {
        if (!f.ok) return false;
        continue;
      }
      Json value;
      if (!r.Raw(&value)) return false;
      if (!out.unknown_fields.is_object()) out.unknown_fields = Json::object();
      out.unknown_fields[std::string(key)] = std::move(value);
    } while (r.Consume(','));
    if (!r.Consume('}')) return false;
  }
  r.Leave();
  return true;
}

}  // namespace text_decode

template <ApiStruct T>
bool DecodeJsonText(std::string_view text, T& out) {
  text_decode::Reader r(text);
  T decoded;
  if (!text_decode::Read(r, decoded) || !r.AtEnd()) return false;
  out = std::move(decoded);
  return true;
}

// Entry points.
template <ApiStruct T>
T DecodeStruct(const Json& j, FieldErrors* errors) {
  T out;
  DecodeContext c(errors);
  Decode(j, out, c);
  return out;
}

template <ApiStruct T>
Json EncodeStruct(const T& v) {
  Json j;
  Encode(v, j);
  return j;
}

// JSON text of an API struct (see EncodeText).
template <ApiStruct T>
std::string EncodeJsonText(const T& v) {
  std::string out;
  out.reserve(1024);
  EncodeText(v, out);
  return out;
}

}  // namespace kvol::api
