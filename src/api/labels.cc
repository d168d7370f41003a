// Label selector lexer, parser and matcher, after Kubernetes' labels package.
#include "api/labels.h"

#include <algorithm>
#include <set>

#include "api/field_errors.h"
#include "api/names.h"
#include "base/strings.h"

namespace kvol::api::labels {
namespace {

enum class Tok {
  kEnd,
  kIdentifier,
  kIn,
  kNotIn,
  kOpenPar,
  kClosedPar,
  kComma,
  kDoesNotExist,  // !
  kEquals,
  kDoubleEquals,
  kNotEquals,
  kGreaterThan,
  kLessThan,
  kError,
};

struct Item {
  Tok tok;
  std::string lit;
};

bool IsWhitespace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool IsSpecial(char c) {
  return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

bool SpecialToken(std::string_view s, Tok* tok) {
  static constexpr std::pair<std::string_view, Tok> kTable[] = {
      {")", Tok::kClosedPar}, {",", Tok::kComma},       {"!", Tok::kDoesNotExist},
      {"==", Tok::kDoubleEquals}, {"=", Tok::kEquals},  {">", Tok::kGreaterThan},
      {"<", Tok::kLessThan},  {"!=", Tok::kNotEquals}, {"(", Tok::kOpenPar},
  };
  for (const auto& [text, t] : kTable) {
    if (text == s) {
      *tok = t;
      return true;
    }
  }
  return false;
}

std::vector<Item> Lex(std::string_view s) {
  std::vector<Item> items;
  size_t pos = 0;
  while (true) {
    while (pos < s.size() && IsWhitespace(s[pos])) ++pos;
    if (pos >= s.size()) {
      items.push_back({Tok::kEnd, ""});
      return items;
    }
    if (IsSpecial(s[pos])) {
      // Longest run of special characters that still forms a token.
      std::string buf;
      Item last{Tok::kError, ""};
      bool have = false;
      while (pos < s.size() && IsSpecial(s[pos])) {
        buf += s[pos];
        Tok t;
        if (SpecialToken(buf, &t)) {
          last = {t, buf};
          have = true;
          ++pos;
        } else if (have) {
          break;
        } else {
          ++pos;
        }
      }
      if (!have) last = {Tok::kError, "error expected: keyword found '" + buf + "'"};
      items.push_back(std::move(last));
      continue;
    }
    size_t start = pos;
    while (pos < s.size() && !IsWhitespace(s[pos]) && !IsSpecial(s[pos])) ++pos;
    std::string word(s.substr(start, pos - start));
    Tok t = word == "in" ? Tok::kIn : word == "notin" ? Tok::kNotIn : Tok::kIdentifier;
    items.push_back({t, std::move(word)});
  }
}

std::string JoinErrors(const std::vector<std::string>& msgs) {
  std::string out;
  for (size_t i = 0; i < msgs.size(); ++i) {
    if (i) out += "; ";
    out += msgs[i];
  }
  return out;
}

// Go's %#v of a []string, as Kubernetes prints bad value lists.
std::string GoStringSlice(const std::vector<std::string>& v) {
  if (v.empty()) return "[]string(nil)";
  std::string out = "[]string{";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += GoQuote(v[i]);
  }
  return out + "}";
}

class Parser {
 public:
  explicit Parser(std::string_view s) : items_(Lex(s)) {}

  StatusOr<Selector> Run() {
    std::vector<Requirement> reqs;
    auto done = [&] {
      Selector sel;
      sel.Assign(std::move(reqs));
      return sel;
    };
    while (true) {
      Item it = Lookahead();
      switch (it.tok) {
        case Tok::kIdentifier:
        case Tok::kDoesNotExist: {
          Requirement r;
          std::string err = ParseRequirement(&r);
          if (!err.empty()) return InvalidArgumentError("unable to parse requirement: " + err);
          reqs.push_back(std::move(r));
          Item next = Consume();
          if (next.tok == Tok::kEnd) return done();
          if (next.tok == Tok::kComma) {
            Item after = Lookahead();
            if (after.tok != Tok::kIdentifier && after.tok != Tok::kDoesNotExist) {
              return InvalidArgumentError("found '" + after.lit +
                                          "', expected: identifier after ','");
            }
            continue;
          }
          return InvalidArgumentError("found '" + next.lit +
                                      "', expected: ',' or 'end of string'");
        }
        case Tok::kEnd:
          return done();
        default:
          return InvalidArgumentError("found '" + it.lit +
                                      "', expected: !, identifier, or 'end of string'");
      }
    }
  }

 private:
  // In value context the keywords "in" and "notin" are plain identifiers.
  Item Lookahead(bool values = true) const {
    Item it = items_[pos_];
    if (values && (it.tok == Tok::kIn || it.tok == Tok::kNotIn)) it.tok = Tok::kIdentifier;
    return it;
  }
  Item Consume(bool values = true) {
    Item it = Lookahead(values);
    if (pos_ + 1 < items_.size()) ++pos_;
    return it;
  }

