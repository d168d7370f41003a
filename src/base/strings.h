// Small string helpers shared across folders.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvol {

// Go's strconv.ParseInt(s, 10, 64): an optional sign, then decimal digits, nothing else.
bool ParseInt64(std::string_view s, int64_t* out);

// ASCII lower case; other bytes unchanged.
std::string AsciiLower(std::string_view s);

// `s` without its trailing spaces, tabs, carriage returns and newlines.
std::string_view TrimRight(std::string_view s);

// Offset of the first byte that is not part of well-formed UTF-8 (overlong forms, surrogates
// and code points above U+10FFFF included), or npos if `s` is valid UTF-8.
size_t FirstInvalidUtf8(std::string_view s);

// The 1-based line and column of byte `offset` in `text`.
void LineColumn(std::string_view text, size_t offset, int* line, int* column);

// Percent-encodes a URL path segment or query value (RFC 3986 unreserved characters stay).
std::string QueryEscape(std::string_view s);

// Standard base64 with padding (RFC 4648), as Go's base64.StdEncoding writes it.
std::string Base64Encode(std::string_view data);
// Decodes standard padded base64 as Go decodes []byte fields: '\r' and '\n' are skipped, any
// other character outside the alphabet, misplaced padding or a short final group is an error.
// On error returns nullopt and, if `bad_offset` is given, the input offset Go would report.
std::optional<std::string> Base64Decode(std::string_view in, size_t* bad_offset = nullptr);

// Whether two secrets (bearer tokens) are equal, compared without stopping at the first
// difference, so that the time taken does not tell how much of a guess was right.
bool SameSecret(std::string_view a, std::string_view b);

}  // namespace kvol
