#include "node/runtime/config.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace kvol::node::runtime {
namespace {

namespace fs = std::filesystem;

TEST(ContainerMountsTest, SubPathAndSubPathExprNameADirectoryInsideTheVolume) {
  std::string tmpl = (fs::temp_directory_path() / "kvol-mounts-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string vol = fs::canonical(tmpl).string();
  const std::map<std::string, MountedVolume> volumes = {{"data", {.path = vol}}};
  const std::vector<std::string> env = {"POD_NAME=web-0", "EMPTY="};
  struct Case {
    std::string name;
    api::VolumeMount mount;
    std::string source;  // relative to the volume; "!" + text: the error holds text
  } cases[] = {
      {.name = "whole volume", .mount = {.name = "data", .mount_path = "/d"}, .source = ""},
      {.name = "subPath",
       .mount = {.name = "data", .mount_path = "/d", .sub_path = "a/b"},
       .source = "/a/b"},
      {.name = "subPathExpr from the environment",
       .mount = {.name = "data", .mount_path = "/d", .sub_path_expr = "logs/$(POD_NAME)"},
       .source = "/logs/web-0"},
      {.name = "an escaped reference is literal",
       .mount = {.name = "data", .mount_path = "/d", .sub_path_expr = "$$(NOPE)"},
       .source = "/$(NOPE)"},
      {.name = "unset and empty variables are named, as kubelet does",
       .mount = {.name = "data", .mount_path = "/d", .sub_path_expr = "$(NOPE)/$(EMPTY)/x"},
       .source = "!missing value for EMPTY, NOPE"},
      {.name = "expanded out of the volume",
       .mount = {.name = "data", .mount_path = "/d", .sub_path_expr = "../$(POD_NAME)"},
       .source = "!failed to prepare subPath for volumeMount \"data\" of container \"c\""},
  };
  for (const auto& c : cases) {
    api::Container container;
    container.name = "c";
    container.volume_mounts = {c.mount};
    auto mounts = ContainerMounts(container, volumes, env);
    if (c.source.starts_with("!")) {
      ASSERT_FALSE(mounts.ok()) << c.name;
      EXPECT_NE(mounts.status().message().find(c.source.substr(1)), std::string::npos)
          << c.name << ": " << mounts.status().message();
      continue;
    }
    ASSERT_TRUE(mounts.ok()) << c.name << ": " << mounts.status().ToString();
    ASSERT_EQ(mounts->size(), 1u) << c.name;
    EXPECT_EQ((*mounts)[0].source, vol + c.source) << c.name;
    EXPECT_EQ((*mounts)[0].target, "/d") << c.name;
    if (!c.source.empty()) EXPECT_TRUE(fs::is_directory((*mounts)[0].source)) << c.name;
  }
  fs::remove_all(vol);
}

}  // namespace
}  // namespace kvol::node::runtime
