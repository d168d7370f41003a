// Finding a run of the built-in runtime again after the agent restarted, from what its bundle
// holds: one row per moment the agent may have died at.
#include "node/runtime/process_backend.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "node/runtime/container.h"

namespace kvol::node::runtime {
namespace {

namespace fs = std::filesystem;

struct AdoptRow {
  const char* name;
  std::map<std::string, std::string> files;  // in the bundle
  const char* id;                            // as the record names it
  bool never_started;
  std::optional<int> exit_code;  // nullopt: not ended
};

TEST(ProcessBackendAdopt, FromWhatTheBundleHolds) {
  const AdoptRow rows[] = {
      {.name = "died before spawning the init: started again",
       .files = {{"spec.json", "{}"}},
       .id = "",
       .never_started = true},
      {.name = "ended while the agent was away, with its status",
       .files = {{"spec.json", "{}"},
                 {std::string(kPidFile), "999999"},
                 {std::string(kExitFile), "3"}},
       .id = "kvol://u1/c/0",
       .exit_code = 3},
      {.name = "ran, and its init was killed before it could say how it ended",
       .files = {{"spec.json", "{}"}, {std::string(kPidFile), "999999"}},
       .id = "kvol://u1/c/0",
       .exit_code = 137},
      {.name = "the init failed before the container ran",
       .files = {{"spec.json", "{}"}, {std::string(kExitFile), "127"}},
       .id = "",
       .exit_code = 127},
  };
  const fs::path dir = fs::path(testing::TempDir()) / "process_backend_adopt";
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    fs::remove_all(dir);
    const fs::path bundle = dir / "u1" / "c";
    fs::create_directories(bundle);
    for (const auto& [name, text] : row.files) std::ofstream(bundle / name) << text;
    ProcessBackend backend({.containers_dir = dir.string(), .init_binary = "/nonexistent/kvol"});
    backend.BeginAdopt();
    FoundRun found = backend.Adopt("u1", "c", bundle.string(), 0, row.id);
    backend.EndAdopt({found.id});
    EXPECT_EQ(found.never_started, row.never_started);
    if (row.exit_code) {
      ASSERT_TRUE(found.ended);
      EXPECT_EQ(found.ended->exit_code, *row.exit_code);
    } else {
      EXPECT_FALSE(found.ended);
    }
    if (!row.never_started) {
      EXPECT_EQ(found.id, "kvol://u1/c/0");
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvol::node::runtime
