// Scalar codecs and error rendering for the JSON codec.
#include "api/codec.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "base/strings.h"

namespace kvol::api {

Path DecodeContext::CurrentPath() const {
  Path p;
  for (const auto& s : path_) {
    switch (s.kind) {
      case Seg::kField: p = p.Child(s.name); break;
      case Seg::kIndex: p = p.Index(s.index); break;
      case Seg::kKey: p = p.Key(s.name); break;
    }
  }
  return p;
}

void DecodeContext::Fail(const Json& value, std::string detail) {
  if (errors_ == nullptr) return;
  errors_->push_back(
      Invalid(CurrentPath(), BadValue::Raw(JsonValueForError(value)), std::move(detail)));
}

void DecodeContext::Fail(FieldError e) {
  if (errors_ != nullptr) errors_->push_back(std::move(e));
}

size_t ScanJson(std::string_view t, size_t pos, int* max_depth) {
  int depth = 0;
  *max_depth = 0;
  bool in_string = false;
  for (size_t i = pos; i < t.size(); ++i) {
    char c = t[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      *max_depth = std::max(*max_depth, ++depth);
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

bool ParseJson(std::string_view text, Json* out, JsonParseError* err) {
  int depth;
  size_t start = 0;
  while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start]))) ++start;
  ScanJson(text, start, &depth);
  if (depth > kMaxJsonDepth) {
    LineColumn(text, start, &err->line, &err->column);
    err->message = "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels";
    return false;
  }
  *out = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!out->is_discarded()) return true;
  // Parse again for the position and reason; exceptions stay inside this adapter.
  try {
    Json ignored = Json::parse(text);
    err->message = "invalid JSON";
  } catch (const Json::parse_error& e) {
    LineColumn(text, e.byte > 0 ? e.byte - 1 : 0, &err->line, &err->column);
    std::string what = e.what();
    auto p = what.find("syntax error");
    err->message = p == std::string::npos ? what : what.substr(p);
  }
  return false;
}

StatusOr<Json> ParseJson(std::string_view text) {
  Json j;
  JsonParseError e;
  if (ParseJson(text, &j, &e)) return j;
  return InvalidArgumentError("line " + std::to_string(e.line) + ", column " +
                              std::to_string(e.column) + ": " + e.message);
}

std::string FormatJsonNumber(const Json& v) {
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  double d = v.get<double>();
  if (!std::isfinite(d)) return "null";
  char buf[64];
  double a = std::fabs(d);
  std::to_chars_result r;
  if (a == 0 || (a >= 1e-6 && a < 1e21)) {
    r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::fixed);
    return std::string(buf, r.ptr);
  }
  r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  // Go writes e-7 and e+21, never e-07.
  auto e = s.find('e');
  if (e != std::string::npos) {
    size_t d = e + 2;  // past the sign
    while (d + 1 < s.size() && s[d] == '0') s.erase(d, 1);
  }
  return s;
}

