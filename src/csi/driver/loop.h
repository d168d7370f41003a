// Loop devices: a file seen as a block device. The bundled CSI driver attaches a volume's file
// when the volume is published to the node, and detaches it when unpublished. The kernel's own
// record (/sys/block/loopN/loop/backing_file) says which device serves which file, so a
// restarted driver finds the devices it attached. Which device served a file last is
// remembered only as a hint, checked against that record before it is believed: with hundreds
// of devices, reading every one's record for each look was most of a publish's time.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "base/status.h"
#include "os/exec.h"

namespace kvol::csi::driver {

class LoopDevices {
 public:
  // `sys_block` is where the kernel lists block devices (/sys/block).
  explicit LoopDevices(os::Exec& exec, std::string sys_block = "/sys/block")
      : exec_(exec), sys_block_(std::move(sys_block)) {}

  // Every attached loop device's backing file, by device.
  StatusOr<std::map<std::string, std::string>> List() const;
  // The loop device ("/dev/loop3") backed by `file`, "" when none is.
  StatusOr<std::string> Find(const std::string& file) const;
  // Attaches `file` to a free loop device, read-only if asked, or answers the device already
  // backed by it.
  StatusOr<std::string> Attach(const std::string& file, bool read_only);
  // Whether `device` was attached read-only.
  StatusOr<bool> ReadOnly(const std::string& device) const;
  // Detaches `device`; the kernel frees it once no one holds it open.
  Status Detach(const std::string& device);
  // Makes `device` take the current size of its file, after the file grew.
  Status Refresh(const std::string& device);
  // The size of `device` in bytes.
  StatusOr<int64_t> Size(const std::string& device) const;

 private:
  Status Run(const std::string& what, std::vector<std::string> argv, std::string* out = nullptr);

  // Whether `device` is backed by `file` now (`file` as realpath gives it).
  bool Serves(const std::string& device, const std::string& file) const;

  os::Exec& exec_;
  std::string sys_block_;
  mutable std::mutex mu_;
  mutable std::map<std::string, std::string> hints_;  // guarded by mu_: file -> device
};

}  // namespace kvol::csi::driver
