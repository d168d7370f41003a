// The strict text-format reader.
#include "metrics/testing/text_format.h"

#include <cmath>
#include <cstdlib>
#include <set>

namespace kvol::metrics::testing {
namespace {

bool NameChar(char c, bool first, bool colon) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  return alpha || (colon && c == ':') || (!first && c >= '0' && c <= '9');
}

bool ValidName(std::string_view s, bool colon) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!NameChar(s[i], i == 0, colon)) return false;
  }
  return true;
}

StatusOr<double> ParseValue(std::string_view s) {
  if (s == "+Inf" || s == "Inf") return INFINITY;
  if (s == "-Inf") return -INFINITY;
  if (s == "NaN") return NAN;
  const std::string text(s);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || std::isnan(v) || std::isinf(v)) {
    return InvalidArgumentError("bad value \"" + text + "\"");
  }
  return v;
}

// The family a sample belongs to: its name without a histogram's or summary's suffix, when
// that family was declared so.
std::string FamilyOf(const std::string& name, const std::map<std::string, Family>& families) {
  for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
    if (name.size() <= suffix.size() || !name.ends_with(suffix)) continue;
    const std::string base = name.substr(0, name.size() - suffix.size());
    auto it = families.find(base);
    if (it != families.end() &&
        (it->second.type == "histogram" || (it->second.type == "summary" && suffix != "_bucket"))) {
      return base;
    }
  }
  return name;
}

StatusOr<Sample> ParseSample(std::string_view line) {
  Sample s;
  size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
  s.name = std::string(line.substr(0, i));
  if (!ValidName(s.name, true)) return InvalidArgumentError("bad metric name \"" + s.name + "\"");
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      size_t eq = line.find('=', i);
      if (eq == std::string_view::npos) return InvalidArgumentError("label without '='");
      const std::string name(line.substr(i, eq - i));
      if (!ValidName(name, false) || name.starts_with("__")) {
        return InvalidArgumentError("bad label name \"" + name + "\"");
      }
      i = eq + 1;
      if (i >= line.size() || line[i] != '"') return InvalidArgumentError("label value not quoted");
      ++i;
      std::string value;
      while (true) {
        if (i >= line.size()) return InvalidArgumentError("unterminated label value");
        const char c = line[i++];
        if (c == '"') break;
        if (c != '\\') {
          value += c;
          continue;
        }
        if (i >= line.size()) return InvalidArgumentError("unterminated escape");
        const char e = line[i++];
        if (e == 'n') {
          value += '\n';
        } else if (e == '\\' || e == '"') {
          value += e;
        } else {
          return InvalidArgumentError(std::string("bad escape \\") + e);
        }
      }
      if (!s.labels.emplace(name, std::move(value)).second) {
        return InvalidArgumentError("label \"" + name + "\" twice");
      }
      if (i < line.size() && line[i] == ',') {
        ++i;
        continue;
      }
      if (i < line.size() && line[i] == '}') continue;
      return InvalidArgumentError("expected ',' or '}' after a label");
    }
  }
  if (i >= line.size() || line[i] != ' ') return InvalidArgumentError("no value");
  std::string_view rest = line.substr(i + 1);
  const size_t space = rest.find(' ');
  auto v = ParseValue(rest.substr(0, space));
  if (!v.ok()) return v.status();
  s.value = *v;
  if (space != std::string_view::npos) {  // a timestamp: an integer
    const std::string ts(rest.substr(space + 1));
    char* end = nullptr;
    std::strtoll(ts.c_str(), &end, 10);
    if (ts.empty() || end != ts.c_str() + ts.size()) return InvalidArgumentError("bad timestamp");
  }
  return s;
}

