// The atomic writer: timestamped directory, `..data` swapped by rename, visible symlinks.
#include "volume/util/atomic_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <set>
#include <vector>

namespace kvol::volume::util {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kDataDir = "..data";
constexpr std::string_view kDataDirTmp = "..data_tmp";

Status Errno(const std::string& what) { return InternalError(what + ": " + strerror(errno)); }

std::string TopLevel(const std::string& path) { return path.substr(0, path.find('/')); }

// Reads every regular file below `root` into `out`, with paths relative to it.
bool ReadTree(const fs::path& root, Payload* out) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    struct stat st;
    if (stat(it->path().c_str(), &st) != 0) return false;
    int fd = open(it->path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    std::string data;
    char buf[8192];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) data.append(buf, static_cast<size_t>(n));
    close(fd);
    if (n < 0) return false;
    (*out)[fs::relative(it->path(), root).string()] =
        FileProjection{std::move(data), static_cast<int32_t>(st.st_mode & 07777)};
  }
  return !ec;
}

Status WriteFile(const fs::path& path, const FileProjection& f) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Errno("create " + path.string());
  size_t off = 0;
  while (off < f.data.size()) {
    ssize_t n = write(fd, f.data.data() + off, f.data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      Status s = Errno("write " + path.string());
      close(fd);
      return s;
    }
    off += static_cast<size_t>(n);
  }
  // Modes are exact: the umask does not apply (fchmod after create).
  if (fchmod(fd, static_cast<mode_t>(f.mode & 07777)) != 0) {
    Status s = Errno("chmod " + path.string());
    close(fd);
    return s;
  }
  if (close(fd) != 0) return Errno("close " + path.string());
  return OkStatus();
}

std::string TimestampPrefix(os::WallTime now) {
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm;
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "..%Y_%m_%d_%H_%M_%S.", &tm);
  return buf;
}

}  // namespace

Status ValidatePayloadPath(std::string_view path) {
  const std::string p(path);
  if (p.empty()) return InvalidArgumentError("invalid path: must not be empty");
  if (p.size() > 4096)
    return InvalidArgumentError("invalid path: must be less than or equal to 4096 characters");
  if (p.front() == '/')
    return InvalidArgumentError("invalid path \"" + p + "\": must be relative path");
  if (p.rfind("..", 0) == 0)
    return InvalidArgumentError("invalid path \"" + p + "\": must not start with '..'");
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    std::string_view elem(p.data() + start, end - start);
    if (elem == "..")
      return InvalidArgumentError("invalid path \"" + p + "\": must not contain '..'");
    if (elem.size() > 255)
      return InvalidArgumentError("invalid path \"" + p + "\": element longer than 255 characters");
    start = end + 1;
  }
  return OkStatus();
}

namespace {

// Whether ..data already holds exactly `payload`.
bool PayloadIsCurrent(const fs::path& root, const Payload& payload) {
  std::error_code ec;
  const fs::path data_link = root / kDataDir;
  if (!fs::is_symlink(data_link, ec)) return false;
  const fs::path ts = fs::read_symlink(data_link, ec);
  if (ec) return false;
  Payload current;
  return ReadTree(root / ts, &current) && current == payload;
}

// Writes the payload into a new timestamped directory and points ..data at it with one rename.
Status SwapInNewData(const fs::path& root, const Payload& payload, os::WallTime now) {
  std::error_code ec;
  std::string tmpl = (root / (TimestampPrefix(now) + "XXXXXX")).string();
  if (!mkdtemp(tmpl.data())) return Errno("mkdtemp in " + root.string());
  const fs::path ts(tmpl);
  if (chmod(ts.c_str(), 0755) != 0) return Errno("chmod " + ts.string());
  for (const auto& [path, file] : payload) {
    const fs::path target = ts / path;
    if (target.parent_path() != ts) {
      fs::create_directories(target.parent_path(), ec);
      if (ec) return InternalError("mkdir " + target.parent_path().string() + ": " + ec.message());
    }
    KVOL_RETURN_IF_ERROR(WriteFile(target, file));
  }
  const fs::path tmp_link = root / kDataDirTmp;
  const fs::path data_link = root / kDataDir;
  unlink(tmp_link.c_str());
  if (symlink(ts.filename().c_str(), tmp_link.c_str()) != 0) {
    return Errno("symlink " + tmp_link.string());
  }
  if (rename(tmp_link.c_str(), data_link.c_str()) != 0) return Errno("rename " + tmp_link.string());
  return OkStatus();
}

// A symlink into ..data for each top-level name of the payload; links to names no longer in it
// are removed.
Status UpdateVisibleLinks(const fs::path& root, const Payload& payload) {
  std::error_code ec;
  std::set<std::string> wanted;
  for (const auto& [path, file] : payload) wanted.insert(TopLevel(path));
  for (const auto& name : wanted) {
    const fs::path link = root / name;
    const std::string target = std::string(kDataDir) + "/" + name;
    if (fs::is_symlink(link, ec)) {
      if (fs::read_symlink(link, ec).string() == target) continue;
      unlink(link.c_str());
    } else if (fs::exists(link, ec)) {
      return FailedPreconditionError(link.string() + " exists and is not a symlink");
    }
    if (symlink(target.c_str(), link.c_str()) != 0) return Errno("symlink " + link.string());
  }
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("..", 0) == 0 || wanted.count(name)) continue;
    if (it->is_symlink(ec)) stale.push_back(it->path());
  }
  for (const auto& p : stale) unlink(p.c_str());
  return OkStatus();
}

// Removes timestamped directories ..data no longer points at (the previous one, and any an
// interrupted write left behind).
void RemoveStaleDataDirs(const fs::path& root) {
  std::error_code ec;
  const std::string live = fs::read_symlink(root / kDataDir, ec).string();
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("..", 0) != 0 || name == kDataDir || name == live) continue;
    stale.push_back(it->path());
  }
  for (const auto& p : stale) fs::remove_all(p, ec);
}

}  // namespace

StatusOr<bool> WriteAtomically(const std::string& dir, const Payload& payload, os::WallTime now) {
  for (const auto& [path, file] : payload) KVOL_RETURN_IF_ERROR(ValidatePayloadPath(path));
  const fs::path root(dir);
  bool changed = false;
  if (!PayloadIsCurrent(root, payload)) {
    KVOL_RETURN_IF_ERROR(SwapInNewData(root, payload, now));
    changed = true;
  }
  KVOL_RETURN_IF_ERROR(UpdateVisibleLinks(root, payload));
  RemoveStaleDataDirs(root);
  return changed;
}

}  // namespace kvol::volume::util
