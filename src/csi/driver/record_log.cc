// RecordLog: JSON lines appended to one file, synced together.
#include "csi/driver/record_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

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
  std::string text;
  if (Status s = os::ReadFile(path, &text); !s.ok() && s.code() != StatusCode::kNotFound) {
    return s;
  }
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
  log->fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (log->fd_ < 0) return Errno("cannot open " + path);
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
  return Append(json{{"key", key}, {"value", value}}.dump());
}

Status RecordLog::Erase(const std::string& key) {
  {
    std::lock_guard lock(mu_);
    if (!records_.contains(key)) return OkStatus();
  }
  return Append(json{{"key", key}, {"deleted", true}}.dump());
}

Status RecordLog::Append(const std::string& line) {
  int64_t mine;
  bool compact;
  {
    std::lock_guard lock(mu_);
    const std::string data = line + "\n";
    size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = pwrite(fd_, data.data() + off, data.size() - off, size_ + off);
      if (n <= 0) {
        const Status s = Errno("cannot write " + path_);
        // No half line stays to spoil the next one.
        if (ftruncate(fd_, size_) != 0) return Errno("cannot undo a short write to " + path_);
        return s;
      }
      off += static_cast<size_t>(n);
    }
    size_ += static_cast<off_t>(data.size());
    ++lines_;
    mine = ++appended_;
    json j = json::parse(line);
    const std::string key = j["key"].get<std::string>();
    if (j.contains("value")) {
      records_[key] = line;
    } else {
      records_.erase(key);
    }
    compact = lines_ >= kMinLinesToCompact &&
              lines_ - static_cast<int64_t>(records_.size()) > static_cast<int64_t>(records_.size());
  }
  // One sync covers every line appended before it: a writer that finds its line synced by
  // another's is done.
  std::lock_guard sync(sync_mu_);
  if (synced_ < mine) {
    int fd;
    int64_t upto;
    {
      std::lock_guard lock(mu_);
      fd = fd_;
      upto = appended_;
    }
    if (fdatasync(fd) != 0) return Errno("cannot sync " + path_);
    synced_ = upto;
  }
  if (!compact) return OkStatus();
  std::lock_guard lock(mu_);
  return CompactLocked();
}

Status RecordLog::CompactLocked() {
  // sync_mu_ and mu_ held: no sync runs on the descriptor that is replaced.
  std::string data;
  for (const auto& [key, line] : records_) data += line + "\n";
  KVOL_RETURN_IF_ERROR(os::WriteFileAtomically(path_, data, 0600));
  // The new file must be the one the directory names before anything is appended to it.
  KVOL_RETURN_IF_ERROR(SyncDirectoryOf(path_));
  const int fd = open(path_.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open " + path_);
  close(fd_);
  fd_ = fd;
  size_ = static_cast<off_t>(data.size());
  lines_ = static_cast<int64_t>(records_.size());
  synced_ = appended_;
  return OkStatus();
}

}  // namespace kvol::csi::driver
