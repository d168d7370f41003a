// Driver: the gRPC server of the three services, and what they share.
#include "csi/driver/driver.h"

#include <unistd.h>

#include <filesystem>

#include "base/log.h"
#include "csi/client.h"
#include "csi/driver/services.h"

namespace kvol::csi::driver {

struct Driver::Services {
  DriverState state;
  IdentityService identity{state};
  ControllerService controller{state};
  NodeService node{state};
};

Status CheckCapability(const pb::VolumeCapability& c, const std::string& field) {
  using Mode = pb::VolumeCapability::AccessMode;
  if (!c.has_block() && !c.has_mount()) {
    return InvalidArgumentError(field + ": access_type (block or mount) is required");
  }
  switch (c.access_mode().mode()) {
    case Mode::SINGLE_NODE_WRITER:
    case Mode::SINGLE_NODE_READER_ONLY:
    case Mode::SINGLE_NODE_SINGLE_WRITER:
    case Mode::SINGLE_NODE_MULTI_WRITER:
    case Mode::MULTI_NODE_READER_ONLY:  // every node is this node
      break;
    case Mode::UNKNOWN:
      return InvalidArgumentError(field + ".access_mode is required");
    default:
      return InvalidArgumentError(field + ".access_mode " +
                                  Mode::Mode_Name(c.access_mode().mode()) +
                                  " is not supported: a loop device is written from one node");
  }
  if (c.has_mount()) {
    const std::string& fs = c.mount().fs_type();
    if (!fs.empty() && fs != "ext4" && fs != "ext3" && fs != "ext2" && fs != "xfs") {
      return InvalidArgumentError(field + ".mount.fs_type \"" + fs +
                                  "\" is not supported: ext4, ext3, ext2 or xfs");
    }
  }
  return OkStatus();
}

pb::Topology NodeTopology(const DriverOptions& o) {
  pb::Topology t;
  (*t.mutable_segments())[kTopologyKey] = o.node_id;
  return t;
}

Driver::~Driver() { Shutdown(); }

StatusOr<std::unique_ptr<Driver>> Driver::Start(const DriverOptions& options) {
  if (options.node_id.empty()) return InvalidArgumentError("node-id is required");
  if (options.data_dir.empty()) return InvalidArgumentError("data-dir is required");
  KVOL_ASSIGN_OR_RETURN(std::string target, UnixTarget(options.endpoint));
  const std::string socket = target.substr(7);  // after unix://
  KVOL_ASSIGN_OR_RETURN(auto data, DataDir::Open(options.data_dir, os::RealExec()));
  std::unique_ptr<Driver> d(new Driver());
  d->socket_path_ = socket;
  d->services_.reset(new Services{DriverState{options,
                                              os::RealExec(),
                                              os::NewRealMounter(),
                                              std::move(data),
                                              LoopDevices(os::RealExec()),
                                              {}}});
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(socket).parent_path(), ec);
  unlink(socket.c_str());  // a socket left by a driver that stopped
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + socket, grpc::InsecureServerCredentials());
  builder.RegisterService(&d->services_->identity);
  builder.RegisterService(&d->services_->controller);
  builder.RegisterService(&d->services_->node);
  // Threads that wait for calls stay, up to a few: gRPC's defaults (one to two) make and end a
  // thread for nearly every call when several callers (the provisioner's, the attacher's and the
  // volume manager's workers) call at once.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 2);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 8);
  d->server_ = builder.BuildAndStart();
  if (!d->server_) return UnavailableError("cannot serve CSI on " + socket);
  log::Info(std::string("csi driver ") + kDriverName + " serving on " + socket + " for node " +
            options.node_id + ", volumes in " + options.data_dir);
  return d;
}

void Driver::Wait() {
  if (server_) server_->Wait();
}

void Driver::Shutdown() {
  if (!server_) return;
  server_->Shutdown();
  server_->Wait();
  server_.reset();
  unlink(socket_path_.c_str());
}

}  // namespace kvol::csi::driver
