// The page's files, from the arrays embed.cmake generates.
#include "ui/assets.h"

#include <cstddef>
#include <string>
#include <vector>

namespace kvol::ui {

struct EmbeddedFile {
  const char* name;
  const unsigned char* data;
  std::size_t size;
};
extern const EmbeddedFile kPageFiles[];

namespace {

std::string_view ContentType(std::string_view name) {
  auto ends = [&](std::string_view s) {
    return name.size() >= s.size() && name.substr(name.size() - s.size()) == s;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

const std::vector<Asset>& Assets() {
  static const std::vector<Asset> assets = [] {
    std::vector<Asset> out;
    for (const EmbeddedFile* f = kPageFiles; f->name; ++f) {
      out.push_back({f->name, ContentType(f->name),
                     std::string_view(reinterpret_cast<const char*>(f->data), f->size)});
    }
    return out;
  }();
  return assets;
}

}  // namespace

const Asset* FindAsset(std::string_view path) {
  if (path.empty()) path = "index.html";
  for (const Asset& a : Assets()) {
    if (a.name == path) return &a;
  }
  return nullptr;
}

}  // namespace kvol::ui
