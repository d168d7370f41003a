// What the node agent reports about its machine: processors, memory, disk, address,
// architecture. Read once at start-up from /proc, sysconf, statvfs, uname and getifaddrs.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace kvol::os {

struct MachineInfo {
  int64_t cpus = 1;
  int64_t memory_bytes = 0;
  int64_t disk_bytes = 0;  // the filesystem holding the directory asked about
  std::string address;     // first non-loopback IPv4 address, else 127.0.0.1
  std::string arch;        // Go's names: amd64, arm64, ...
  std::string os = "linux";
  std::string kernel;      // uname -r
  std::string os_image;    // PRETTY_NAME of /etc/os-release ("Debian GNU/Linux 12 (bookworm)")
  std::string machine_id;  // /etc/machine-id
  std::string boot_id;     // /proc/sys/kernel/random/boot_id
};

// Reads the machine; `disk_dir` names the filesystem whose size is reported. Never fails:
// what cannot be read keeps its default.
MachineInfo ReadMachineInfo(const std::string& disk_dir);

// Readings taken while running, for the node's pressure conditions.

// A filesystem's size and what is left on it, from statvfs: `available_bytes` is what an
// unprivileged writer may still use (f_bavail), as cAdvisor reports it to kubelet.
struct FilesystemStats {
  int64_t capacity_bytes = 0;
  int64_t available_bytes = 0;
  int64_t free_bytes = 0;  // f_bfree: available, and what only root may still use
  int64_t inodes = 0;
  int64_t inodes_free = 0;
};
StatusOr<FilesystemStats> StatFilesystem(const std::string& path);

// MemTotal and MemAvailable of /proc/meminfo.
struct MemoryStats {
  int64_t total_bytes = 0;
  int64_t available_bytes = 0;
};
StatusOr<MemoryStats> ReadMemoryStats();

// Process IDs: the most the kernel hands out (the smaller of kernel.pid_max and
// kernel.threads-max) and how many are in use (sysinfo's procs), as kubelet reads them.
struct ProcessStats {
  int64_t max_pids = 0;
  int64_t in_use = 0;
};
StatusOr<ProcessStats> ReadProcessStats();

// What a directory holds, as du counts it: the bytes of its files' blocks and the inodes they
// use (a hard-linked file once), not following symlinks nor crossing into other filesystems.
struct DirectoryUsage {
  int64_t bytes = 0;
  int64_t inodes = 0;
};
StatusOr<DirectoryUsage> MeasureDirectory(const std::string& path);

}  // namespace kvol::os
