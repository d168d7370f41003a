// The bundled CSI driver, loop.csi.kvol.io: formatted volumes on one machine, each a sparse
// file of its size on a loop device, so a volume never holds more than it was given. It serves
// CSI's Identity, Controller and Node services on a unix socket, for kvol's node agent or any
// other container orchestrator. `kvol csi-driver` runs it on its own; `kvol server` runs one
// for its node.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"

namespace grpc {
class Server;
}

namespace kvol::csi::driver {

inline constexpr char kDriverName[] = "loop.csi.kvol.io";
inline constexpr char kDriverVersion[] = "0.1.0";
// The topology key of the node a volume lives on.
inline constexpr char kTopologyKey[] = "topology.csi.kvol.io/node";

struct DriverOptions {
  std::string endpoint;  // unix:///path/csi.sock (or a bare path)
  std::string node_id;   // the node this driver serves, as NodeGetInfo answers it
  std::string data_dir;  // where the volumes' files live
  int64_t max_volumes_per_node = 128;
};

class Driver {
 public:
  ~Driver();
  // Opens the data directory and starts serving on the endpoint (replacing a stale socket).
  static StatusOr<std::unique_ptr<Driver>> Start(const DriverOptions& options);
  // The socket's path.
  const std::string& socket_path() const { return socket_path_; }
  // Blocks until Shutdown.
  void Wait();
  // Stops serving; calls in flight finish first.
  void Shutdown();

 private:
  struct Services;
  Driver() = default;
  std::string socket_path_;
  std::unique_ptr<Services> services_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace kvol::csi::driver
