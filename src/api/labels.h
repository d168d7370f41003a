// Label selectors: the string form of `?labelSelector=` ("app=nginx,tier!=db,env in (a,b),!x")
// and the structured metav1.LabelSelector, both turned into one Selector that matches label maps
// with Kubernetes' semantics and error messages.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/meta.h"
#include "base/status.h"

namespace kvol::api::labels {

enum class Op {
  kIn,
  kNotIn,
  kEquals,        // =
  kDoubleEquals,  // ==
  kNotEquals,     // !=
  kExists,        // key
  kDoesNotExist,  // !key
  kGreaterThan,   // key>1
  kLessThan,      // key<1
};

struct Requirement {
  std::string key;
  Op op = Op::kExists;
  std::vector<std::string> values;  // sorted, distinct

  // NotIn and != match when the key is absent; Gt/Lt need an integer label value.
  bool Matches(const StringMap& labels) const;
  std::string ToString() const;
  bool operator==(const Requirement&) const = default;
};

// A conjunction of requirements. Everything() (no requirements) matches every label set;
// Nothing() matches none, as a nil metav1.LabelSelector does.
class Selector {
 public:
  static Selector Everything() { return Selector(); }
  static Selector Nothing() {
    Selector s;
    s.nothing_ = true;
    return s;
  }

  bool Matches(const StringMap& labels) const;
  bool MatchesEverything() const { return !nothing_ && reqs_.empty(); }
  // Canonical string: requirements sorted by key, values sorted ("x in (a,b),y!=c,!z").
  std::string ToString() const;
  const std::vector<Requirement>& requirements() const { return reqs_; }

  // Adds a requirement, keeping them sorted by key.
  void Add(Requirement r);
  // Sets all requirements at once, sorted by key (stable): linear in their number.
  void Assign(std::vector<Requirement> reqs);

 private:
  std::vector<Requirement> reqs_;
  bool nothing_ = false;
};

// Parses the string form. InvalidArgument with Kubernetes' messages, e.g.
// "unable to parse requirement: found '', expected: identifier".
StatusOr<Selector> Parse(std::string_view s);

// Converts a structured selector; a null pointer gives Nothing(), an empty one Everything().
StatusOr<Selector> FromLabelSelector(const LabelSelector* ls);

// Checks a requirement as Kubernetes' NewRequirement does; empty string means valid.
std::string ValidateRequirement(const Requirement& r);

}  // namespace kvol::api::labels
