// PrepareSubPath: component by component, resolving what exists and creating what does not.
#include "volume/util/subpath.h"

#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace kvol::volume::util {
namespace {

StatusOr<std::string> RealPath(const std::string& p) {
  char buf[PATH_MAX];
  if (!realpath(p.c_str(), buf)) {
    if (errno == ENOENT) return NotFoundError(p + ": no such file or directory");
    return InternalError("realpath " + p + ": " + strerror(errno));
  }
  return std::string(buf);
}

bool Within(const std::string& path, const std::string& base) {
  return path == base || (path.size() > base.size() && path.compare(0, base.size(), base) == 0 &&
                          (base == "/" || path[base.size()] == '/'));
}

}  // namespace

StatusOr<std::string> PrepareSubPath(const std::string& volume_path, const std::string& sub_path) {
  if (sub_path.empty() || sub_path.front() == '/') {
    return InvalidArgumentError("subPath \"" + sub_path + "\" must be a relative path");
  }
  std::vector<std::string> parts;
  for (size_t start = 0; start <= sub_path.size();) {
    size_t end = sub_path.find('/', start);
    if (end == std::string::npos) end = sub_path.size();
    std::string part = sub_path.substr(start, end - start);
    if (part == "..") {
      return InvalidArgumentError("subPath \"" + sub_path + "\" must not contain '..'");
    }
    if (!part.empty() && part != ".") parts.push_back(std::move(part));
    start = end + 1;
  }
  KVOL_ASSIGN_OR_RETURN(const std::string base, RealPath(volume_path));
  // Each step is resolved as it is (a symlink is followed to wherever it points) and must stay
  // inside the volume before the next one is taken.
  std::string current = base;
  for (const auto& part : parts) {
    const std::string next = current + "/" + part;
    struct stat st;
    if (lstat(next.c_str(), &st) != 0) {
      if (errno != ENOENT) return InternalError("lstat " + next + ": " + strerror(errno));
      if (mkdir(next.c_str(), 0750) != 0 && errno != EEXIST) {
        return InternalError("mkdir " + next + ": " + strerror(errno));
      }
    }
    auto resolved = RealPath(next);
    if (!resolved.ok()) {
      // A dangling symlink: where it points does not exist, inside or out.
      return InvalidArgumentError("subpath \"" + volume_path + "/" + sub_path +
                                  "\" not within volume path \"" + volume_path + "\"");
    }
    if (!Within(*resolved, base)) {
      return InvalidArgumentError("subpath \"" + *resolved + "\" not within volume path \"" +
                                  volume_path + "\"");
    }
    current = *resolved;
  }
  return current;
}

}  // namespace kvol::volume::util
