// The live view's page, built into the binary: its files by the path they are served at under
// /ui/ ("" is index.html), with their content types.
#pragma once

#include <string_view>

namespace kvol::ui {

struct Asset {
  std::string_view name;  // "app.js"
  std::string_view content_type;
  std::string_view body;
};

// The file served at /ui/<path>; null when there is none.
const Asset* FindAsset(std::string_view path);

// The headers every page file goes with: no caching (the page changes with the binary), and a
// policy that lets it load nothing but itself and the API it was served by.
inline constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

}  // namespace kvol::ui
