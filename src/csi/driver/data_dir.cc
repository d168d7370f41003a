// DataDir: sparse files under one directory, and their records in one log.
#include "csi/driver/data_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "base/strings.h"
#include "os/files.h"

namespace kvol::csi::driver {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::chrono::minutes kCopyTimeout{30};

json ToJson(const VolumeRecord& v) {
  return {{"id", v.id},
          {"name", v.name},
          {"capacity", v.capacity},
          {"sourceSnapshot", v.source_snapshot},
          {"sourceVolume", v.source_volume},
          {"parameters", v.parameters},
          {"filePending", v.file_pending}};
}

json ToJson(const SnapshotRecord& s) {
  return {{"id", s.id},
          {"name", s.name},
          {"sourceVolume", s.source_volume},
          {"size", s.size},
          {"created", s.created_unix_nanos}};
}

// A record read back; nullopt when the file is not one.
std::optional<VolumeRecord> VolumeFromJson(const json& j) {
  if (!j.is_object() || !j.value("id", json()).is_string()) return std::nullopt;
  VolumeRecord v;
  v.id = j.value("id", "");
  v.name = j.value("name", "");
  v.capacity = j.value("capacity", int64_t{0});
  v.source_snapshot = j.value("sourceSnapshot", "");
  v.source_volume = j.value("sourceVolume", "");
  v.file_pending = j.value("filePending", false);  // records of earlier versions have files
  if (auto p = j.find("parameters"); p != j.end() && p->is_object()) {
    for (const auto& [k, val] : p->items()) {
      if (val.is_string()) v.parameters[k] = val.get<std::string>();
    }
  }
  return v;
}

std::optional<SnapshotRecord> SnapshotFromJson(const json& j) {
  if (!j.is_object() || !j.value("id", json()).is_string()) return std::nullopt;
  SnapshotRecord s;
  s.id = j.value("id", "");
  s.name = j.value("name", "");
  s.source_volume = j.value("sourceVolume", "");
  s.size = j.value("size", int64_t{0});
  s.created_unix_nanos = j.value("created", int64_t{0});
  return s;
}

Status Errno(const std::string& what) { return InternalError(what + ": " + std::strerror(errno)); }

// Sets `path`'s size, synced: its record may say the new size only once the file has it.
Status Resize(const std::string& path, int64_t size) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open " + path);
  Status s = ftruncate(fd, size) == 0 ? OkStatus() : Errno("cannot grow " + path);
  if (s.ok() && fsync(fd) != 0) s = Errno("cannot sync " + path);
  close(fd);
  return s;
}

Status SyncPath(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open " + path);
  const bool synced = fsync(fd) == 0;
  close(fd);
  return synced ? OkStatus() : Errno("cannot sync " + path);
}

// Creates `path` as a sparse file of `size` bytes, on disk with its name before its record says
// it is there. A file there already is one a crash left before its record: no one wrote to it.
Status CreateSparse(const std::string& path, int64_t size) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot create " + path);
  Status s = ftruncate(fd, size) == 0 ? OkStatus() : Errno("cannot size " + path);
  if (s.ok() && fsync(fd) != 0) s = Errno("cannot sync " + path);
  close(fd);
  if (!s.ok()) return s;
  return SyncPath(fs::path(path).parent_path().string());
}

// Renames a complete copy `tmp` to `file`, with the copy's contents and the new name on disk
// before its record is written.
Status Install(const std::string& tmp, const std::string& file) {
  KVOL_RETURN_IF_ERROR(SyncPath(tmp));
  if (rename(tmp.c_str(), file.c_str()) != 0) return Errno("cannot rename " + tmp);
  return SyncPath(fs::path(file).parent_path().string());
}

int64_t FileSize(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

void RemoveQuietly(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
}

}  // namespace

std::string NewId(const std::string& prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return prefix + buf;
}

