// Small string helpers shared across folders.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvol {

// Go's strconv.ParseInt(s, 10, 64): an optional sign, then decimal digits, nothing else.
bool ParseInt64(std::string_view s, int64_t* out);

// ASCII lower case; other bytes unchanged.
std::string AsciiLower(std::string_view s);

// Offset of the first byte that is not part of well-formed UTF-8 (overlong forms, surrogates
// and code points above U+10FFFF included), or npos if `s` is valid UTF-8.
size_t FirstInvalidUtf8(std::string_view s);

// The 1-based line and column of byte `offset` in `text`.
void LineColumn(std::string_view text, size_t offset, int* line, int* column);

}  // namespace kvol
