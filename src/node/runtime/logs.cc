// LogReader: pread from an offset, inotify while following.
#include "node/runtime/logs.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace kvol::node::runtime {

int64_t TailOffset(int fd, int64_t lines) {
  struct stat st;
  if (lines < 0 || fstat(fd, &st) != 0) return 0;
  int64_t end = st.st_size;
  if (lines == 0) return end;
  // A final newline ends the last line; it does not start another.
  std::vector<char> buf(64 * 1024);
  int64_t pos = end;
  int64_t seen = 0;
  bool skip_final = true;
  while (pos > 0) {
    const int64_t n = std::min<int64_t>(pos, static_cast<int64_t>(buf.size()));
    pos -= n;
    if (pread(fd, buf.data(), n, pos) != n) return 0;
    for (int64_t i = n - 1; i >= 0; --i) {
      if (buf[i] != '\n') {
        skip_final = false;
        continue;
      }
      if (skip_final && pos + i == end - 1) continue;
      if (++seen == lines) return pos + i + 1;
    }
  }
  return 0;
}

StatusOr<std::unique_ptr<LogReader>> LogReader::Open(const std::string& path,
                                                     std::optional<int64_t> tail_lines,
                                                     std::optional<int64_t> limit_bytes,
                                                     std::function<bool()> still_written) {
  std::unique_ptr<LogReader> r(new LogReader());
  r->fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (r->fd_ < 0) {
    if (errno == ENOENT) return NotFoundError("no log yet");
    return InternalError("open " + path + ": " + std::strerror(errno));
  }
  if (tail_lines) lseek(r->fd_, TailOffset(r->fd_, *tail_lines), SEEK_SET);
  r->remaining_ = limit_bytes;
  r->still_written_ = std::move(still_written);
  if (r->still_written_) {
    r->inotify_ = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (r->inotify_ >= 0) inotify_add_watch(r->inotify_, path.c_str(), IN_MODIFY | IN_CLOSE_WRITE);
  }
  return r;
}

LogReader::~LogReader() {
  if (fd_ >= 0) close(fd_);
  if (inotify_ >= 0) close(inotify_);
}

bool LogReader::Next(std::string* chunk) {
  chunk->clear();
  while (true) {
    if (remaining_ && *remaining_ <= 0) return false;
    char buf[32 * 1024];
    size_t want = sizeof buf;
    if (remaining_) want = std::min<size_t>(want, static_cast<size_t>(*remaining_));
    const ssize_t n = read(fd_, buf, want);
    if (n > 0) {
      chunk->assign(buf, static_cast<size_t>(n));
      if (remaining_) *remaining_ -= n;
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    // At the end of what is there.
    if (!still_written_ || last_read_) return false;
    if (!still_written_()) {
      last_read_ = true;  // what it wrote before it stopped is read next, then the end
      continue;
    }
    pollfd p{inotify_, POLLIN, 0};
    if (inotify_ >= 0 && poll(&p, 1, 500) > 0) {
      char events[4096];
      while (read(inotify_, events, sizeof events) > 0) {
      }
    } else if (inotify_ < 0) {
      usleep(200'000);
    }
  }
}

}  // namespace kvol::node::runtime
