// RecordLog: JSON lines appended to one file, synced together.
#include "csi/driver/record_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/log.h"
#include "os/files.h"

namespace kvol::csi::driver {
namespace {

using nlohmann::json;

// Compaction waits until the file has at least this many lines.
constexpr int64_t kMinLinesToCompact = 1024;

Status Errno(const std::string& what) {
  return UnavailableError(what + ": " + std::strerror(errno));
}

Status SyncDirectoryOf(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  int fd = open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open " + dir);
  Status s = fsync(fd) == 0 ? OkStatus() : Errno("cannot sync " + dir);
  close(fd);
  return s;
}

}  // namespace

StatusOr<std::unique_ptr<RecordLog>> RecordLog::Open(const std::string& path) {
  std::unique_ptr<RecordLog> log(new RecordLog(path));
  log->fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (log->fd_ < 0) return Errno("cannot open " + path);
  // One process at a time: two appending at their own ends would overwrite each other's lines.
  // The lock is the file's; a compacted file is locked before it takes the log's name.
  if (flock(log->fd_, LOCK_EX | LOCK_NB) != 0) {
    return FailedPreconditionError(path + " is in use by another process");
  }
  std::string text;
  KVOL_RETURN_IF_ERROR(os::ReadFile(path, &text));
  size_t complete = 0;  // the bytes up to the end of the last whole line
  for (size_t start = 0; start < text.size();) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) break;  // a line a crash cut short: dropped below
    const std::string line = text.substr(start, end - start);
    start = complete = end + 1;
    ++log->lines_;
    json j = json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("key") || !j["key"].is_string()) continue;
    const std::string key = j["key"].get<std::string>();
    if (j.value("deleted", false)) {
      log->records_.erase(key);
    } else if (j.contains("value")) {
      log->records_[key] = line;
    }
  }
  if (complete != text.size() && ftruncate(log->fd_, static_cast<off_t>(complete)) != 0) {
    return Errno("cannot cut the torn end off " + path);
  }
  log->size_ = static_cast<off_t>(complete);
  if (text.empty()) KVOL_RETURN_IF_ERROR(SyncDirectoryOf(path));  // a new file stays
  return log;
}

RecordLog::~RecordLog() {
  if (fd_ >= 0) close(fd_);
}

std::map<std::string, json> RecordLog::Records() const {
  std::lock_guard lock(mu_);
  std::map<std::string, json> out;
  for (const auto& [key, line] : records_) out[key] = json::parse(line)["value"];
  return out;
}

int64_t RecordLog::lines() const {
  std::lock_guard lock(mu_);
  return lines_;
}

Status RecordLog::Put(const std::string& key, const json& value) {
  return Append(key, json{{"key", key}, {"value", value}}.dump(), /*put=*/true);
}

Status RecordLog::Erase(const std::string& key) {
  {
    std::lock_guard lock(mu_);
    if (!records_.contains(key)) return OkStatus();
  }
  return Append(key, json{{"key", key}, {"deleted", true}}.dump(), /*put=*/false);
}

Status RecordLog::Append(const std::string& key, const std::string& line, bool put) {
  int64_t mine;
  {
    std::lock_guard lock(mu_);
    if (!broken_.ok()) return broken_;
    const std::string data = line + "\n";
    size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = pwrite(fd_, data.data() + off, data.size() - off, size_ + off);
      if (n <= 0) {
        const Status s = Errno("cannot write " + path_);
        // No half line stays to spoil the next one.
        if (ftruncate(fd_, size_) != 0) broken_ = Errno("cannot undo a short write to " + path_);
        return s;
      }
      off += static_cast<size_t>(n);
    }
    size_ += static_cast<off_t>(data.size());
    ++lines_;
    mine = ++appended_;
    if (put) {
      records_[key] = line;
    } else {
      records_.erase(key);
    }
  }
  // One sync covers every line appended before it: a writer that finds its line synced by
  // another's is done.
  std::lock_guard sync(sync_mu_);
  if (synced_ < mine) {
    int fd;
    int64_t upto;
    {
      std::lock_guard lock(mu_);
      if (!broken_.ok()) return broken_;
      fd = fd_;
      upto = appended_;
    }
    if (fdatasync(fd) != 0) {
      // What failed to reach the disk may be gone while a later sync succeeds: nothing more is
      // acknowledged until the log is opened again.
      std::lock_guard lock(mu_);
      broken_ = Errno("cannot sync " + path_);
      return broken_;
    }
    synced_ = upto;
  }
  std::lock_guard lock(mu_);
  if (!ShouldCompactLocked()) return OkStatus();
  // This writer's line is on disk whatever the compaction does.
  if (Status s = CompactLocked(); !s.ok()) log::Warn("records: " + s.message());
  return OkStatus();
}

bool RecordLog::ShouldCompactLocked() const {
  const auto live = static_cast<int64_t>(records_.size());
  return broken_.ok() && lines_ >= kMinLinesToCompact && lines_ - live > live;
}

Status RecordLog::CompactLocked() {
  // sync_mu_ and mu_ held: nothing is appended or synced while the file is replaced.
  std::string data;
  for (const auto& [key, line] : records_) data += line + "\n";
  const std::string tmp = path_ + ".compact";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot create " + tmp);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const Status s = Errno("cannot lock " + tmp);
    close(fd);
    return s;
  }
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  if (off != data.size() || fsync(fd) != 0 || rename(tmp.c_str(), path_.c_str()) != 0) {
    // The old file stays in use, complete.
    const Status s = Errno("cannot write " + tmp);
    close(fd);
    unlink(tmp.c_str());
    return s;
  }
  // The directory names the new file now: it is the one to append to, with every live record.
  close(fd_);
  fd_ = fd;
  size_ = static_cast<off_t>(data.size());
  lines_ = static_cast<int64_t>(records_.size());
  synced_ = appended_;
  // Until the rename is on disk, a crash would bring back the old file without what is appended
  // to the new one.
  if (Status s = SyncDirectoryOf(path_); !s.ok()) broken_ = s;
  return broken_;
}

}  // namespace kvol::csi::driver
