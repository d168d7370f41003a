// Questions controllers ask of an object's metadata.
#pragma once

#include <algorithm>
#include <string_view>

#include "api/meta.h"

namespace kvol::controller {

inline bool HasFinalizer(const api::ObjectMeta& m, std::string_view name) {
  return std::find(m.finalizers.begin(), m.finalizers.end(), name) != m.finalizers.end();
}

}  // namespace kvol::controller