StatusOr<std::unique_ptr<DataDir>> DataDir::Open(const std::string& dir, os::Exec& exec) {
  std::error_code ec;
  for (const char* sub : {"volumes", "snapshots"}) {
    fs::create_directories(fs::path(dir) / sub, ec);
    if (ec) return InternalError("cannot create " + dir + "/" + sub + ": " + ec.message());
  }
  std::unique_ptr<DataDir> d(new DataDir(dir, exec));
  d->real_volumes_ = fs::canonical(fs::path(dir) / "volumes", ec).string() + "/";
  if (ec) return InternalError("cannot resolve " + dir + "/volumes: " + ec.message());
  KVOL_ASSIGN_OR_RETURN(d->log_, RecordLog::Open(dir + "/records.log"));
  KVOL_RETURN_IF_ERROR(d->Load());
  return d;
}

Status DataDir::Load() {
  KVOL_RETURN_IF_ERROR(MoveRecordFilesToLog());
  for (const auto& [key, j] : log_->Records()) {
    if (key.starts_with("volumes/")) {
      if (auto v = VolumeFromJson(j)) volumes_[v->id] = *std::move(v);
    } else if (key.starts_with("snapshots/")) {
      if (auto s = SnapshotFromJson(j)) snapshots_[s->id] = *std::move(s);
    }
  }
  for (const char* sub : {"volumes", "snapshots"}) {
    const bool volumes = std::string_view(sub) == "volumes";
    std::error_code ec;
    std::set<std::string> images;
    for (const auto& e : fs::directory_iterator(fs::path(dir_) / sub, ec)) {
      const fs::path p = e.path();
      const std::string id = p.stem();
      // A temporary file, or a file whose record was never written: a create a crash cut short.
      if (p.extension() != ".img" || (volumes ? !volumes_.contains(id) : !snapshots_.contains(id))) {
        RemoveQuietly(p);
        continue;
      }
      images.insert(id);
    }
    if (ec) return InternalError("cannot list " + dir_ + "/" + sub + ": " + ec.message());
    // A record without its file is of a create that failed after writing it (a volume whose
    // file is pending has none yet).
    std::vector<std::string> orphans;
    if (volumes) {
      for (const auto& [id, v] : volumes_) {
        if (!images.contains(id) && !v.file_pending) orphans.push_back(id);
      }
    } else {
      for (const auto& [id, snap] : snapshots_) {
        if (!images.contains(id)) orphans.push_back(id);
      }
    }
    for (const auto& id : orphans) {
      KVOL_RETURN_IF_ERROR(log_->Erase(std::string(sub) + "/" + id));
      volumes ? volumes_.erase(id) : snapshots_.erase(id);
    }
  }
  for (const auto& [id, v] : volumes_) volume_names_[v.name] = id;
  return OkStatus();
}

Status DataDir::MoveRecordFilesToLog() {
  // Earlier versions kept each record in a file of its own beside the image: <id>.json.
  for (const char* sub : {"volumes", "snapshots"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(dir_) / sub, ec)) {
      const fs::path p = e.path();
      if (p.extension() != ".json") continue;
      std::string text;
      KVOL_RETURN_IF_ERROR(os::ReadFile(p, &text));
      json j = json::parse(text, nullptr, false);
      if (j.is_object() && j.value("id", json()).is_string()) {
        KVOL_RETURN_IF_ERROR(log_->Put(std::string(sub) + "/" + j["id"].get<std::string>(), j));
      }
      if (unlink(p.c_str()) != 0) return Errno("cannot remove " + p.string());
    }
    if (ec) return InternalError("cannot list " + dir_ + "/" + sub + ": " + ec.message());
  }
  return OkStatus();
}

template <class Records>
Status DataDir::RemoveRecorded(Records& records, const char* sub, const std::string& id) {
  if (!records.contains(id)) return OkStatus();
  // The record goes first: a crash between leaves a file that the next start removes.
  KVOL_RETURN_IF_ERROR(log_->Erase(std::string(sub) + "/" + id));
  records.erase(id);
  RemoveQuietly(dir_ + "/" + sub + "/" + id + ".img");
  return OkStatus();
}