Status CheckHistogram(const Family& f) {
  // Per series (labels without le): ascending le, cumulative counts, +Inf equal to _count.
  std::map<std::map<std::string, std::string>, std::vector<std::pair<double, double>>> buckets;
  std::map<std::map<std::string, std::string>, double> counts;
  std::set<std::map<std::string, std::string>> sums;
  for (const auto& s : f.samples) {
    auto labels = s.labels;
    if (s.name == f.name + "_bucket") {
      auto le = labels.find("le");
      if (le == labels.end()) return InvalidArgumentError(f.name + ": a bucket without le");
      auto bound = ParseValue(le->second);
      if (!bound.ok()) return InvalidArgumentError(f.name + ": bad le \"" + le->second + "\"");
      labels.erase(le);
      buckets[labels].emplace_back(*bound, s.value);
    } else if (s.name == f.name + "_count") {
      counts[labels] = s.value;
    } else if (s.name == f.name + "_sum") {
      sums.insert(labels);
    } else {
      return InvalidArgumentError(f.name + ": sample " + s.name + " in a histogram");
    }
  }
  for (const auto& [labels, bs] : buckets) {
    for (size_t i = 1; i < bs.size(); ++i) {
      if (!(bs[i].first > bs[i - 1].first)) {
        return InvalidArgumentError(f.name + ": buckets not in ascending order");
      }
      if (bs[i].second < bs[i - 1].second) {
        return InvalidArgumentError(f.name + ": bucket counts not cumulative");
      }
    }
    if (bs.empty() || !std::isinf(bs.back().first)) {
      return InvalidArgumentError(f.name + ": no +Inf bucket");
    }
    auto count = counts.find(labels);
    if (count == counts.end() || count->second != bs.back().second) {
      return InvalidArgumentError(f.name + ": _count is not the +Inf bucket's");
    }
    if (!sums.count(labels)) return InvalidArgumentError(f.name + ": no _sum");
  }
  if (counts.size() != buckets.size())
    return InvalidArgumentError(f.name + ": _count without buckets");
  return OkStatus();
}

}  // namespace

StatusOr<Exposition> ParseText(std::string_view text) {
  Exposition out;
  std::set<std::string> finished;  // families whose samples are over
  std::set<std::string> series;    // name + labels seen
  std::string current;             // the family of the last sample
  std::set<std::string> typed, helped;
  int n = 0;
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("line " + std::to_string(n) + ": " + why);
  };
  while (!text.empty()) {
    ++n;
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return bad("the text does not end with a newline");
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    if (line.empty()) continue;
    if (line[0] == '#') {
      const bool help = line.starts_with("# HELP ");
      const bool type = line.starts_with("# TYPE ");
      if (!help && !type) continue;  // a comment
      std::string_view rest = line.substr(7);
      const size_t space = rest.find(' ');
      const std::string name(rest.substr(0, space));
      const std::string_view arg =
          space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
      if (!ValidName(name, true)) return bad("bad metric name \"" + name + "\"");
      if (finished.count(name) || (current == name && !out.families[name].samples.empty())) {
        return bad("# " + std::string(help ? "HELP" : "TYPE") + " for " + name +
                   " after its samples");
      }
      Family& f = out.families[name];
      f.name = name;
      if (type) {
        static const std::set<std::string_view> kTypes = {"counter", "gauge", "histogram",
                                                          "summary", "untyped"};
        if (!kTypes.count(arg)) return bad("bad type \"" + std::string(arg) + "\"");
        if (!typed.insert(name).second) return bad("a second TYPE for " + name);
        f.type = std::string(arg);
      } else {
        if (!helped.insert(name).second) return bad("a second HELP for " + name);
        f.help = std::string(arg);
      }
      continue;
    }
    auto s = ParseSample(line);
    if (!s.ok()) return bad(s.status().message());
    const std::string family = FamilyOf(s->name, out.families);
    if (family != current) {
      if (!current.empty()) finished.insert(current);
      if (finished.count(family)) return bad("the samples of " + family + " are split apart");
      current = family;
    }
    std::string key = s->name + "{";
    for (const auto& [k, v] : s->labels) key += k + "=" + v + ",";
    if (!series.insert(key).second) return bad("a second sample of the same series " + key + "}");
    Family& f = out.families[family];
    f.name = family;
    if (f.type == "counter" && !(s->value >= 0)) return bad("a counter below zero");
    f.samples.push_back(*std::move(s));
  }
  for (const auto& [name, f] : out.families) {
    if (f.type == "histogram") KVOL_RETURN_IF_ERROR(CheckHistogram(f));
  }
  return out;
}

StatusOr<double> Exposition::Value(std::string_view name,
                                   const std::map<std::string, std::string>& labels) const {
  const Sample* found = nullptr;
  for (const auto& [_, f] : families) {
    for (const auto& s : f.samples) {
      if (s.name != name) continue;
      bool all = true;
      for (const auto& [k, v] : labels) {
        auto it = s.labels.find(k);
        all = all && it != s.labels.end() && it->second == v;
      }
      if (!all) continue;
      if (found) return FailedPreconditionError("more than one sample of " + std::string(name));
      found = &s;
    }
  }
  if (!found) return NotFoundError("no sample of " + std::string(name));
  return found->value;
}

}  // namespace kvol::metrics::testing
