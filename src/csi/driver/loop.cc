// LoopDevices through losetup(8), and the kernel's list of loop devices in sysfs.
#include "csi/driver/loop.h"

#include <climits>
#include <cstdlib>
#include <filesystem>

#include "base/strings.h"
#include "os/files.h"

namespace kvol::csi::driver {
namespace {

constexpr std::chrono::seconds kLosetupTimeout{60};

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? std::string(buf) : path;
}

}  // namespace

StatusOr<std::map<std::string, std::string>> LoopDevices::List() const {
  std::map<std::string, std::string> out;
  std::error_code ec;
  std::filesystem::directory_iterator it(sys_block_, ec);
  if (ec) return InternalError("cannot list " + sys_block_ + ": " + ec.message());
  for (const auto& entry : it) {
    const std::string name = entry.path().filename();
    if (name.rfind("loop", 0) != 0) continue;
    std::string backing;
    if (!os::ReadFile(entry.path().string() + "/loop/backing_file", &backing).ok()) continue;
    out["/dev/" + name] = std::string(TrimRight(backing));
  }
  return out;
}

bool LoopDevices::Serves(const std::string& device, const std::string& file) const {
  std::string backing;
  const std::string name = device.substr(device.rfind('/') + 1);
  return os::ReadFile(sys_block_ + "/" + name + "/loop/backing_file", &backing).ok() &&
         TrimRight(backing) == file;
}

StatusOr<std::string> LoopDevices::Find(const std::string& file) const {
  const std::string want = RealPath(file);
  std::string hint;
  {
    std::lock_guard lock(mu_);
    if (auto it = hints_.find(want); it != hints_.end()) hint = it->second;
  }
  if (!hint.empty() && Serves(hint, want)) return hint;
  KVOL_ASSIGN_OR_RETURN(auto all, List());
  std::string found;
  for (const auto& [device, backing] : all) {
    if (backing == want) found = device;
  }
  std::lock_guard lock(mu_);
  if (found.empty()) {
    hints_.erase(want);
  } else {
    hints_[want] = found;
  }
  return found;
}

StatusOr<std::string> LoopDevices::Attach(const std::string& file, bool read_only) {
  KVOL_ASSIGN_OR_RETURN(std::string found, Find(file));
  if (!found.empty()) return found;
  // --nooverlap: should another attach of the same file race this one, both get one device.
  std::string out;
  std::vector<std::string> argv = {"losetup", "--nooverlap", "--find", "--show"};
  if (read_only) argv.push_back("--read-only");
  argv.push_back(file);
  KVOL_RETURN_IF_ERROR(Run("attach " + file, std::move(argv), &out));
  // The device is the line losetup prints on stdout; warnings may come with it.
  for (size_t start = 0; start < out.size();) {
    size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    std::string line(TrimRight(std::string_view(out).substr(start, end - start)));
    if (line.rfind("/dev/loop", 0) == 0) {
      std::lock_guard lock(mu_);
      hints_[RealPath(file)] = line;
      return line;
    }
    start = end + 1;
  }
  return InternalError("losetup attached " + file + " but printed no device: " + out);
}

Status LoopDevices::Detach(const std::string& device) {
  return Run("detach " + device, {"losetup", "--detach", device});
}

Status LoopDevices::Refresh(const std::string& device) {
  return Run("resize " + device, {"losetup", "--set-capacity", device});
}

StatusOr<bool> LoopDevices::ReadOnly(const std::string& device) const {
  const std::string name = device.substr(device.rfind('/') + 1);
  std::string ro;
  KVOL_RETURN_IF_ERROR(os::ReadFile(sys_block_ + "/" + name + "/ro", &ro));
  return TrimRight(ro) == "1";
}

StatusOr<int64_t> LoopDevices::Size(const std::string& device) const {
  const std::string name = device.substr(device.rfind('/') + 1);
  std::string sectors;
  KVOL_RETURN_IF_ERROR(os::ReadFile(sys_block_ + "/" + name + "/size", &sectors));
  int64_t n = 0;
  if (!ParseInt64(TrimRight(sectors), &n)) {
    return InternalError("cannot read the size of " + device + ": " + sectors);
  }
  return n * 512;  // sysfs counts 512-byte sectors whatever the device's block size
}

Status LoopDevices::Run(const std::string& what, std::vector<std::string> argv, std::string* out) {
  KVOL_ASSIGN_OR_RETURN(auto r, exec_.Run(argv, kLosetupTimeout));
  if (r.exit_code != 0) {
    return InternalError("cannot " + what + ": losetup " + os::DescribeExit(r.exit_code) + ": " +
                         std::string(TrimRight(r.output)));
  }
  if (out) *out = std::move(r.output);
  return OkStatus();
}

}  // namespace kvol::csi::driver
