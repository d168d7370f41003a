// Loop devices: a file seen as a block device. The bundled CSI driver attaches a volume's file
// when the volume is published to the node, and detaches it when unpublished. The kernel's own
// record (/sys/block/loopN/loop/backing_file) says which device serves which file, so nothing
// is remembered here and a restarted driver finds the devices it attached.
#pragma once

#include <cstdint>
#include <map>
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

  os::Exec& exec_;
  std::string sys_block_;
};

}  // namespace kvol::csi::driver
