// Timing the node's volume operations.
#include "node/volumemanager/operation_metrics.h"

#include "metrics/storage_operations.h"

namespace kvol::node::volumemanager {

std::function<Status()> Timed(std::string plugin, std::string_view operation,
                              std::function<Status()> op) {
  return [plugin = std::move(plugin), operation = std::string(operation),
          op = std::move(op)]() -> Status {
    metrics::OperationTimer timer(plugin, operation);
    Status s = op();
    timer.Done(s.ok());
    return s;
  };
}

}  // namespace kvol::node::volumemanager
