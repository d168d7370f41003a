// RecordLog: what a reopened log holds after puts, erases, torn writes and compaction; and
// DataDir's records in it, with those of earlier versions moved in.
#include "csi/driver/record_log.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "csi/driver/data_dir.h"
#include "os/files.h"
#include "os/testing/fake_exec.h"
#include "volume/testing/temp_dir.h"

namespace kvol::csi::driver {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::unique_ptr<RecordLog> MustOpen(const std::string& path) {
  auto log = RecordLog::Open(path);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return log.ok() ? std::move(*log) : nullptr;
}

void AppendRaw(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::app) << bytes;
}

struct Op {
  std::string key;
  std::optional<int> value;  // none: erase
};

TEST(RecordLog, ReopenedHoldsTheLastOfEachKey) {
  struct Case {
    const char* name;
    std::vector<Op> ops;
    std::string raw_tail;  // bytes written after the ops, as a crash might leave them
    std::map<std::string, json> want;
  };
  const std::vector<Case> cases = {
      {.name = "empty", .ops = {}, .raw_tail = "", .want = {}},
      {.name = "puts",
       .ops = {{"a", 1}, {"b", 2}},
       .raw_tail = "",
       .want = {{"a", 1}, {"b", 2}}},
      {.name = "the last put wins",
       .ops = {{"a", 1}, {"a", 2}, {"a", 3}},
       .raw_tail = "",
       .want = {{"a", 3}}},
      {.name = "erased", .ops = {{"a", 1}, {"a", {}}}, .raw_tail = "", .want = {}},
      {.name = "put again after erase",
       .ops = {{"a", 1}, {"a", {}}, {"a", 4}},
       .raw_tail = "",
       .want = {{"a", 4}}},
      {.name = "erase of a key never put", .ops = {{"x", {}}}, .raw_tail = "", .want = {}},
      {.name = "a torn last line is dropped",
       .ops = {{"a", 1}},
       .raw_tail = R"({"key":"b","val)",
       .want = {{"a", 1}}},
      {.name = "a line that is not a record is skipped",
       .ops = {{"a", 1}},
       .raw_tail = "not json\n[1,2]\n{\"key\":7}\n",
       .want = {{"a", 1}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    volume::testing::TempDir dir;
    const std::string path = dir.path() + "/records.log";
    {
      auto log = MustOpen(path);
      ASSERT_TRUE(log);
      for (const auto& op : c.ops) {
        const Status s = op.value ? log->Put(op.key, *op.value) : log->Erase(op.key);
        ASSERT_TRUE(s.ok()) << s.ToString();
      }
      EXPECT_EQ(log->Records(), c.want);
    }
    AppendRaw(path, c.raw_tail);
    auto reopened = MustOpen(path);
    ASSERT_TRUE(reopened);
    EXPECT_EQ(reopened->Records(), c.want);
    // What is written after a torn or bad line is read back too.
    ASSERT_TRUE(reopened->Put("after", 9).ok());
    reopened.reset();  // one process, one opening at a time
    auto again = MustOpen(path);
    ASSERT_TRUE(again);
    auto want = c.want;
    want["after"] = 9;
    EXPECT_EQ(again->Records(), want);
  }
}

TEST(RecordLog, CompactsWhenMostLinesAreSuperseded) {
  volume::testing::TempDir dir;
  const std::string path = dir.path() + "/records.log";
  auto log = MustOpen(path);
  ASSERT_TRUE(log);
  ASSERT_TRUE(log->Put("kept", "yes").ok());
  for (int i = 0; i < 3000; ++i) ASSERT_TRUE(log->Put("counter", i).ok());
  EXPECT_LT(log->lines(), 1100);
  ASSERT_TRUE(log->Put("last", true).ok());
  log.reset();
  auto reopened = MustOpen(path);
  ASSERT_TRUE(reopened);
  EXPECT_EQ(reopened->Records(),
            (std::map<std::string, json>{{"kept", "yes"}, {"counter", 2999}, {"last", true}}));
  EXPECT_LT(reopened->lines(), 1100);
}

TEST(RecordLog, WritersAtOnceAllLand) {
  volume::testing::TempDir dir;
  const std::string path = dir.path() + "/records.log";
  auto log = MustOpen(path);
  ASSERT_TRUE(log);
  // Each writer sets its ten keys over and over, so the log compacts while they write.
  std::vector<std::thread> writers;
  for (int w = 0; w < 8; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < 300; ++i) {
        EXPECT_TRUE(log->Put("w" + std::to_string(w) + "-" + std::to_string(i % 10), i).ok());
      }
    });
  }
  for (auto& t : writers) t.join();
  EXPECT_LT(log->lines(), 2400);  // compacted at least once
  log.reset();
  auto reopened = MustOpen(path);
  ASSERT_TRUE(reopened);
  const auto records = reopened->Records();
  ASSERT_EQ(records.size(), 80u);
  for (int w = 0; w < 8; ++w) {
    for (int k = 0; k < 10; ++k) {
      EXPECT_EQ(records.at("w" + std::to_string(w) + "-" + std::to_string(k)), 290 + k);
    }
  }
}

