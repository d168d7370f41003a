// Field selectors (`?fieldSelector=spec.nodeName=node1,status.phase!=Failed`): parsing with
// Kubernetes' escaping rules and messages, and the fields each kind can be selected by.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/meta.h"
#include "base/status.h"

namespace kvol::api::fields {

struct Term {
  std::string field;
  bool equals = true;  // "=" / "==" vs "!="
  std::string value;
  bool operator==(const Term&) const = default;
};

class Selector {
 public:
  // Every term must hold; a field missing from `fields` reads as "".
  bool Matches(const StringMap& fields) const;
  // The same, with metadata.name and metadata.namespace given apart from the other fields.
  bool Matches(const StringMap& fields, std::string_view name, std::string_view ns) const;
  bool Empty() const { return terms_.empty(); }
  const std::vector<Term>& terms() const { return terms_; }
  // "a=x,b!=y" with values escaped, terms in sorted order.
  std::string ToString() const;

  // Checks every field against a kind's supported list; InvalidArgument
  // "field label not supported: X" otherwise.
  Status CheckSupported(const std::vector<std::string_view>& supported) const;

 private:
  friend StatusOr<Selector> Parse(std::string_view s);
  std::vector<Term> terms_;
};

StatusOr<Selector> Parse(std::string_view s);

}  // namespace kvol::api::fields