std::string DumpJson(const Json& v) {
  return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void AppendJsonString(std::string_view s, std::string& out) {
  if (FirstInvalidUtf8(s) != std::string_view::npos) {
    out += DumpJson(Json(std::string(s)));  // the replacement rules of the JSON library
    return;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  size_t run = 0;  // start of the bytes not yet copied
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

void EncodeText(const std::string& v, std::string& out) { AppendJsonString(v, out); }
void EncodeText(bool v, std::string& out) { out += v ? "true" : "false"; }
void EncodeText(int32_t v, std::string& out) { out += std::to_string(v); }
void EncodeText(int64_t v, std::string& out) { out += std::to_string(v); }
void EncodeText(const Quantity& v, std::string& out) { AppendJsonString(v.ToString(), out); }
// A timestamp is digits and "-:.TZ": nothing to escape.
void EncodeText(const Time& v, std::string& out) {
  out += '"';
  v.AppendTo(out);
  out += '"';
}
void EncodeText(const MicroTime& v, std::string& out) {
  out += '"';
  v.time().AppendTo(out, true);
  out += '"';
}
void EncodeText(const Json& v, std::string& out) { out += DumpJson(v); }

std::string JsonValueForError(const Json& v) {
  std::string s;
  if (v.is_string()) {
    s = GoQuote(v.get_ref<const std::string&>());
  } else if (v.is_number()) {
    s = FormatJsonNumber(v);
  } else {
    s = DumpJson(v);
  }
  constexpr size_t kMax = 80;
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  return s;
}

namespace {
const char* TypeName(const Json& j) {
  switch (j.type()) {
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return "a number";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "a list";
    default: return "null";
  }
}

std::string Expected(const char* want, const Json& got) { return ExpectedType(want, got); }

bool ReadInt64(const Json& j, int64_t* out) {
  if (j.is_number_unsigned()) {
    uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (j.is_number_integer()) {
    *out = j.get<int64_t>();
    return true;
  }
  if (j.is_number_float()) {
    // A YAML "5.0" reaches JSON as 5, so whole floats are integers here too.
    double d = j.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < -9.2e18 || d > 9.2e18) return false;
    *out = static_cast<int64_t>(d);
    return true;
  }
  return false;
}
}  // namespace

std::string ExpectedType(const char* want, const Json& got) {
  return std::string("must be ") + want + ", not " + TypeName(got);
}

void Decode(const Json& j, std::string& out, DecodeContext& c) {
  if (!j.is_string()) return c.Fail(j, Expected("a string", j));
  out = j.get_ref<const std::string&>();
}

void Decode(const Json& j, bool& out, DecodeContext& c) {
  if (!j.is_boolean()) return c.Fail(j, Expected("a boolean", j));
  out = j.get<bool>();
}

void Decode(const Json& j, int64_t& out, DecodeContext& c) {
  if (!j.is_number()) return c.Fail(j, Expected("an integer", j));
  if (!ReadInt64(j, &out)) return c.Fail(j, "must be an integer within int64 range");
}

void Decode(const Json& j, int32_t& out, DecodeContext& c) {
  if (!j.is_number()) return c.Fail(j, Expected("an integer", j));
  int64_t v;
  if (!ReadInt64(j, &v) || v < std::numeric_limits<int32_t>::min() ||
      v > std::numeric_limits<int32_t>::max()) {
    return c.Fail(j, "must be an integer within int32 range");
  }
  out = static_cast<int32_t>(v);
}

void Decode(const Json& j, Quantity& out, DecodeContext& c) {
  std::string text;
  if (j.is_string()) {
    // Kubernetes trims spaces around a quantity string.
    const std::string& raw = j.get_ref<const std::string&>();
    size_t b = raw.find_first_not_of(" \t\r\n");
    size_t e = raw.find_last_not_of(" \t\r\n");
    text = b == std::string::npos ? std::string() : raw.substr(b, e - b + 1);
  } else if (j.is_number()) {
    text = FormatJsonNumber(j);
  } else {
    return c.Fail(j, Expected("a quantity string", j));
  }
  auto q = Quantity::Parse(text);
  if (!q.ok()) return c.Fail(Invalid(c.CurrentPath(), text, q.status().message()));
  out = *q;
}

void Decode(const Json& j, Time& out, DecodeContext& c) {
  if (!j.is_string()) return c.Fail(j, Expected("an RFC 3339 time string", j));
  auto t = Time::Parse(j.get_ref<const std::string&>());
  if (!t.ok()) return c.Fail(j, t.status().message());
  // metav1.Time holds whole seconds on the wire; keep only what a round trip keeps.
  out = Time::FromUnixSeconds(t->unix_seconds());
}

void Decode(const Json& j, MicroTime& out, DecodeContext& c) {
  if (!j.is_string()) return c.Fail(j, Expected("an RFC 3339 time string", j));
  auto t = Time::Parse(j.get_ref<const std::string&>());
  if (!t.ok()) return c.Fail(j, t.status().message());
  out = MicroTime(Time::FromUnixSeconds(t->unix_seconds(), t->nanos() / 1000 * 1000));
}

void Decode(const Json& j, Json& out, DecodeContext&) { out = j; }

namespace text_decode {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

void Reader::SkipSpace() {
  while (pos_ < t_.size() && IsSpace(t_[pos_])) ++pos_;
}

bool Reader::Consume(char c) {
  SkipSpace();
  if (pos_ < t_.size() && t_[pos_] == c) {
    ++pos_;
    return true;
  }
  return false;
}

bool Reader::Null() {
  SkipSpace();
  if (t_.substr(pos_, 4) == "null") {
    pos_ += 4;
    return true;
  }
  return false;
}

bool Reader::Bool(bool* out) {
  SkipSpace();
  if (t_.substr(pos_, 4) == "true") {
    pos_ += 4;
    *out = true;
    return true;
  }
  if (t_.substr(pos_, 5) == "false") {
    pos_ += 5;
    *out = false;
    return true;
  }
  return false;
}

bool Reader::String(std::string* out) {
  if (!Consume('"')) return false;
  out->clear();
  size_t run = pos_;  // start of the bytes not yet copied
  bool ascii = true;
  while (pos_ < t_.size()) {
    const unsigned char c = static_cast<unsigned char>(t_[pos_]);
    if (c == '"') {
      out->append(t_.data() + run, pos_ - run);
      ++pos_;
      // What the JSON parser refuses: invalid UTF-8.
      return ascii || FirstInvalidUtf8(*out) == std::string_view::npos;
    }
    if (c < 0x20) return false;
    if (c >= 0x80) ascii = false;
    if (c != '\\') {
      ++pos_;
      continue;
    }
    out->append(t_.data() + run, pos_ - run);
    if (pos_ + 1 >= t_.size()) return false;
    const char e = t_[pos_ + 1];
    pos_ += 2;
    switch (e) {
      case '"': *out += '"'; break;
      case '\\': *out += '\\'; break;
      case '/': *out += '/'; break;
      case 'b': *out += '\b'; break;
      case 'f': *out += '\f'; break;
      case 'n': *out += '\n'; break;
      case 'r': *out += '\r'; break;
      case 't': *out += '\t'; break;
      case 'u': {
        auto hex4 = [&](uint32_t* v) {
          if (pos_ + 4 > t_.size()) return false;
          *v = 0;
          for (int i = 0; i < 4; ++i) {
            const int d = HexDigit(t_[pos_ + i]);
            if (d < 0) return false;
            *v = *v * 16 + static_cast<uint32_t>(d);
          }
          pos_ += 4;
          return true;
        };
        uint32_t cp;
        if (!hex4(&cp)) return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a lone low surrogate
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t lo;
          if (t_.substr(pos_, 2) != "\\u") return false;
          pos_ += 2;
          if (!hex4(&lo) || lo < 0xDC00 || lo > 0xDFFF) return false;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        AppendUtf8(cp, *out);
        break;
      }
      default: return false;
    }
    run = pos_;
  }
  return false;
}

bool Reader::Key(std::string_view* key) {
  if (!Consume('"')) return false;
  const size_t start = pos_;
  while (pos_ < t_.size()) {
    const unsigned char c = static_cast<unsigned char>(t_[pos_]);
    if (c == '"') break;
    if (c < 0x20 || c == '\\' || c >= 0x80) return false;
    ++pos_;
  }
  if (pos_ >= t_.size()) return false;
  *key = t_.substr(start, pos_ - start);
  ++pos_;
  return Consume(':');
}

bool Reader::Integer(int64_t* out) {
  SkipSpace();
  const size_t start = pos_;
  size_t i = pos_;
  if (i < t_.size() && t_[i] == '-') ++i;
  const size_t digits = i;
  while (i < t_.size() && t_[i] >= '0' && t_[i] <= '9') ++i;
  if (i == digits) return false;
  if (t_[digits] == '0' && (i - digits > 1 || digits > start)) return false;  // 01, -0
  if (i < t_.size() && (t_[i] == '.' || t_[i] == 'e' || t_[i] == 'E')) return false;
  auto [end, ec] = std::from_chars(t_.data() + start, t_.data() + i, *out);
  if (ec != std::errc() || end != t_.data() + i) return false;
  pos_ = i;
  return true;
}

bool Reader::SkipValue() {
  SkipSpace();
  int depth = 0;
  bool in_string = false;
  for (; pos_ < t_.size(); ++pos_) {
    const char c = t_[pos_];
    if (in_string) {
      if (c == '\\') {
        ++pos_;
      } else if (c == '"') {
        in_string = false;
        if (depth == 0) {
          ++pos_;
          return true;
        }
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (depth_ + ++depth > kMaxJsonDepth) return false;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return true;  // the end of the enclosing value: a scalar ended here
      if (--depth == 0) {
        ++pos_;
        return true;
      }
    } else if (depth == 0 && (c == ',' || IsSpace(c))) {
      return true;
    }
  }
  return depth == 0 && !in_string;
}

bool Reader::Raw(Json* out) {
  SkipSpace();
  const size_t start = pos_;
  if (!SkipValue() || pos_ == start) return false;
  *out = Json::parse(t_.substr(start, pos_ - start), nullptr, /*allow_exceptions=*/false);
  return !out->is_discarded();
}

bool Reader::AtEnd() {
  SkipSpace();
  return pos_ == t_.size();
}

bool Read(Reader& r, std::string& out) { return r.String(&out); }
bool Read(Reader& r, bool& out) { return r.Bool(&out); }
bool Read(Reader& r, int64_t& out) { return r.Integer(&out); }

bool Read(Reader& r, int32_t& out) {
  int64_t v;
  if (!r.Integer(&v) || v < std::numeric_limits<int32_t>::min() ||
      v > std::numeric_limits<int32_t>::max()) {
    return false;
  }
  out = static_cast<int32_t>(v);
  return true;
}

bool Read(Reader& r, Quantity& out) {
  // Strings only: a number is written back in Go's form, which the slow path knows.
  std::string raw;
  if (!r.String(&raw)) return false;
  size_t b = raw.find_first_not_of(" \t\r\n");
  size_t e = raw.find_last_not_of(" \t\r\n");
  auto q = Quantity::Parse(b == std::string::npos ? std::string_view()
                                                  : std::string_view(raw).substr(b, e - b + 1));
  if (!q.ok()) return false;
  out = *q;
  return true;
}

// An RFC 3339 string, as the time it names.
static std::optional<Time> ReadTime(Reader& r) {
  std::string raw;
  if (!r.String(&raw)) return std::nullopt;
  auto t = Time::Parse(raw);
  if (!t.ok()) return std::nullopt;
  return *t;
}

bool Read(Reader& r, Time& out) {
  auto t = ReadTime(r);
  if (t) out = Time::FromUnixSeconds(t->unix_seconds());
  return t.has_value();
}

bool Read(Reader& r, MicroTime& out) {
  auto t = ReadTime(r);
  if (t) out = MicroTime(Time::FromUnixSeconds(t->unix_seconds(), t->nanos() / 1000 * 1000));
  return t.has_value();
}

bool Read(Reader& r, Json& out) { return r.Raw(&out); }

}  // namespace text_decode

void Encode(const std::string& v, Json& out) { out = v; }
void Encode(bool v, Json& out) { out = v; }
void Encode(int32_t v, Json& out) { out = v; }
void Encode(int64_t v, Json& out) { out = v; }
void Encode(const Quantity& v, Json& out) { out = v.ToString(); }
void Encode(const Time& v, Json& out) { out = v.ToString(); }
void Encode(const MicroTime& v, Json& out) { out = v.ToString(); }
void Encode(const Json& v, Json& out) { out = v; }

}  // namespace kvol::api