std::string DataDir::VolumeFile(const std::string& id) const {
  return dir_ + "/volumes/" + id + ".img";
}

bool DataDir::Owns(const std::string& path) const {
  return path.rfind(real_volumes_, 0) == 0 && path.ends_with(".img");
}

std::string DataDir::SnapshotFile(const std::string& id) const {
  return dir_ + "/snapshots/" + id + ".img";
}

std::optional<VolumeRecord> DataDir::VolumeById(const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = volumes_.find(id);
  if (it == volumes_.end()) return std::nullopt;
  return it->second;
}

std::optional<VolumeRecord> DataDir::VolumeByName(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = volume_names_.find(name);
  if (it == volume_names_.end()) return std::nullopt;
  return volumes_.at(it->second);
}

std::vector<VolumeRecord> DataDir::Volumes() const {
  std::lock_guard lock(mu_);
  std::vector<VolumeRecord> out;
  out.reserve(volumes_.size());
  for (const auto& [id, v] : volumes_) out.push_back(v);
  return out;
}

StatusOr<VolumeRecord> DataDir::CreateVolume(const std::string& name, int64_t capacity,
                                             const ContentSource& source,
                                             std::map<std::string, std::string> parameters) {
  std::unique_lock lock(mu_);
  std::string from;
  if (!source.snapshot.empty()) {
    if (!snapshots_.contains(source.snapshot)) {
      return NotFoundError("snapshot " + source.snapshot + " not found");
    }
    from = SnapshotFile(source.snapshot);
  } else if (!source.volume.empty()) {
    if (!volumes_.contains(source.volume)) {
      return NotFoundError("volume " + source.volume + " not found");
    }
    from = VolumeFile(source.volume);
  }
  VolumeRecord v{NewId("vol-"),   name,          capacity,
                 source.snapshot, source.volume, std::move(parameters)};
  const std::string file = VolumeFile(v.id);
  const std::string tmp = file + ".tmp";
  Status s;
  if (!source.volume.empty()) {
    // A clone copies the source's file, which a source never used has yet to get.
    s = MakeFileLocked(volumes_.at(source.volume));
    if (!s.ok()) return s;
  }
  if (from.empty()) {
    // A new empty volume shares nothing with the others (its name is the caller's to keep
    // unique), so it is recorded without holding up other creates; its file comes at its
    // first use.
    lock.unlock();
    v.file_pending = true;
  } else if (int64_t size = FileSize(from); size > capacity) {
    s = OutOfRangeError("the source holds " + std::to_string(size) +
                        " bytes, more than the requested capacity of " + std::to_string(capacity));
  } else {
    s = CopyFile(from, tmp);
    if (s.ok()) s = Resize(tmp, capacity);
    if (s.ok()) s = Install(tmp, file);
  }
  if (s.ok()) s = log_->Put("volumes/" + v.id, ToJson(v));
  if (!s.ok()) {
    RemoveQuietly(tmp);
    RemoveQuietly(file);
    return s;
  }
  if (!lock.owns_lock()) lock.lock();
  volume_names_[v.name] = v.id;
  volumes_[v.id] = v;
  return v;
}

Status DataDir::DeleteVolume(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = volumes_.find(id);
  if (it == volumes_.end()) return OkStatus();
  const std::string name = it->second.name;
  KVOL_RETURN_IF_ERROR(RemoveRecorded(volumes_, "volumes", id));
  if (auto n = volume_names_.find(name); n != volume_names_.end() && n->second == id) {
    volume_names_.erase(n);
  }
  return OkStatus();
}

Status DataDir::MakeFile(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = volumes_.find(id);
  if (it == volumes_.end()) return NotFoundError("volume " + id + " not found");
  return MakeFileLocked(it->second);
}