TEST(RecordLog, OneProcessAtATime) {
  volume::testing::TempDir dir;
  const std::string path = dir.path() + "/records.log";
  auto first = MustOpen(path);
  ASSERT_TRUE(first);
  auto second = RecordLog::Open(path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(second.status().message(), path + " is in use by another process");
  first.reset();
  EXPECT_TRUE(RecordLog::Open(path).ok());
}

// DataDir: records in the log, files without records removed, records of earlier versions
// moved in.
TEST(DataDir, StartsFromWhatIsOnDisk) {
  volume::testing::TempDir dir;
  os::testing::FakeExec exec;
  std::string kept_id;
  {
    auto d = DataDir::Open(dir.path(), exec);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    auto kept = (*d)->CreateVolume("kept", 1 << 20, {}, {{"p", "v"}});
    ASSERT_TRUE(kept.ok()) << kept.status().ToString();
    kept_id = kept->id;
    auto gone = (*d)->CreateVolume("gone", 1 << 20, {}, {});
    ASSERT_TRUE(gone.ok());
    ASSERT_TRUE((*d)->DeleteVolume(gone->id).ok());
    EXPECT_FALSE(fs::exists((*d)->VolumeFile(gone->id)));
    // The same name answers the same volume.
    EXPECT_EQ((*d)->VolumeByName("kept")->id, kept_id);
    EXPECT_FALSE((*d)->VolumeByName("gone"));
  }
  // Left by a crash: a file whose record was never written, and a temporary copy.
  std::ofstream(dir.path() + "/volumes/vol-crashed.img") << "x";
  std::ofstream(dir.path() + "/volumes/vol-copy.img.tmp") << "x";
  // Left by an earlier version: a record in a file of its own, beside its volume.
  ASSERT_TRUE(os::WriteFileAtomically(dir.path() + "/volumes/vol-old.json",
                                      R"({"id":"vol-old","name":"old","capacity":4096})", 0600)
                  .ok());
  std::ofstream(dir.path() + "/volumes/vol-old.img") << "";

  auto d = DataDir::Open(dir.path(), exec);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  std::set<std::string> names;
  for (const auto& v : (*d)->Volumes()) names.insert(v.name);
  EXPECT_EQ(names, (std::set<std::string>{"kept", "old"}));
  EXPECT_EQ((*d)->VolumeById(kept_id)->parameters.at("p"), "v");
  EXPECT_EQ((*d)->VolumeByName("old")->capacity, 4096);
  EXPECT_FALSE(fs::exists(dir.path() + "/volumes/vol-crashed.img"));
  EXPECT_FALSE(fs::exists(dir.path() + "/volumes/vol-copy.img.tmp"));
  EXPECT_FALSE(fs::exists(dir.path() + "/volumes/vol-old.json"));
  EXPECT_TRUE(fs::exists(dir.path() + "/volumes/vol-old.img"));
  // A volume never used has no file yet, and keeps its record; a file a crash left between
  // making it and recording it is the one MakeFile takes.
  EXPECT_FALSE(fs::exists((*d)->VolumeFile(kept_id)));
  std::ofstream((*d)->VolumeFile(kept_id)) << "";
  d->reset();
  d = DataDir::Open(dir.path(), exec);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE((*d)->VolumeById(kept_id)->file_pending);
  ASSERT_TRUE((*d)->MakeFile(kept_id).ok());
  EXPECT_EQ(fs::file_size((*d)->VolumeFile(kept_id)), uintmax_t{1} << 20);
  EXPECT_FALSE((*d)->VolumeById(kept_id)->file_pending);
  EXPECT_EQ((*d)->MakeFile("vol-none").code(), StatusCode::kNotFound);
  // A record whose file is gone once made is of a create that failed: dropped.
  fs::remove((*d)->VolumeFile(kept_id));
  d->reset();
  auto again = DataDir::Open(dir.path(), exec);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE((*again)->VolumeById(kept_id));
  EXPECT_TRUE((*again)->VolumeByName("old"));
}

}  // namespace
}  // namespace kvol::csi::driver