  std::string ParseRequirement(Requirement* r) {
    // Key, and the operator when it is unary.
    bool not_exist = false;
    Item key = Consume();
    if (key.tok == Tok::kDoesNotExist) {
      not_exist = true;
      key = Consume();
    }
    if (key.tok != Tok::kIdentifier) return "found '" + key.lit + "', expected: identifier";
    auto key_errs = IsQualifiedName(key.lit);
    if (!key_errs.empty()) {
      return "<nil>: Invalid value: " + GoQuote(key.lit) + ": " + JoinErrors(key_errs);
    }
    r->key = key.lit;
    Tok next = Lookahead().tok;
    if (not_exist || next == Tok::kEnd || next == Tok::kComma) {
      r->op = not_exist ? Op::kDoesNotExist : Op::kExists;
      return ValidateRequirement(*r);
    }

    Item op = Consume(/*values=*/false);
    switch (op.tok) {
      case Tok::kIn: r->op = Op::kIn; break;
      case Tok::kNotIn: r->op = Op::kNotIn; break;
      case Tok::kEquals: r->op = Op::kEquals; break;
      case Tok::kDoubleEquals: r->op = Op::kDoubleEquals; break;
      case Tok::kNotEquals: r->op = Op::kNotEquals; break;
      case Tok::kGreaterThan: r->op = Op::kGreaterThan; break;
      case Tok::kLessThan: r->op = Op::kLessThan; break;
      default: return "found '" + op.lit + "', expected: in, notin, =, ==, !=, gt, lt";
    }

    std::set<std::string> values;
    std::string err = (r->op == Op::kIn || r->op == Op::kNotIn) ? ParseValues(&values)
                                                                 : ParseExactValue(&values);
    if (!err.empty()) return err;
    r->values.assign(values.begin(), values.end());
    return ValidateRequirement(*r);
  }

  std::string ParseValues(std::set<std::string>* out) {
    Item open = Consume();
    if (open.tok != Tok::kOpenPar) return "found '" + open.lit + "' expected: '('";
    Item it = Lookahead();
    switch (it.tok) {
      case Tok::kIdentifier:
      case Tok::kComma: {
        std::string err = ParseIdentifiers(out);
        if (!err.empty()) return err;
        if (Consume().tok != Tok::kClosedPar) return "found '" + it.lit + "', expected: ')'";
        return {};
      }
      case Tok::kClosedPar:
        Consume();
        out->insert("");
        return {};
      default:
        return "found '" + it.lit + "', expected: ',', ')' or identifier";
    }
  }

  std::string ParseIdentifiers(std::set<std::string>* out) {
    while (true) {
      Item it = Consume();
      if (it.tok == Tok::kIdentifier) {
        out->insert(it.lit);
        Item next = Lookahead();
        if (next.tok == Tok::kComma) continue;
        if (next.tok == Tok::kClosedPar) return {};
        return "found '" + next.lit + "', expected: ',' or ')'";
      }
      if (it.tok == Tok::kComma) {
        if (out->empty()) out->insert("");  // "(,"
        Tok next = Lookahead().tok;
        if (next == Tok::kClosedPar) {
          out->insert("");  // ",)"
          return {};
        }
        if (next == Tok::kComma) out->insert("");  // ",,": the loop consumes the comma
        continue;
      }
      return "found '" + it.lit + "', expected: ',', or identifier";
    }
  }

  std::string ParseExactValue(std::set<std::string>* out) {
    Tok next = Lookahead().tok;
    if (next == Tok::kEnd || next == Tok::kComma) {
      out->insert("");
      return {};
    }
    Item it = Consume();
    if (it.tok == Tok::kIdentifier) {
      out->insert(it.lit);
      return {};
    }
    return "found '" + it.lit + "', expected: identifier";
  }

