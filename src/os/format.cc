// DetectFilesystem with blkid, FormatAndMount with mkfs and the Mounter.
#include "os/format.h"

#include <chrono>

#include "base/strings.h"

namespace kvol::os {
namespace {

constexpr std::chrono::minutes kFormatTimeout{5};

std::string Trim(std::string_view s) { return std::string(TrimRight(s)); }

}  // namespace

StatusOr<std::string> DetectFilesystem(Exec& exec, const std::string& device) {
  KVOL_ASSIGN_OR_RETURN(
      auto r, exec.Run({"blkid", "-p", "-s", "TYPE", "-s", "PTTYPE", "-o", "export", device},
                       std::chrono::seconds(30)));
  if (r.exit_code == 2) return std::string();  // nothing found: a blank device
  if (r.exit_code != 0) {
    return InternalError("blkid " + device + " failed: " + os::DescribeExit(r.exit_code) + ": " +
                         Trim(r.output));
  }
  std::string type, pttype;
  size_t start = 0;
  while (start < r.output.size()) {
    size_t end = r.output.find('\n', start);
    if (end == std::string::npos) end = r.output.size();
    const std::string line = r.output.substr(start, end - start);
    if (line.rfind("TYPE=", 0) == 0) type = line.substr(5);
    if (line.rfind("PTTYPE=", 0) == 0) pttype = line.substr(7);
    start = end + 1;
  }
  if (!pttype.empty()) {
    return FailedPreconditionError("disk " + device + " appears to contain a partition table (" +
                                   pttype + "); it will not be formatted");
  }
  return type;
}

Status FormatAndMount(Exec& exec, Mounter& mounter, const std::string& device,
                      const std::string& target, std::string fs_type,
                      const std::vector<std::string>& options) {
  const bool chosen = !fs_type.empty();
  if (!chosen) fs_type = "ext4";
  KVOL_ASSIGN_OR_RETURN(std::string existing, DetectFilesystem(exec, device));
  if (existing.empty()) {
    std::vector<std::string> argv = {"mkfs." + fs_type};
    if (fs_type == "ext2" || fs_type == "ext3" || fs_type == "ext4") {
      argv.insert(argv.end(), {"-F", "-m0"});
    } else if (fs_type == "xfs") {
      argv.push_back("-f");
    }
    argv.push_back(device);
    KVOL_ASSIGN_OR_RETURN(auto r, exec.Run(argv, kFormatTimeout));
    if (r.exit_code != 0) {
      return InternalError("format of disk \"" + device + "\" failed: type:(\"" + fs_type +
                           "\") target:(\"" + target + "\") errcode:(" +
                           os::DescribeExit(r.exit_code) + ") output:(" + Trim(r.output) + ")");
    }
  } else if (chosen && existing != fs_type) {
    return FailedPreconditionError("failed to mount the volume as \"" + fs_type +
                                   "\", it already contains " + existing);
  } else {
    fs_type = existing;  // no type asked for: what the device has
  }
  return mounter.Mount(device, target, fs_type, options);
}

Status ResizeFilesystem(Exec& exec, const std::string& device,
                        const std::string& mount_path) {
  KVOL_ASSIGN_OR_RETURN(std::string fs_type, DetectFilesystem(exec, device));
  std::vector<std::string> argv;
  if (fs_type == "ext2" || fs_type == "ext3" || fs_type == "ext4") {
    argv = {"resize2fs", device};
  } else if (fs_type == "xfs") {
    argv = {"xfs_growfs", "-d", mount_path};
  } else {
    return InvalidArgumentError("resize of format \"" + fs_type + "\" is not supported on device \"" +
                                device + "\" mounted on \"" + mount_path + "\"");
  }
  KVOL_ASSIGN_OR_RETURN(auto r, exec.Run(argv, kFormatTimeout));
  if (r.exit_code != 0) {
    return InternalError("resize of device " + device + " failed: " +
                         os::DescribeExit(r.exit_code) + ". " + argv[0] + " output: " +
                         Trim(r.output));
  }
  return OkStatus();
}

}  // namespace kvol::os
