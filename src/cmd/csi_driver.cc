// `kvol csi-driver`: the bundled CSI driver, loop.csi.kvol.io, as a process of its own.
#include "base/log.h"
#include "cmd/commands.h"
#include "cmd/controllers.h"
#include "csi/driver/driver.h"

namespace kvol::cmd {

int RunCsiDriver(const csi::driver::DriverOptions& opts) {
  BlockSignals();
  auto driver = csi::driver::Driver::Start(opts);
  if (!driver.ok()) {
    log::Error("csi-driver: " + driver.status().message());
    return 1;
  }
  WaitForSignal();
  log::Info("csi-driver: stopping");
  (*driver)->Shutdown();
  return 0;
}

}  // namespace kvol::cmd