  std::vector<Item> items_;
  size_t pos_ = 0;
};

}  // namespace

std::string ValidateRequirement(const Requirement& r) {
  std::vector<std::string> errs;
  auto key_errs = IsQualifiedName(r.key);
  if (!key_errs.empty()) {
    errs.push_back("key: Invalid value: " + GoQuote(r.key) + ": " + JoinErrors(key_errs));
  }
  const std::string vals = GoStringSlice(r.values);
  switch (r.op) {
    case Op::kIn:
    case Op::kNotIn:
      if (r.values.empty()) {
        errs.push_back("values: Invalid value: " + vals +
                       ": for 'in', 'notin' operators, values set can't be empty");
      }
      break;
    case Op::kEquals:
    case Op::kDoubleEquals:
    case Op::kNotEquals:
      if (r.values.size() != 1) {
        errs.push_back("values: Invalid value: " + vals +
                       ": exact-match compatibility requires one single value");
      }
      break;
    case Op::kExists:
    case Op::kDoesNotExist:
      if (!r.values.empty()) {
        errs.push_back("values: Invalid value: " + vals +
                       ": values set must be empty for exists and does not exist");
      }
      break;
    case Op::kGreaterThan:
    case Op::kLessThan:
      if (r.values.size() != 1) {
        errs.push_back("values: Invalid value: " + vals +
                       ": for 'Gt', 'Lt' operators, exactly one value is required");
      }
      for (size_t i = 0; i < r.values.size(); ++i) {
        int64_t ignored;
        if (!ParseInt64(r.values[i], &ignored)) {
          errs.push_back("values[" + std::to_string(i) + "]: Invalid value: " +
                         GoQuote(r.values[i]) +
                         ": for 'Gt', 'Lt' operators, the value must be an integer");
        }
      }
      break;
  }
  for (size_t i = 0; i < r.values.size(); ++i) {
    auto v_errs = IsValidLabelValue(r.values[i]);
    if (!v_errs.empty()) {
      errs.push_back("values[" + std::to_string(i) + "][" + r.key + "]: Invalid value: " +
                     GoQuote(r.values[i]) + ": " + JoinErrors(v_errs));
    }
  }
  if (errs.empty()) return {};
  if (errs.size() == 1) return errs[0];
  std::string out = "[";
  for (size_t i = 0; i < errs.size(); ++i) {
    if (i) out += ", ";
    out += errs[i];
  }
  return out + "]";
}

bool Requirement::Matches(const StringMap& labels) const {
  auto it = labels.find(key);
  const bool has = it != labels.end();
  auto contains = [&](const std::string& v) {
    return std::binary_search(values.begin(), values.end(), v);
  };
  switch (op) {
    case Op::kIn:
    case Op::kEquals:
    case Op::kDoubleEquals:
      return has && contains(it->second);
    case Op::kNotIn:
    case Op::kNotEquals:
      return !has || !contains(it->second);
    case Op::kExists:
      return has;
    case Op::kDoesNotExist:
      return !has;
    case Op::kGreaterThan:
    case Op::kLessThan: {
      if (!has || values.size() != 1) return false;
      int64_t have, want;
      if (!ParseInt64(it->second, &have) || !ParseInt64(values[0], &want)) return false;
      return op == Op::kGreaterThan ? have > want : have < want;
    }
  }
  return false;
}

std::string Requirement::ToString() const {
  std::string s;
  if (op == Op::kDoesNotExist) s += '!';
  s += key;
  switch (op) {
    case Op::kEquals: s += "="; break;
    case Op::kDoubleEquals: s += "=="; break;
    case Op::kNotEquals: s += "!="; break;
    case Op::kIn: s += " in "; break;
    case Op::kNotIn: s += " notin "; break;
    case Op::kGreaterThan: s += ">"; break;
    case Op::kLessThan: s += "<"; break;
    case Op::kExists:
    case Op::kDoesNotExist: return s;
  }
  const bool set = op == Op::kIn || op == Op::kNotIn;
  if (set) s += '(';
  std::vector<std::string> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i) s += ',';
    s += sorted[i];
  }
  if (set) s += ')';
  return s;
}

void Selector::Assign(std::vector<Requirement> reqs) {
  std::stable_sort(reqs.begin(), reqs.end(),
                   [](const Requirement& a, const Requirement& b) { return a.key < b.key; });
  reqs_ = std::move(reqs);
}

void Selector::Add(Requirement r) {
  auto pos = std::upper_bound(reqs_.begin(), reqs_.end(), r.key,
                              [](const std::string& k, const Requirement& e) { return k < e.key; });
  reqs_.insert(pos, std::move(r));
}

bool Selector::Matches(const StringMap& labels) const {
  if (nothing_) return false;
  for (const auto& r : reqs_) {
    if (!r.Matches(labels)) return false;
  }
  return true;
}

std::string Selector::ToString() const {
  std::string s;
  for (size_t i = 0; i < reqs_.size(); ++i) {
    if (i) s += ',';
    s += reqs_[i].ToString();
  }
  return s;
}

StatusOr<Selector> Parse(std::string_view s) { return Parser(s).Run(); }

StatusOr<Selector> FromLabelSelector(const LabelSelector* ls) {
  if (ls == nullptr) return Selector::Nothing();
  std::vector<Requirement> reqs;
  for (const auto& [k, v] : ls->match_labels) {
    Requirement r{k, Op::kEquals, {v}};
    std::string err = ValidateRequirement(r);
    if (!err.empty()) return InvalidArgumentError(err);
    reqs.push_back(std::move(r));
  }
  for (const auto& e : ls->match_expressions) {
    Requirement r;
    r.key = e.key;
    if (e.operator_ == "In") {
      r.op = Op::kIn;
    } else if (e.operator_ == "NotIn") {
      r.op = Op::kNotIn;
    } else if (e.operator_ == "Exists") {
      r.op = Op::kExists;
    } else if (e.operator_ == "DoesNotExist") {
      r.op = Op::kDoesNotExist;
    } else {
      return InvalidArgumentError(GoQuote(e.operator_) +
                                  " is not a valid label selector operator");
    }
    std::set<std::string> distinct(e.values.begin(), e.values.end());
    std::string err = ValidateRequirement(Requirement{r.key, r.op, e.values});
    if (!err.empty()) return InvalidArgumentError(err);
    r.values.assign(distinct.begin(), distinct.end());
    reqs.push_back(std::move(r));
  }
  Selector sel;
  sel.Assign(std::move(reqs));
  return sel;
}

}  // namespace kvol::api::labels
