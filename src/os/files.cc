#include "os/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kvol::os {

Status ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return OkStatus();
}

Status WriteFileAtomically(const std::string& path, std::string_view data, mode_t mode) {
  const std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return UnavailableError("cannot write " + tmp + ": " + strerror(errno));
  fchmod(fd, mode);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n <= 0) {
      const int err = errno;
      close(fd);
      return UnavailableError("cannot write " + tmp + ": " + strerror(err));
    }
    off += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) {
    const int err = errno;
    close(fd);
    return UnavailableError("cannot sync " + tmp + ": " + strerror(err));
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return UnavailableError("cannot rename " + tmp + ": " + strerror(errno));
  }
  return OkStatus();
}

}  // namespace kvol::os
