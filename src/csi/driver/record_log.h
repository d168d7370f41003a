// RecordLog: small JSON records by key, kept durable in one append-only file.
//
// Each change is one line appended to the file: {"key":K,"value":V} or {"key":K,"deleted":true}.
// A change is durable when Put or Erase returns; changes made at once share one fdatasync, so
// many writers cost about one sync. Reading the file back, the last line of a key wins; a line
// that does not parse (a write a crash cut short) is skipped. When more than half the lines are
// superseded, the file is rewritten with only the live records. One process at a time may open
// the log (an exclusive flock).
//
// One file for every record, rather than a file per record, spares the filesystem an inode and a
// rename per change.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace kvol::csi::driver {

class RecordLog {
 public:
  // Opens (creating) the log at `path` and reads its records.
  static StatusOr<std::unique_ptr<RecordLog>> Open(const std::string& path);
  ~RecordLog();
  RecordLog(const RecordLog&) = delete;
  RecordLog& operator=(const RecordLog&) = delete;

  // The live records, by key.
  std::map<std::string, nlohmann::json> Records() const;

  // Sets `key` to `value`; durable when it returns OK.
  Status Put(const std::string& key, const nlohmann::json& value);
  // Removes `key` (a key that is not there is already removed); durable when it returns OK.
  Status Erase(const std::string& key);

  // Lines in the file, live or superseded; for tests of compaction.
  int64_t lines() const;

 private:
  explicit RecordLog(std::string path) : path_(std::move(path)) {}
  // Appends `line`, which puts or erases `key`, then waits until it is on disk.
  Status Append(const std::string& key, const std::string& line, bool put);
  // Whether most lines are superseded; mu_ held.
  bool ShouldCompactLocked() const;
  // Rewrites the file with only the live records; sync_mu_ and mu_ held.
  Status CompactLocked();

  const std::string path_;
  mutable std::mutex mu_;  // the records, the descriptor and the file's end
  int fd_ = -1;
  off_t size_ = 0;     // the file's length: where the next line goes
  int64_t lines_ = 0;  // lines in the file
  int64_t appended_ = 0;  // lines appended since opening, numbered from 1
  std::map<std::string, std::string> records_;  // key → its line
  // Once a sync failed (what it was to write may be lost) or a compaction could not be made
  // durable, every later change fails with this until the log is opened again.
  Status broken_;

  std::mutex sync_mu_;    // one fdatasync at a time
  int64_t synced_ = 0;    // lines appended since opening that are on disk; sync_mu_ held
};

}  // namespace kvol::csi::driver
