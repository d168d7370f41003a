// What the node agent reports about its machine: processors, memory, disk, address,
// architecture. Read once at start-up from /proc, sysconf, statvfs, uname and getifaddrs.
#pragma once

#include <cstdint>
#include <string>

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

}  // namespace kvol::os