Status DataDir::MakeFileLocked(VolumeRecord& v) {
  if (!v.file_pending) return OkStatus();
  // The file first, then the record that says it is there: a crash between leaves a file the
  // record still calls pending, which the next MakeFile takes as it is.
  KVOL_RETURN_IF_ERROR(CreateSparse(VolumeFile(v.id), v.capacity));
  VolumeRecord made = v;
  made.file_pending = false;
  KVOL_RETURN_IF_ERROR(log_->Put("volumes/" + v.id, ToJson(made)));
  v = std::move(made);
  return OkStatus();
}

bool DataDir::Present(const VolumeRecord& v) const {
  return v.file_pending || access(VolumeFile(v.id).c_str(), F_OK) == 0;
}

StatusOr<VolumeRecord> DataDir::GrowVolume(const std::string& id, int64_t capacity) {
  std::lock_guard lock(mu_);
  auto it = volumes_.find(id);
  if (it == volumes_.end()) return NotFoundError("volume " + id + " not found");
  if (capacity <= it->second.capacity) return it->second;
  VolumeRecord grown = it->second;
  grown.capacity = capacity;
  // The file grows first: a crash between leaves a record smaller than its file, which the
  // next expansion mends. A pending file is made at the size its record then says.
  if (!grown.file_pending) KVOL_RETURN_IF_ERROR(Resize(VolumeFile(id), capacity));
  KVOL_RETURN_IF_ERROR(log_->Put("volumes/" + id, ToJson(grown)));
  it->second = grown;
  return grown;
}

std::optional<SnapshotRecord> DataDir::SnapshotById(const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = snapshots_.find(id);
  if (it == snapshots_.end()) return std::nullopt;
  return it->second;
}

std::optional<SnapshotRecord> DataDir::SnapshotByName(const std::string& name) const {
  std::lock_guard lock(mu_);
  for (const auto& [id, s] : snapshots_) {
    if (s.name == name) return s;
  }
  return std::nullopt;
}

std::vector<SnapshotRecord> DataDir::Snapshots() const {
  std::lock_guard lock(mu_);
  std::vector<SnapshotRecord> out;
  out.reserve(snapshots_.size());
  for (const auto& [id, s] : snapshots_) out.push_back(s);
  return out;
}

StatusOr<SnapshotRecord> DataDir::CreateSnapshot(const std::string& name,
                                                 const std::string& source) {
  std::lock_guard lock(mu_);
  auto it = volumes_.find(source);
  if (it == volumes_.end()) return NotFoundError("volume " + source + " not found");
  KVOL_RETURN_IF_ERROR(MakeFileLocked(it->second));
  SnapshotRecord snap{NewId("snap-"), name, source, it->second.capacity,
                      std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count()};
  const std::string file = SnapshotFile(snap.id);
  const std::string tmp = file + ".tmp";
  Status s = CopyFile(VolumeFile(source), tmp);
  if (s.ok()) s = Install(tmp, file);
  if (s.ok()) s = log_->Put("snapshots/" + snap.id, ToJson(snap));
  if (!s.ok()) {
    RemoveQuietly(tmp);
    RemoveQuietly(file);
    return s;
  }
  snapshots_[snap.id] = snap;
  return snap;
}

Status DataDir::DeleteSnapshot(const std::string& id) {
  std::lock_guard lock(mu_);
  return RemoveRecorded(snapshots_, "snapshots", id);
}

StatusOr<int64_t> DataDir::AvailableBytes() const {
  struct statvfs st {};
  if (statvfs(dir_.c_str(), &st) != 0) return Errno("cannot statvfs " + dir_);
  return static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_frsize);
}

Status DataDir::CopyFile(const std::string& from, const std::string& to) {
  KVOL_ASSIGN_OR_RETURN(
      auto r, exec_.Run({"cp", "--reflink=auto", "--sparse=always", from, to}, kCopyTimeout));
  if (r.exit_code != 0) {
    return InternalError("cannot copy " + from + ": cp " + os::DescribeExit(r.exit_code) + ": " +
                         std::string(TrimRight(r.output)));
  }
  return OkStatus();
}

}  // namespace kvol::csi::driver
