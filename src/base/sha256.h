// SHA-256 digests, as lowercase hex (OpenSSL's libcrypto).
#pragma once

#include <string>
#include <string_view>

namespace kvol {

std::string Sha256Hex(std::string_view bytes);

}  // namespace kvol
