// The page's files are built in, each with its type, and nothing else is served.
#include "ui/assets.h"

#include <gtest/gtest.h>

namespace kvol::ui {
namespace {

TEST(FindAsset, ServesThePagesFilesOnly) {
  struct Case {
    const char* path;
    const char* type;  // null: not found
    const char* contains;
  } cases[] = {
      {.path = "", .type = "text/html; charset=utf-8", .contains = "<script src=\"app.js\">"},
      {.path = "index.html", .type = "text/html; charset=utf-8", .contains = "<!doctype html>"},
      {.path = "app.js", .type = "text/javascript; charset=utf-8", .contains = "\"use strict\""},
      {.path = "style.css", .type = "text/css; charset=utf-8", .contains = "{"},
      {.path = "yaml.js", .type = "text/javascript; charset=utf-8", .contains = "toYaml"},
      {.path = "../assets.cc", .type = nullptr, .contains = nullptr},
      {.path = "nosuch.js", .type = nullptr, .contains = nullptr},
      {.path = "app.js/", .type = nullptr, .contains = nullptr},
  };
  for (const auto& c : cases) {
    const Asset* a = FindAsset(c.path);
    if (!c.type) {
      EXPECT_EQ(a, nullptr) << c.path;
      continue;
    }
    ASSERT_NE(a, nullptr) << c.path;
    EXPECT_EQ(a->content_type, c.type) << c.path;
    EXPECT_NE(a->body.find(c.contains), std::string_view::npos) << c.path;
  }
}

}  // namespace
}  // namespace kvol::ui
