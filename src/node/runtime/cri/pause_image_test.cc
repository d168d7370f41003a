// The pause image archive: a tar that tar(1) reads, an OCI layout whose blobs are named by their
// digests, and the pause program kvol carries.
#include "node/runtime/cri/pause_image.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "os/exec.h"

namespace kvol::node::cri {
namespace {

TEST(PauseImage, TarIsReadByTar) {
  const std::string archive =
      Tar({{.path = "a", .content = "hello\n"},
           {.path = "dir-less/b", .content = std::string(700, 'x'), .mode = 0755}});
  EXPECT_EQ(archive.size() % 512, 0u);
  char dir[] = "/tmp/kvol-tar-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/t.tar";
  std::ofstream(path, std::ios::binary) << archive;
  auto r = os::RealExec().Run({"tar", "-tvf", path}, std::chrono::seconds(10));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0) << r->output;
  EXPECT_NE(r->output.find("-rw-r--r-- 0/0               6 1970-01-01 00:00 a"), std::string::npos)
      << r->output;
  EXPECT_NE(r->output.find("-rwxr-xr-x 0/0             700 1970-01-01 00:00 dir-less/b"),
            std::string::npos)
      << r->output;
  std::filesystem::remove_all(dir);
}

TEST(PauseImage, LayoutNamesBlobsByDigest) {
  EXPECT_GT(PauseBinary().size(), 1000u);
  EXPECT_EQ(PauseBinary().substr(0, 4),
            "\x7f"
            "ELF");
  const std::string archive = PauseImageArchive("program", "1");
  // index.json, found after its header, names the manifest by digest and tag.
  const size_t at = archive.find("index.json");
  ASSERT_NE(at, std::string::npos);
  const std::string index_text(archive.c_str() + at - at % 512 + 512);
  auto index = nlohmann::json::parse(index_text);
  const auto& m = index["manifests"][0];
  EXPECT_EQ(m["annotations"]["org.opencontainers.image.ref.name"], "1");
  const std::string digest = m["digest"];
  ASSERT_EQ(digest.rfind("sha256:", 0), 0u);
  EXPECT_NE(archive.find("blobs/sha256/" + digest.substr(7)), std::string::npos);
  // The same input, the same archive (no times in it).
  EXPECT_EQ(Sha256Hex(archive), Sha256Hex(PauseImageArchive("program", "1")));
}

}  // namespace
}  // namespace kvol::node::cri
