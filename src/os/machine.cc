// Reading the machine.
#include "os/machine.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace kvol::os {
namespace {

std::string GoArch(const std::string& machine) {
  if (machine == "x86_64") return "amd64";
  if (machine == "aarch64") return "arm64";
  if (machine == "i386" || machine == "i686") return "386";
  if (machine.rfind("arm", 0) == 0) return "arm";
  return machine;
}

// The first line of a small file, "" when it cannot be read.
std::string FirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string OsImage() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) != 0) continue;
    std::string v = line.substr(12);
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'')) v = v.substr(1, v.size() - 2);
    return v;
  }
  return "Linux";
}

}  // namespace

MachineInfo ReadMachineInfo(const std::string& disk_dir) {
  MachineInfo m;
  if (long n = sysconf(_SC_NPROCESSORS_ONLN); n > 0) m.cpus = n;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemTotal:") {
      m.memory_bytes = kib * 1024;
      break;
    }
  }
  struct statvfs vfs;
  if (statvfs(disk_dir.c_str(), &vfs) == 0) {
    m.disk_bytes = static_cast<int64_t>(vfs.f_blocks) * static_cast<int64_t>(vfs.f_frsize);
  }
  struct utsname u;
  if (uname(&u) == 0) {
    m.arch = GoArch(u.machine);
    m.kernel = u.release;
  }
  m.os_image = OsImage();
  m.machine_id = FirstLine("/etc/machine-id");
  m.boot_id = FirstLine("/proc/sys/kernel/random/boot_id");
  m.address = "127.0.0.1";
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) == 0) {
    for (ifaddrs* i = ifs; i; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
      if ((i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP)) continue;
      char buf[INET_ADDRSTRLEN];
      auto* sin = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
      if (inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf)) {
        m.address = buf;
        break;
      }
    }
    freeifaddrs(ifs);
  }
  return m;
}

StatusOr<FilesystemStats> StatFilesystem(const std::string& path) {
  struct statvfs vfs {};
  if (statvfs(path.c_str(), &vfs) != 0) {
    return UnavailableError("cannot statvfs " + path + ": " + std::strerror(errno));
  }
  const auto frsize = static_cast<int64_t>(vfs.f_frsize);
  FilesystemStats st;
  st.capacity_bytes = static_cast<int64_t>(vfs.f_blocks) * frsize;
  st.available_bytes = static_cast<int64_t>(vfs.f_bavail) * frsize;
  st.free_bytes = static_cast<int64_t>(vfs.f_bfree) * frsize;
  st.inodes = static_cast<int64_t>(vfs.f_files);
  st.inodes_free = static_cast<int64_t>(vfs.f_ffree);
  return st;
}

StatusOr<MemoryStats> ReadMemoryStats() {
  std::ifstream meminfo("/proc/meminfo");
  if (!meminfo) return UnavailableError("cannot read /proc/meminfo");
  MemoryStats st;
  bool total = false;
  bool available = false;
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit && !(total && available)) {
    if (key == "MemTotal:") {
      st.total_bytes = kib * 1024;
      total = true;
    } else if (key == "MemAvailable:") {
      st.available_bytes = kib * 1024;
      available = true;
    }
  }
  if (!total || !available)
    return UnavailableError("/proc/meminfo has no MemTotal or MemAvailable");
  return st;
}

StatusOr<ProcessStats> ReadProcessStats() {
  auto number = [](const char* path) -> int64_t {
    std::ifstream in(path);
    int64_t n = 0;
    return in >> n ? n : 0;
  };
  ProcessStats st;
  st.max_pids = number("/proc/sys/kernel/pid_max");
  if (int64_t threads = number("/proc/sys/kernel/threads-max"); threads > 0) {
    st.max_pids = st.max_pids > 0 ? std::min(st.max_pids, threads) : threads;
  }
  if (st.max_pids <= 0) return UnavailableError("cannot read kernel.pid_max");
  struct sysinfo info {};
  if (sysinfo(&info) != 0) return UnavailableError(std::string("sysinfo: ") + std::strerror(errno));
  st.in_use = info.procs;
  return st;
}

StatusOr<DirectoryUsage> MeasureDirectory(const std::string& path) {
  namespace fs = std::filesystem;
  struct stat root {};
  if (lstat(path.c_str(), &root) != 0) {
    return UnavailableError("cannot stat " + path + ": " + std::strerror(errno));
  }
  DirectoryUsage usage{.bytes = static_cast<int64_t>(root.st_blocks) * 512, .inodes = 1};
  std::set<std::pair<dev_t, ino_t>> linked;  // files of several links, counted once
  std::error_code ec;
  fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec);
  if (ec) return UnavailableError("cannot read " + path + ": " + ec.message());
  for (fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
    if (ec) return UnavailableError("cannot read below " + path + ": " + ec.message());
    struct stat st {};
    if (lstat(it->path().c_str(), &st) != 0) continue;  // gone meanwhile
    if (st.st_dev != root.st_dev) {                     // a mount point below: another filesystem's
      it.disable_recursion_pending();
      continue;
    }
    if (!S_ISDIR(st.st_mode) && st.st_nlink > 1 && !linked.insert({st.st_dev, st.st_ino}).second) {
      continue;
    }
    usage.bytes += static_cast<int64_t>(st.st_blocks) * 512;
    ++usage.inodes;
  }
  return usage;
}

}  // namespace kvol::os
