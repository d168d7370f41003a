// YAML and JSON manifest reading. yaml-cpp supplies parse events; this file turns them into JSON
// with YAML 1.1 scalar resolution, bounded depth and bounded alias expansion.
#include "manifest/manifest.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "base/strings.h"

namespace kvol::manifest {
namespace {

using api::Json;

// ---------------------------------------------------------------------------------------------
// YAML 1.1 plain scalar resolution (what Go's yaml.v2 does for untyped values).

bool IsNullScalar(std::string_view s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

bool ResolveBool(std::string_view s, bool* out) {
  static constexpr std::string_view kTrue[] = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                               "True", "TRUE", "on",  "On",  "ON"};
  static constexpr std::string_view kFalse[] = {"n",     "N",     "no",  "No",  "NO", "false",
                                                "False", "FALSE", "off", "Off", "OFF"};
  for (auto t : kTrue) {
    if (s == t) return *out = true, true;
  }
  for (auto f : kFalse) {
    if (s == f) return *out = false, true;
  }
  return false;
}

// Go's strconv.ParseInt(s, 0, 64) / ParseUint: sign, then 0x/0o/0b/leading-0 octal or decimal.
bool ResolveInt(std::string s, Json* out) {
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (s.empty()) return false;
  bool neg = false;
  size_t i = 0;
  if (s[0] == '+' || s[0] == '-') {
    neg = s[0] == '-';
    i = 1;
  }
  int base = 10;
  if (s.size() - i > 1 && s[i] == '0') {
    char p = s[i + 1];
    if (p == 'x' || p == 'X') {
      base = 16, i += 2;
    } else if (p == 'o' || p == 'O') {
      base = 8, i += 2;
    } else if (p == 'b' || p == 'B') {
      base = 2, i += 2;
    } else {
      base = 8, i += 1;
    }
  }
  if (i >= s.size()) return false;
  uint64_t mag = 0;
  auto r = std::from_chars(s.data() + i, s.data() + s.size(), mag, base);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return false;
  if (neg) {
    if (mag > static_cast<uint64_t>(INT64_MAX) + 1) return false;
    *out = mag == static_cast<uint64_t>(INT64_MAX) + 1 ? INT64_MIN : -static_cast<int64_t>(mag);
  } else if (mag <= static_cast<uint64_t>(INT64_MAX)) {
    *out = static_cast<int64_t>(mag);
  } else {
    *out = mag;
  }
  return true;
}

// ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$, then .inf/.nan forms.
bool ResolveFloat(std::string_view s, Json* out, std::string* err) {
  static constexpr std::string_view kInf[] = {".inf",  ".Inf",  ".INF",  "+.inf", "+.Inf",
                                              "+.INF", "-.inf", "-.Inf", "-.INF"};
  static constexpr std::string_view kNan[] = {".nan", ".NaN", ".NAN"};
  for (auto v : kInf) {
    if (s == v) return *err = "infinity is not a JSON value", true;
  }
  for (auto v : kNan) {
    if (s == v) return *err = "NaN is not a JSON value", true;
  }
  std::string plain(s);
  plain.erase(std::remove(plain.begin(), plain.end(), '_'), plain.end());
  size_t i = 0, n = plain.size();
  auto digit = [&](size_t k) { return k < n && plain[k] >= '0' && plain[k] <= '9'; };
  if (i < n && (plain[i] == '+' || plain[i] == '-')) ++i;
  if (i < n && plain[i] == '.') {
    ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  } else {
    if (!digit(i)) return false;
    while (digit(i)) ++i;
    if (i < n && plain[i] == '.') {
      ++i;
      while (digit(i)) ++i;
    }
  }
  if (i < n && (plain[i] == 'e' || plain[i] == 'E')) {
    ++i;
    if (i < n && (plain[i] == '+' || plain[i] == '-')) ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  if (i != n) return false;
  double d = std::strtod(plain.c_str(), nullptr);
  if (!std::isfinite(d)) return *err = "number out of range", true;
  *out = d;
  return true;
}

// Resolves a plain scalar; `err` is set for values JSON cannot hold.
Json ResolvePlain(const std::string& s, std::string* err) {
  if (IsNullScalar(s)) return nullptr;
  bool b;
  if (ResolveBool(s, &b)) return b;
  Json j;
  if (ResolveInt(s, &j)) return j;
  if (ResolveFloat(s, &j, err)) return j;
  return s;
}

std::string KeyText(const Json& k) {
  if (k.is_string()) return k.get<std::string>();
  if (k.is_null()) return "null";
  if (k.is_boolean()) return k.get<bool>() ? "true" : "false";
  if (k.is_number()) return api::FormatJsonNumber(k);
  return api::DumpJson(k);
}

// Builds JSON from parse events with an explicit stack: no recursion on nesting.
class JsonBuilder : public YAML::EventHandler {
 public:
  // `text` is the chunk being parsed, for checks yaml-cpp does not make.
  JsonBuilder(std::string_view text, size_t budget) : budget_(budget) {
    size_t pos = 0;
    while (pos <= text.size()) {
      size_t nl = text.find('\n', pos);
      lines_.push_back(text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos));
      if (nl == std::string_view::npos) break;
      pos = nl + 1;
    }
  }

  bool has_error() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  const YAML::Mark& error_mark() const { return error_mark_; }
  std::vector<std::pair<Json, int>>& documents() { return docs_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    stack_.clear();
    anchors_.clear();
    doc_line_ = mark.line + 1;
    have_root_ = false;
  }
  void OnDocumentEnd() override {
    if (!has_error() && have_root_) docs_.emplace_back(std::move(root_), doc_line_);
  }
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Add(mark, nullptr, anchor, 1);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) return Fail(mark, "unknown anchor");
    Add(mark, it->second.first, 0, it->second.second);
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    Json v;
    std::string err;
    last_plain_ = tag == "?";
    if (tag == "?") {
      v = ResolvePlain(value, &err);
    } else if (tag == "tag:yaml.org,2002:null") {
      v = nullptr;
    } else if (tag == "tag:yaml.org,2002:bool" || tag == "tag:yaml.org,2002:int" ||
               tag == "tag:yaml.org,2002:float") {
      v = ResolvePlain(value, &err);
      if (v.is_string()) err = "cannot read " + api::GoQuote(value) + " as " + tag.substr(18);
    } else {
      v = value;  // quoted, block or explicitly tagged: a string
    }
    if (!err.empty()) return Fail(mark, err);
    // yaml-cpp reads a bare word on a line of its own inside a block map as a key with no value;
    // YAML (and kubectl) require the ':' indicator.
    if (!stack_.empty() && stack_.back().block_map && !stack_.back().have_key && mark.line >= 0 &&
        static_cast<size_t>(mark.line) < lines_.size()) {
      std::string_view l = lines_[mark.line];
      size_t col = static_cast<size_t>(std::max(mark.column, 0));
      bool explicit_key = l.substr(0, std::min(col, l.size())).find('?') != std::string_view::npos;
      if (col < l.size() && !explicit_key && l.find(':', col) == std::string_view::npos) {
        return Fail(mark, "could not find expected ':'");
      }
    }
    Add(mark, std::move(v), anchor, 1);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Push(mark, Json::array(), anchor);
  }
  void OnSequenceEnd() override { Pop(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value style) override {
    Push(mark, Json::object(), anchor);
    if (!stack_.empty() && !has_error())
      stack_.back().block_map = style != YAML::EmitterStyle::Flow;
  }
  void OnMapEnd() override { Pop(); }

 private:
  struct Frame {
    Json value;
    YAML::anchor_t anchor;
    size_t count;  // values inside, for the alias budget
    YAML::Mark start;
    bool block_map = false;
    bool have_key = false;
    bool merge_key = false;  // the pending key is YAML's merge key "<<"
    std::string key;
    YAML::Mark key_mark;
    std::map<std::string, int> key_lines;  // maps: where each key was first seen
    std::vector<Json> merges;              // maps merged in with "<<", in order
  };

  void Fail(const YAML::Mark& mark, std::string msg) {
    if (error_.empty()) {
      error_ = std::move(msg);
      error_mark_ = mark;
    }
  }

  bool Spend(const YAML::Mark& mark, size_t n) {
    if (n > budget_) {
      Fail(mark, "document expands to too many values (aliases nested too deeply?)");
      return false;
    }
    budget_ -= n;
    return true;
  }

  void Push(const YAML::Mark& mark, Json v, YAML::anchor_t anchor) {
    if (has_error()) return;
    if (static_cast<int>(stack_.size()) >= kMaxDepth) {
      return Fail(mark, "nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    if (!Spend(mark, 1)) return;
    // A map in key position cannot become a JSON key.
    if (!stack_.empty() && stack_.back().value.is_object() && !stack_.back().have_key) {
      return Fail(mark, "a map or list cannot be a mapping key");
    }
    stack_.push_back(Frame{std::move(v), anchor, 1, mark, false, false, false, {}, {}, {}, {}});
  }

  void Pop() {
    if (has_error() || stack_.empty()) return;
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    if (f.value.is_object() && f.have_key) f.value[f.key] = nullptr;
    // Merged maps add only keys the map does not have; earlier ones win over later ones.
    for (const Json& m : f.merges) {
      for (auto it = m.begin(); it != m.end(); ++it) {
        if (!f.value.contains(it.key())) f.value[it.key()] = it.value();
      }
    }
    Place(f.start, std::move(f.value), f.anchor, f.count);
  }

  void Add(const YAML::Mark& mark, Json v, YAML::anchor_t anchor, size_t count) {
    if (has_error()) return;
    if (!Spend(mark, count)) return;
    Place(mark, std::move(v), anchor, count);
  }

  void Place(const YAML::Mark& mark, Json v, YAML::anchor_t anchor, size_t count) {
    if (anchor != 0) {
      // Keeping a copy for later aliases costs as much as the value itself.
      if (!Spend(mark, count)) return;
      anchors_[anchor] = {v, count};
    }
    if (stack_.empty()) {
      root_ = std::move(v);
      have_root_ = true;
      return;
    }
    Frame& parent = stack_.back();
    parent.count += count;
    if (parent.value.is_array()) {
      parent.value.push_back(std::move(v));
      return;
    }
    if (!parent.have_key) {
      if (v.is_array() || v.is_object()) return Fail(mark, "a map or list cannot be a mapping key");
      if (v.is_null()) return Fail(mark, "a null mapping key is not supported");
      parent.merge_key = last_plain_ && v == "<<";
      if (parent.merge_key) {
        parent.have_key = true;
        return;
      }
      parent.key = KeyText(v);
      parent.key_mark = mark;
      parent.have_key = true;
      auto [it, inserted] = parent.key_lines.emplace(parent.key, mark.line + 1);
      if (!inserted) {
        return Fail(mark, "mapping key " + api::GoQuote(parent.key) + " already defined at line " +
                              std::to_string(it->second));
      }
      return;
    }
    if (parent.merge_key) {
      parent.have_key = false;
      parent.merge_key = false;
      if (v.is_object()) {
        parent.merges.push_back(std::move(v));
        return;
      }
      if (v.is_array() &&
          std::all_of(v.begin(), v.end(), [](const Json& x) { return x.is_object(); })) {
        for (auto& m : v) parent.merges.push_back(std::move(m));
        return;
      }
      return Fail(mark, "a merge key \"<<\" needs a map or a list of maps");
    }
    parent.value[parent.key] = std::move(v);
    parent.have_key = false;
  }

  std::vector<std::string_view> lines_;
  bool last_plain_ = false;
  size_t budget_;
  std::vector<Frame> stack_;
  std::map<YAML::anchor_t, std::pair<Json, size_t>> anchors_;
  Json root_;
  bool have_root_ = false;
  int doc_line_ = 1;
  std::vector<std::pair<Json, int>> docs_;
  std::string error_;
  YAML::Mark error_mark_;
};

// Splits a YAML stream at "---" lines, so one broken document does not hide the others.
struct Chunk {
  std::string text;
  int first_line;  // 1-based line of the chunk's first line
};

std::vector<Chunk> SplitDocuments(std::string_view text) {
  std::vector<Chunk> chunks;
  Chunk cur{"", 1};
  int line = 1;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view l = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    bool marker =
        l.substr(0, 3) == "---" && (l.size() == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r');
    if (marker && !cur.text.empty()) {
      chunks.push_back(std::move(cur));
      cur = Chunk{"", line};
    }
    if (cur.text.empty()) cur.first_line = line;
    cur.text.append(l);
    cur.text += '\n';
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
    ++line;
  }
  if (!cur.text.empty()) chunks.push_back(std::move(cur));
  return chunks;
}

bool LooksLikeJson(std::string_view text) {
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
    return c == '{' || c == '[';
  }
  return false;
}

// A stream of JSON values, as kubectl accepts in a .json file.
void ParseJsonStream(std::string_view text, std::string_view source, ReadResult* out) {
  size_t pos = 0;
  while (true) {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
    if (pos >= text.size()) return;
    int line, col;
    LineColumn(text, pos, &line, &col);
    if (text[pos] != '{' && text[pos] != '[') {
      out->errors.push_back({std::string(source), line, col,
                             "expected a JSON object, found '" + std::string(1, text[pos]) + "'"});
      return;
    }
    int depth;
    size_t end = api::ScanJson(text, pos, &depth);
    std::string_view value =
        text.substr(pos, end == std::string_view::npos ? text.npos : end - pos);
    Json j;
    api::JsonParseError e;
    if (!api::ParseJson(value, &j, &e)) {
      // Positions are within the value; shift them to the file.
      int eline = e.line + line - 1;
      int ecol = e.line == 1 ? e.column + col - 1 : e.column;
      out->errors.push_back({std::string(source), eline, ecol, e.message});
      return;
    }
    out->documents.push_back({std::move(j), std::string(source), line});
    if (end == std::string_view::npos) return;
    pos = end;
  }
}

// Expands `kind: *List` documents with `items` into their items.
void ExpandLists(ReadResult* r) {
  std::vector<Document> out;
  for (auto& d : r->documents) {
    const Json& o = d.object;
    bool list = o.is_object() && o.contains("items") && o["items"].is_array() &&
                o.contains("kind") && o["kind"].is_string() &&
                o["kind"].get_ref<const std::string&>().size() >= 4 &&
                o["kind"].get_ref<const std::string&>().ends_with("List");
    if (!list) {
      out.push_back(std::move(d));
      continue;
    }
    for (const auto& item : o["items"]) out.push_back({item, d.source, d.line});
  }
  r->documents = std::move(out);
}

}  // namespace

std::string ReadError::ToString() const {
  std::string s = source;
  if (line > 0) {
    s += ":" + std::to_string(line);
    if (column > 0) s += ":" + std::to_string(column);
  }
  return s + ": " + message;
}

namespace {

// The offset of the first character YAML does not allow in a stream (its "printable" set: TAB,
// LF, CR, 0x20-0x7E, U+0085, U+00A0-U+D7FF, U+E000-U+FFFD, U+10000 and up), or npos. `text` is
// valid UTF-8.
size_t FirstDisallowedCharacter(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    uint32_t cp;
    size_t len;
    if (c < 0x80) {
      cp = c;
      len = 1;
    } else if ((c >> 5) == 0x6) {
      cp = c & 0x1F;
      len = 2;
    } else if ((c >> 4) == 0xE) {
      cp = c & 0x0F;
      len = 3;
    } else {
      cp = c & 0x07;
      len = 4;
    }
    for (size_t k = 1; k < len && i + k < text.size(); ++k) {
      cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    }
    const bool allowed = cp == 0x09 || cp == 0x0A || cp == 0x0D || (cp >= 0x20 && cp <= 0x7E) ||
                         cp == 0x85 || (cp >= 0xA0 && cp <= 0xD7FF) ||
                         (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
    if (!allowed) return i;
    i += len;
  }
  return std::string_view::npos;
}

}  // namespace

ReadResult ParseText(std::string_view text, std::string_view source) {
  ReadResult result;
  if (LooksLikeJson(text)) {
    ParseJsonStream(text, source, &result);
    ExpandLists(&result);
    return result;
  }
  for (const Chunk& chunk : SplitDocuments(text)) {
    // YAML is Unicode text; like Go's yaml, refuse bytes that are not UTF-8.
    if (size_t bad = FirstInvalidUtf8(chunk.text); bad != std::string_view::npos) {
      int line, col;
      LineColumn(chunk.text, bad, &line, &col);
      char msg[64];
      std::snprintf(msg, sizeof msg, "invalid UTF-8 byte 0x%02x",
                    static_cast<unsigned char>(chunk.text[bad]));
      result.errors.push_back({std::string(source), chunk.first_line + line - 1, col, msg});
      continue;
    }
    // Nor characters YAML does not allow in a stream (NUL and most other controls): the YAML
    // library would turn some into other bytes.
    if (size_t bad = FirstDisallowedCharacter(chunk.text); bad != std::string_view::npos) {
      int line, col;
      LineColumn(chunk.text, bad, &line, &col);
      result.errors.push_back({std::string(source), chunk.first_line + line - 1, col,
                               "control characters are not allowed"});
      continue;
    }
    std::istringstream in(chunk.text);
    JsonBuilder builder(chunk.text, kMinValueBudget + 10 * chunk.text.size());
    try {
      YAML::Parser parser(in);
      while (parser.HandleNextDocument(builder) && !builder.has_error()) {
      }
    } catch (const YAML::Exception& e) {
      result.errors.push_back(
          {std::string(source), chunk.first_line + e.mark.line, e.mark.column + 1, e.msg});
      continue;
    }
    if (builder.has_error()) {
      result.errors.push_back({std::string(source), chunk.first_line + builder.error_mark().line,
                               builder.error_mark().column + 1, builder.error()});
      continue;
    }
    for (auto& [doc, line] : builder.documents()) {
      if (doc.is_null()) continue;  // an empty document, e.g. only comments
      result.documents.push_back(
          {std::move(doc), std::string(source), chunk.first_line + line - 1});
    }
  }
  ExpandLists(&result);
  return result;
}

ReadResult ReadPath(const std::string& path) {
  namespace fs = std::filesystem;
  auto read_stream = [](std::istream& in) {
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  if (path == "-") return ParseText(read_stream(std::cin), "<stdin>");

  ReadResult result;
  std::error_code ec;
  std::vector<std::string> files;
  if (fs::is_directory(path, ec)) {
    for (const auto& e : fs::directory_iterator(path, ec)) {
      const auto ext = e.path().extension().string();
      if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) {
        files.push_back(e.path().string());
      }
    }
    std::sort(files.begin(), files.end());
    if (ec) result.errors.push_back({path, 0, 0, ec.message()});
  } else {
    files.push_back(path);
  }
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      result.errors.push_back(
          {f, 0, 0,
           std::string("cannot read: ") + (fs::exists(f, ec) ? "permission denied or not a file"
                                                             : "no such file or directory")});
      continue;
    }
    ReadResult one = ParseText(read_stream(in), f);
    for (auto& d : one.documents) result.documents.push_back(std::move(d));
    for (auto& e : one.errors) result.errors.push_back(std::move(e));
  }
  return result;
}

}  // namespace kvol::manifest
