// Questions controllers ask of an object's metadata.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/meta.h"

namespace kvol::controller {

using api::HasFinalizer;

inline bool HasAnnotation(const api::ObjectMeta& m, std::string_view key) {
  return m.annotations.count(std::string(key)) > 0;
}

// The annotation's value; empty when the object has none of that key.
inline std::string Annotation(const api::ObjectMeta& m, std::string_view key) {
  auto it = m.annotations.find(std::string(key));
  return it == m.annotations.end() ? std::string() : it->second;
}

// An object's resourceVersion as the store's revision it is (a decimal integer); 0 if unset.
inline int64_t Version(const api::ObjectMeta& m) {
  int64_t v = 0;
  const auto& s = m.resource_version;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

}  // namespace kvol::controller
