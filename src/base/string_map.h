// The hash map for the controllers' large, hot indexes: Abseil's flat_hash_map with std::string
// keys, looked up by std::string or std::string_view without building a key. (Debian's Abseil
// has a string_view type of its own, which its default string hash takes; StringHash takes
// std::string_view.) Entries move as the map grows: insertions invalidate iterators, pointers
// and references, and the iteration order is unspecified.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <functional>
#include <string>
#include <string_view>

namespace kvol {

// Hashes std::string and std::string_view alike, for maps looked up by either.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};

template <class V>
using FlatStringMap = absl::flat_hash_map<std::string, V, StringHash, std::equal_to<>>;

}  // namespace kvol
